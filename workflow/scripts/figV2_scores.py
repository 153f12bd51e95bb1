# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The revision's Figure 1: mean pre-softmax scores of version 2's stack over 4 layers
#
# One row per setting: no normalisation at α = 0, LayerNorm at α = 0, LayerNorm at α = 0.5, and LayerNorm with the
# residual at α = 0.5 (d = 16).  The inputs are `results/revision/<setting>.json`.

# %%
from behind_rope.figures.plotting import save, standalone
from behind_rope.figures.revision import heatmaps

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figV2_scores")

# %%
save(heatmaps(snakemake.input), snakemake.output, snakemake.log)
