# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix: training curves of the twins against the unigram baseline
#
# Training loss per step for every seed of the NoPE twin and for the RoPE twin (faint); the small
# outlined dots, joined, are the held-out losses the training-length rule measured, the large dot the
# final held-out loss, the dashed line the held-out loss of a unigram model.
# Run with `snakemake figS_twin_training`.

# %%
import csv
import json
from pathlib import Path

import matplotlib.pyplot as plt

from behind_rope.figures.plotting import save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_twin_training")

# %%
# Each twin's folder holds its loss.csv and its metrics.json; the NoPE seeds share a colour.
folders = list(dict.fromkeys(Path(path).parent for path in snakemake.input))
fig, ax = plt.subplots(figsize=(5.5, 3.6))
for folder in folders:
    with open(folder / "loss.csv") as handle:
        rows = list(csv.DictReader(handle))
    metrics = json.loads((folder / "metrics.json").read_text())
    nope = metrics["positional"] == "nope"
    colour, label = ("tab:blue", "NoPE seeds") if nope else ("tab:orange", "RoPE")
    first = folder == folders[0] or not nope
    ax.plot([int(r["step"]) for r in rows], [float(r["train_loss"]) for r in rows], lw=0.6, alpha=0.4, color=colour,
            label=f"{label} (train)" if first else None)
    # Above the noisy training curves, outlined, so the rule's checks stay visible where the curves cross them.
    held_out = [(int(r["step"]), float(r["valid_loss"])) for r in rows if r.get("valid_loss")]
    ax.plot([s for s, _ in held_out], [v for _, v in held_out], "o-", ms=3.5, lw=1.0, color=colour, mec="white",
            mew=0.5, zorder=3, label=f"{label} held-out (the stop rule's checks)" if first else None)
    ax.plot([metrics["steps"]], [metrics["validation_loss"]], "o", ms=7, color=colour, mec="black", mew=0.8, zorder=4,
            label=f"{label} held-out (final)" if first else None)
ax.axhline(metrics["unigram_loss"], ls="--", color="grey", label=f"unigram held-out: {metrics['unigram_loss']:.2f}")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy (nats)")
ax.legend(fontsize=7)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
