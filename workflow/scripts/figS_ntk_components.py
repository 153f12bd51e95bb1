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
# For each model scaled at inference, and for the parameter-free RoPE simulation (the control), the
# signed first-key (residual-stream) component R and the mask component M at early queries (means over
# the checked layers) against the NTK factor s (s = 1 is the trained base).  At each other factor the bars
# are +-2 noise floors (the larger split-half difference of the two runs compared); R is filled where the
# claim's rule finds it suppressed, hollow where not.  Read from `results/claims/position.json` (C8a).

# %%
from matplotlib.lines import Line2D

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_ntk_components")

# %%
c8a = read_json(snakemake.input[0])["C8a"]["measured"]
panels = {f"{model}: {'passes' if result['passed'] else 'fails'}": result for model, result in c8a["models"].items()}
panels[f"simulation (control): {'passes' if c8a['simulation']['passed'] else 'fails'}"] = c8a["simulation"]
COMPONENTS = [("first_key", "R, first key", "C0", "o"), ("mask", "M, mask", "C1", "s")]
fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.0), squeeze=False)
for ax, (title, result) in zip(axes[0], panels.items(), strict=True):
    factors = sorted(result["factors"], key=float)
    xs = [1.0] + [float(f) for f in factors]
    for k, (name, _label, colour, marker) in enumerate(COMPONENTS):
        shift = 1.04 if k else 1 / 1.04  # the two components side by side
        ys = [value(result["base"][name]["mean"])] + [value(result["factors"][f][name]["value"]) for f in factors]
        # Error bars: +- the claim's multiple of the noise floor, the margin its rule asks a fall to exceed.
        errors = [0.0] + [result["floor_multiple"] * value(result["factors"][f][name]["floor"]) for f in factors]
        ax.errorbar([x * shift for x in xs], ys, yerr=errors, color=colour, marker=marker, lw=1, markersize=4,
                    elinewidth=0.8, capsize=2, mfc="white")
        suppressed = [x * shift for x, f in zip(xs[1:], factors, strict=True) if result["factors"][f][name]["suppressed"]]
        ax.plot(suppressed, [y for y, f in zip(ys[1:], factors, strict=True) if result["factors"][f][name]["suppressed"]],
                marker, color=colour, markersize=4, lw=0, zorder=4)
        ax.plot(xs[0] * shift, ys[0], marker, color=colour, mec="black", markersize=4, lw=0, zorder=4)  # the reference
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.minorticks_off()
    style_panel(ax, title, "NTK factor s", "component at early queries (logits)" if ax is axes[0, 0] else "",
                legend=False)
handles = [Line2D([], [], color=colour, marker=marker, lw=1, markersize=4, label=label)
           for _, label, colour, marker in COMPONENTS]
handles.append(Line2D([], [], color="black", marker="o", mfc="white", lw=0, markersize=4, label="not suppressed"))
handles.append(Line2D([], [], color="grey", marker="o", mec="black", lw=0, markersize=4, label="s = 1, the trained base"))
axes[0, -1].legend(handles=handles, fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
