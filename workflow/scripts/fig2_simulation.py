# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 2: mean pre-softmax scores of a stacked parameter-free causal layer
#
# Rows are α (the mean inner product of the inputs), columns are layers.  Colour range [0, 1].
# `snakemake fig2_simulation` draws it; `snakemake figS_alpha_sweep` draws larger α with the same script.
# The inputs are `results/scores/simulation/<variant>.npz`.

# %%
from behind_rope.figures.plotting import alpha_rows, layer_grid, save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("fig2_simulation")

# %%
save(layer_grid(alpha_rows(snakemake.input)), snakemake.output, snakemake.log)
