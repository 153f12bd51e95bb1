# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix: mean pre-softmax scores of every layer of a trained twin
#
# Top row: the mean score (over held-out sequences and heads).  Bottom row: diagonal-normalised
# (each diagonal i - j minus its own mean), so what is left is the non-relative part.  Each panel
# has its own colour limits, at the 1% and 99% quantiles of its entries below the diagonal.  One script draws both twins: `snakemake figS_nope_all_layers`
# and `snakemake figS_rope_twin_all_layers`.

# %%
from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import NORMALISED, below_diagonal, layer_grid, quantile_limits, save, standalone
from behind_rope.maths.metrics import diagonal_normalise

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_nope_all_layers")

# %%
scores = read_npz(snakemake.input[0])["mean_scores"]
normalised = diagonal_normalise(scores)
rows = [
    (f"{snakemake.params.label}, raw", scores, [quantile_limits([below_diagonal(s)]) for s in scores]),
    (f"{snakemake.params.label}, diagonal-normalised", normalised, [quantile_limits([below_diagonal(s)]) for s in normalised],
     NORMALISED),
]
save(layer_grid(rows), snakemake.output, snakemake.log)
