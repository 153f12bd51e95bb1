# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Per-head growth of log Z with the mask and without it (claim C6)
#
# For each model, one panel: for every checked layer, every head's slope b of its mean log-normaliser
# with the query offset removed, log Z(i) - a(i), against log(i + 1) over queries i >= min_query, with the
# causal mask (filled) and without it
# (hollow, the control), each with its split-half noise floor as a bar.  The parameter-free causal RoPE
# simulation's slope b_sim per layer is a black bar (its run without the mask a hollow black diamond),
# and the claim's threshold, min_slope_ratio x b_sim, a dashed bar (the ratio C6 records).  Read from
# `results/claims/position.json` (C6).

# %%
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FormatStrFormatter, NullLocator

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_log_z_growth")

# %%
c6 = read_json(snakemake.input[0])["C6"]
measured, simulation = c6["measured"], c6["measured"]["simulation"]
ratio = measured["min_slope_ratio"]  # the threshold the claim was decided with
SYMLOG_TICKS = [-100, -10, -1, -0.5, 0, 0.5, 1, 10, 100]  # one per decade beyond 1: 2 and 5 crowded the labels
RUNS = [("probe", "C0", "o", "full", -0.17), ("no_mask", "C1", "o", "none", 0.17)]  # key, colour, marker, fill, offset

fig, axes = plt.subplots(1, len(measured["models"]), figsize=(3.6 * len(measured["models"]), 3.3), squeeze=False)
for ax, (model, result) in zip(axes[0], measured["models"].items(), strict=True):
    layers = [int(layer) for layer in result["probe"]["layers"]]
    for key, colour, marker, fill, offset in RUNS:
        for layer in layers:
            row = result[key]["layers"][str(layer)]
            slopes = np.array([value(s) for s in row["slopes"]])
            spread = np.linspace(-0.07, 0.07, len(slopes)) if len(slopes) > 1 else np.zeros(1)
            ax.errorbar(layer + offset + spread, slopes, yerr=[value(f) for f in row["floors"]], fmt=marker,
                        color=colour, mfc=colour if fill == "full" else "none", markersize=3, elinewidth=0.6, lw=0)
    for layer in layers:
        b_sim = value(simulation["probe"]["layers"][str(layer)]["slope"])
        ax.hlines(b_sim, layer - 0.35, layer + 0.35, color="black", lw=1.5)
        ax.plot(layer, value(simulation["no_mask"]["layers"][str(layer)]["slope"]), "D", color="black", mfc="none",
                markersize=4)
        ax.hlines(ratio * b_sim, layer - 0.35, layer + 0.35, color="black", lw=1, ls="--")
    ax.axhline(0, color="grey", lw=0.5)
    drawn = [abs(value(b)) for key in ("probe", "no_mask") for row in result[key]["layers"].values() for b in row["slopes"]]
    if max(drawn, default=0) > 3:  # a few heads reach slopes of tens: linear up to 1 only, logarithmic beyond
        ax.set_yscale("symlog", linthresh=1, linscale=2)
        ax.autoscale_view()  # the limits of the new scale, so that every point stays in view
        low, high = ax.get_ylim()
        ax.set_yticks([t for t in SYMLOG_TICKS if low <= t <= high])
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_locator(NullLocator())
    carrying = ", ".join(f"{row['heads_carrying']}/{row['heads']}" for row in result["probe"]["layers"].values())
    style_panel(ax, f"{model}\nheads carrying: {carrying}", "layer", "slope b of log Z − a(i)" if ax is axes[0, 0] else "",
                legend=False)
    layer_axis(ax, layers)
handles = [Line2D([], [], color="C0", marker="o", lw=0, markersize=4, label="head, with mask"),
           Line2D([], [], color="C1", marker="o", mfc="none", lw=0, markersize=4, label="head, without mask"),
           Line2D([], [], color="black", lw=1.5, label="simulation $b_{sim}$"),
           Line2D([], [], color="black", marker="D", mfc="none", lw=0, markersize=4, label="simulation, no mask"),
           Line2D([], [], color="black", lw=1, ls="--", label=f"threshold {ratio:g} × $b_{{sim}}$")]
fig.legend(handles=handles, fontsize=6, loc="lower center", ncol=len(handles), bbox_to_anchor=(0.5, -0.06))
sim_slopes = [value(row["slope"]) for row in simulation["probe"]["layers"].values()]
# A run too short to reach the first query checked (the smoke scale's) has no slope: say so rather than draw nothing.
missing = "" if any(b == b for b in sim_slopes) else "; no simulation slope: its sequences end before that query"
fig.suptitle(f"Log-Z slopes at queries ≥ {measured['min_query']}{missing}", fontsize=9)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
