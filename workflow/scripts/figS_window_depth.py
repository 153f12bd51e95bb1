# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The two components by depth, sliding-window and global layers (claim C8b)
#
# Left: the residual-stream share at early queries of every layer of the model with sliding-window
# layers (on text), its sliding-window and global layers apart, with their rank correlation with
# depth.  Middle: its first-key component |R| and mask component M.  Right: the same share by layer
# in the parameter-free RoPE simulation, with a sliding window and with the full causal mask.  Read
# from `results/claims/position.json` (C8b).

# %%
from behind_rope.atomic import read_json
from behind_rope.plotting import plt, save, standalone, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_window_depth")

# %%
c8b = read_json(snakemake.input[0])["C8b"]["measured"]
fig, axes = plt.subplots(1, 3, figsize=(12, 3.3))
for kind, rows in c8b["by_layer_type"].items():
    label = f"{kind} (ρ = {value(rows['depth_correlation']):.2f})"
    axes[0].plot(rows["layers"], [value(v) for v in rows["residual_stream_share_early"]], "o-", lw=1, markersize=3,
                 label=label)
    axes[1].plot(rows["layers"], [value(v, abs) for v in rows["first_key_early"]], "o-", lw=1, markersize=3,
                 label=f"|R|, {kind}")
    axes[1].plot(rows["layers"], [value(v) for v in rows["mask_early"]], "s--", lw=1, markersize=3, label=f"M, {kind}")
for name, shares in c8b["simulation_by_layer"].items():
    axes[2].plot(range(1, len(shares) + 1), [value(v) for v in shares], "o-", lw=1, markersize=3, label=name)
titles = [f"{c8b['model']}: residual-stream share", f"{c8b['model']}: components", "simulation: residual-stream share"]
for ax, title in zip(axes, titles, strict=True):
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("layer", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
