# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 1: how the causal mask creates position information (3 positions, α = 0)
#
# Layer 1 sees unit inputs with equal pairwise inner products: its scores carry no position.
# The causal mask gives each query a different number of keys, so the layer-1 outputs differ
# in norm, and the layer-2 scores favour nearby keys.  Every number is read from
# `results/theory/derivation.json`, which the sympy derivation wrote.
#
# Run with `snakemake fig1_mechanism`.  As a notebook (`jupytext --to notebook`), the cell below falls
# back to the default paths.

# %%
import numpy as np

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import CMAP, heatmap, plt, save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("fig1_mechanism")

toy = read_json(snakemake.input[0])["figure1"]

# %%
panels = [
    ("(a) Layer-1 scores $YY^T$", np.array(toy["layer1_scores"], dtype=float)),
    ("(b) Layer-1 attention (causal softmax)", np.array(toy["layer1_attention"], dtype=float)),
    ("(c) Layer-2 scores $g(i)/(h(i)h(j))$", np.array(toy["layer2_scores"], dtype=float)),
]
fig, axes = plt.subplots(1, 3, figsize=(10, 3.3))
for ax, (title, matrix) in zip(axes, panels, strict=True):
    shown = np.where(np.tril(np.ones_like(matrix)) > 0, matrix, np.nan)
    heatmap(ax, shown, 0, 1, title, CMAP, label="value (printed in each cell)")
    ax.set_xticks(range(1, toy["n"] + 1))
    ax.set_yticks(range(1, toy["n"] + 1))
    for i in range(toy["n"]):
        for j in range(i + 1):
            ax.text(j + 1, i + 1, f"{matrix[i, j]:.3f}", ha="center", va="center",
                    color="white" if matrix[i, j] < 0.6 else "black", fontsize=9)
fig.suptitle(f"Parameter-free causal layer, {toy['n']} positions, α = {toy['alpha']}", fontsize=10)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
