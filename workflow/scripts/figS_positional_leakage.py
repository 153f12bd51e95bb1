# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Positional leakage per head (recorded beside claim C6)
#
# Ruscio et al.'s positional leakage, delta R^2 = R^2(scores ~ [i - j, i, j, 1]) - R^2(scores ~ [i - j, 1]) over
# the causal pairs of each head's mean scores: one row of panels per model, with the mask and without it, as
# their code measures it and with each head's query offsets a(i) removed.  Read from
# `results/claims/position.json` (C6.measured.positional_leakage); it decides nothing.

# %%
import numpy as np
from matplotlib.ticker import MaxNLocator

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_positional_leakage")

# %%
records = read_json(snakemake.input[0])["C6"]["measured"]["positional_leakage"]
panels = [("mask", "heads", "mask"), ("mask", "heads_without_offset", "mask, a(i) removed"),
          ("no_mask", "heads", "no mask"), ("no_mask", "heads_without_offset", "no mask, a(i) removed")]
fig, axes = plt.subplots(len(records), len(panels), figsize=(2.6 * len(panels), 2.5 * len(records)), squeeze=False,
                         layout="constrained")
for row, (model, record) in zip(axes, records.items(), strict=True):
    for ax, (role, key, label) in zip(row, panels, strict=True):
        layers = sorted(record[role], key=int)
        leakage = np.array([[value(v) for v in record[role][layer][key]] for layer in layers])
        first, n_heads = int(layers[0]), leakage.shape[1]
        image = ax.imshow(leakage, cmap="magma", vmin=0, vmax=1, aspect="auto", interpolation="nearest",
                          extent=(-0.5, n_heads - 0.5, first + len(layers) - 0.5, first - 0.5))
        means = ", ".join(f"{value(record[role][layer]['mean' + key[5:]]):.2f}" for layer in layers)
        style_panel(ax, f"{model}: {label}\nmeans {means}", "head", "layer", legend=False)
        ax.title.set_fontsize(7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        layer_axis(ax, layers, "y")
bar = fig.colorbar(image, ax=axes, fraction=0.02, pad=0.01)
bar.ax.tick_params(labelsize=7)
bar.set_label(r"$\Delta R^2$", fontsize=7)
save(fig, snakemake.output, snakemake.log)
