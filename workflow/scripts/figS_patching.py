# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Patching position 0 and the middle position (claim C9)
#
# For each model, by patched layer, the relative change of the sink heads' outputs (mean over the
# layer's sink heads, later queries) when, at the layer's input, the residual state of position 0 is
# replaced by that of an input with a different first token (the claim) and when the middle position
# is replaced the same way (the control), with the noise floor (the difference of the effect on the
# even and the odd sequences).  Log y-axis: a value of exactly 0 is drawn on the lower edge as a
# down-pointing triangle; a layer without sink heads has no value and a grey band.
# Read from `results/claims/position.json` (C9).

# %%
import numpy as np
from matplotlib.lines import Line2D

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_patching")

# %%
c9 = read_json(snakemake.input[0])["C9"]["measured"]["models"]


def series(model_result):
    """(label, colour, marker, {layer: value}) for the three patches."""
    position0, middle = model_result["position0"]["layers"], model_result["middle"]["layers"]
    return [("position 0, different first token", "C3", "o", {int(k): value(r["effect"]) for k, r in position0.items()}),
            (f"middle position ({model_result['middle_position']})", "C0", "s",
             {int(k): value(r["effect"]) for k, r in middle.items()}),
            ("noise floor (even - odd sequences)", "grey", "D", {int(k): value(r["floor"]) for k, r in position0.items()})]


positive = [v for result in c9.values() for *_, values in series(result) for v in values.values() if v > 0]
bottom = 10 ** np.floor(np.log10(min(positive)) - 1) if positive else 1e-8
top = 10 ** np.ceil(np.log10(max(positive)) + 0.3) if positive else 1.0
fig, axes = plt.subplots(1, len(c9), figsize=(3.6 * len(c9), 3.0), squeeze=False, sharey=True)
for ax, (model, result) in zip(axes[0], c9.items(), strict=True):
    for label, colour, marker, values in series(result):
        layers = sorted(values)
        shown = [values[layer] if values[layer] > 0 else np.nan for layer in layers]
        ax.plot(layers, shown, marker=marker, color=colour, lw=1, markersize=4, label=label)
        zeros = [layer for layer in layers if values[layer] == 0]
        if zeros:
            ax.plot(zeros, [bottom] * len(zeros), "v", color=colour, markersize=5, clip_on=False)
    for layer, row in result["position0"]["layers"].items():
        if not row["sink_heads"]:  # a grey band: nothing to read there
            ax.axvspan(int(layer) - 0.5, int(layer) + 0.5, color="0.92", lw=0, zorder=0)
    checked = [int(layer) for layer in result["position0"]["layers"]]
    ax.set_xlim(min(checked) - 0.5, max(checked) + 0.5)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    with_sinks = sum(bool(row["sink_heads"]) for row in result["position0"]["layers"].values())
    style_panel(ax, f"{model}: sink heads in {with_sinks} of {len(checked)} layers", "layer",
                "relative change of sink-head outputs" if ax is axes[0, 0] else "", legend=False)
    layer_axis(ax, checked)
handles, labels = axes[0, -1].get_legend_handles_labels()
handles.append(Line2D([], [], color="black", marker="v", lw=0, markersize=5))
labels.append("exactly 0 (on the lower edge)")
axes[0, -1].legend(handles, labels, fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
