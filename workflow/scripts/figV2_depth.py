# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The revision: recency probability against depth, for each width d
#
# One panel per stack (no normalisation at α = 0; LayerNorm at α = 0 and at α = 0.5), one line per d, 99 %
# intervals.  The inputs are `results/revision/<setting>.json`.

# %%
from behind_rope.figures.plotting import save, standalone
from behind_rope.figures.revision import rp_by_depth

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figV2_depth")

# %%
save(rp_by_depth(snakemake.input, snakemake.params.panels), snakemake.output, snakemake.log)
