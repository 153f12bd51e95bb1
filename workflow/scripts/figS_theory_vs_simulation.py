# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix (new): closed-form layer-2 scores against the simulation
#
# Lines: the closed form g(i)/(h(i)h(j)) of `behind_rope.theory.derivation`.  Dots: the simulated mean
# layer-2 scores of the same layer.  One panel per α, a few query positions per panel.
# Run with `snakemake figS_theory_vs_simulation`.

# %%

import numpy as np

from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import metadata, plt, save, standalone
from behind_rope.theory.derivation import layer2_score

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_theory_vs_simulation")

# %%
fig, axes = plt.subplots(1, len(snakemake.input), figsize=(3.6 * len(snakemake.input), 3.2), squeeze=False)
for ax, path in zip(axes[0], snakemake.input, strict=True):
    data = read_npz(path)
    alpha = metadata(data)["variant"]["alpha"]
    layer2 = data["mean_scores"][1]
    seq_len = layer2.shape[-1]
    queries = sorted({max(2, round(seq_len * f)) for f in (0.1, 0.25, 0.5, 1.0)})
    for colour, query in zip(plt.cm.viridis(np.linspace(0, 0.85, len(queries))), queries, strict=True):
        keys = np.arange(1, query)
        ax.plot(keys, [layer2_score(query, key, alpha) for key in keys], color=colour, label=f"query {query}")
        ax.plot(keys, layer2[query - 1, : query - 1], "o", color=colour, markersize=2.5)
    ax.set_title(f"Layer 2, α = {alpha}  (line: theory, dots: simulation)", fontsize=8)
    ax.set_xlabel("Key position", fontsize=8)
    ax.set_ylabel("Layer-2 pre-softmax score", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
