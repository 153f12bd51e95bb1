# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix: LayerNorm (no affine parameters) in place of L2 normalisation
#
# LayerNorm outputs have norm √E, so scores are scaled by 1/√E (colour range 0..√E, 8 at E = 64)
# or by 1/E (colour range 0..1).  Run with `snakemake figS_layernorm`.

# %%
import math

from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import layer_grid, metadata, save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_layernorm")

# %%
rows = []
for path in snakemake.input:
    data = read_npz(path)
    variant, size = metadata(data)["variant"], metadata(data)["size"]
    scale = {"sqrt_d": "1/√d", "d": "1/d", "one": "1"}[variant["score_scale"]]
    vmax = math.sqrt(size["dim"]) if variant["score_scale"] == "sqrt_d" else 1.0
    rows.append((f"LayerNorm, scale {scale}, α = {variant['alpha']}", data["mean_scores"], (0.0, vmax)))
save(layer_grid(rows), snakemake.output, snakemake.log)
