# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The revision's α sweeps: recency probability against the inputs' anisotropy, with and without the residual
#
# LayerNorm, d = 16, one line per layer, 99 % intervals.  The inputs are `results/revision/<setting>.json`.

# %%
from behind_rope.figures.plotting import save, standalone
from behind_rope.figures.revision import alpha_sweeps

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figV2_alpha")

# %%
save(alpha_sweeps(snakemake.input), snakemake.output, snakemake.log)
