# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 4: RoPE with and without the causal mask
#
# For each setting, a row of raw mean scores (colour range 0..1) and a row of
# diagonal-normalised scores (each diagonal i − j minus its own mean: what RoPE's relative
# pattern cannot explain).  All normalised rows share one symmetric colour range, so the
# no-mask control can be compared with the causal runs by eye.
# Run with `snakemake fig4_rope_simulation`.

# %%

from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import NORMALISED, layer_grid, metadata, quantile_limits, save, standalone
from behind_rope.maths.metrics import diagonal_normalise

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("fig4_rope_simulation")

# %%
settings = []
for path in snakemake.input:
    data = read_npz(path)
    variant = metadata(data)["variant"]
    label = f"{'causal' if variant['causal'] else 'no mask'}, α = {variant['alpha']}"
    settings.append((label, data["mean_scores"], diagonal_normalise(data["mean_scores"])))

low, high = quantile_limits([normalised for _, _, normalised in settings])
limit = max(abs(low), abs(high))
rows = []
for label, raw, normalised in settings:
    rows.append((f"{label}, raw", raw, (0.0, 1.0)))
    rows.append((f"{label}, normalised", normalised, (-limit, limit), NORMALISED))
save(layer_grid(rows), snakemake.output, snakemake.log)
