# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The two components against the NTK factor (claim C8a)
#
# For each model scaled at inference, and for the parameter-free RoPE simulation, the first-key
# (residual-stream) component |R| and the mask component M at early queries, and the
# residual-stream share R²/(R² + M²), by layer, against the NTK factor s (the RoPE base raised by
# s^(d/(d−2)); s = 1 is the trained base).  Read from `results/claims/position.json` (C8a).

# %%
from behind_rope.atomic import read_json
from behind_rope.plotting import plt, save, standalone, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_ntk_components")

# %%
c8a = read_json(snakemake.input[0])["C8a"]["measured"]
rows = {model: result["layers"] for model, result in c8a["models"].items()}
rows["simulation"] = {factor: run["layers"] for factor, run in c8a["simulation"].items()}
QUANTITIES = [("first_key_early", "|R|, first key", abs), ("mask_early", "M, mask", float),
              ("residual_stream_share_early", "residual-stream share", float)]
fig, axes = plt.subplots(len(rows), len(QUANTITIES), figsize=(10, 2.6 * len(rows)), squeeze=False)
for r, (name, by_factor) in enumerate(rows.items()):
    factors = sorted(by_factor, key=float)
    layers = sorted({layer for factor in factors for layer in by_factor[factor]}, key=int)
    for c, (key, label, transform) in enumerate(QUANTITIES):
        ax = axes[r, c]
        for layer in layers:
            ax.plot([float(f) for f in factors], [value(by_factor[f][layer][key], transform) for f in factors], "o-", lw=1,
                    markersize=3, label=f"layer {layer}")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{name}: {label}", fontsize=8)
        ax.set_xlabel("NTK factor s", fontsize=8)
        ax.tick_params(labelsize=7)
axes[0, 0].legend(fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
