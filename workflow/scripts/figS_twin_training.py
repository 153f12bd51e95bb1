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

from behind_rope.plotting import save

try:
    snakemake  # noqa: B018  (injected by Snakemake's script: directive)
except NameError:
    from types import SimpleNamespace

    snakemake = SimpleNamespace(
        input=SimpleNamespace(losses=[f"results/training/{t}/loss.csv" for t in ("nope", "rope")],
                              metrics=[f"results/training/{t}/metrics.json" for t in ("nope", "rope")]),
        params=SimpleNamespace(labels=["NoPE", "RoPE"]),
        output=["figures/figS_twin_training.pdf", "figures/figS_twin_training.png"], log=[])

# %%
fig, ax = plt.subplots(figsize=(5.5, 3.6))
for label, loss_path, metrics_path in zip(snakemake.params.labels, snakemake.input.losses, snakemake.input.metrics, strict=True):
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
