# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Sink heads by layer (claim C9)
#
# For each model, every head's mean attention to key 0 over the later queries (layers on rows, heads on
# columns); the sink heads, chosen by the claim's fixed rule before any patch, are outlined, and the
# number per layer is written on the right.  Read from `results/claims/position.json` (C9).

# %%
import numpy as np
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_sink_heads")

# %%
tables = read_json(snakemake.input[0])["C9"]["sink_heads"]
most_layers = max(len(table) for table in tables.values())
fig, axes = plt.subplots(1, len(tables), figsize=(3.4 * len(tables), min(5.0, 1.4 + 0.25 * most_layers)), squeeze=False)
for ax, (model, table) in zip(axes[0], tables.items(), strict=True):
    layers = sorted(table, key=int)
    attention = np.array([[value(a) for a in table[layer]["attention_to_key_0"]] for layer in layers])
    first, n_heads = int(layers[0]), attention.shape[1]
    image = ax.imshow(attention, cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="nearest",
                      extent=(-0.5, n_heads - 0.5, first + len(layers) - 0.5, first - 0.5))
    for layer in layers:
        for head in table[layer]["heads"]:
            ax.add_patch(Rectangle((head - 0.5, int(layer) - 0.5), 1, 1, fill=False, edgecolor="red", lw=1.0))
        ax.text(1.03, int(layer), str(table[layer]["count"]), fontsize=6, va="center", ha="left",
                transform=ax.get_yaxis_transform())
    ax.text(1.03, first - 0.5, "sink\nheads", fontsize=6, va="bottom", ha="left", transform=ax.get_yaxis_transform())
    total = sum(table[layer]["count"] for layer in layers)
    style_panel(ax, f"{model}: {total} sink heads", "head", "layer", legend=False)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    layer_axis(ax, layers, "y")
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.12)
    bar.ax.tick_params(labelsize=7)
    bar.set_label("mean attention to key 0", fontsize=7)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
