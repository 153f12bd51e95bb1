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
# Training loss per step for the NoPE and RoPE twins; the dots are the held-out losses, the
# dashed line is the held-out loss of a unigram model.  Run with `snakemake figS_twin_training`.

# %%
import csv
import json

import matplotlib.pyplot as plt

from behind_rope.plotting import save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_twin_training")

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.6))
# The inputs come in pairs, one per twin: loss.csv, then metrics.json.
pairs = zip(snakemake.input[::2], snakemake.input[1::2], strict=True)
for label, (loss_path, metrics_path) in zip(snakemake.params.labels, pairs, strict=True):
    with open(loss_path) as handle:
        rows = list(csv.DictReader(handle))
    with open(metrics_path) as handle:
        metrics = json.load(handle)
    line, = ax.plot([int(r["step"]) for r in rows], [float(r["train_loss"]) for r in rows], lw=1, label=f"{label} (train)")
    ax.plot([metrics["steps"]], [metrics["validation_loss"]], "o", color=line.get_color(),
            label=f"{label} held-out: {metrics['validation_loss']:.2f}")
ax.axhline(metrics["unigram_loss"], ls="--", color="grey", label=f"unigram held-out: {metrics['unigram_loss']:.2f}")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy (nats)")
ax.legend(fontsize=7)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
