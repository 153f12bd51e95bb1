# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Key 0's positional signal against the NTK factor (claim C8a)
#
# For each model scaled at inference, the remaining share rho of key 0's positional signal at the early queries
# (C7's measure) and of the signal the other keys carry (the control) against the NTK factor s (s = 1 is the
# trained base, rho = 1).  At each other factor the bars are +-2 noise floors; a point is filled where the
# claim's rule finds the signal suppressed, hollow where not.  Read from `results/claims/position.json` (C8a).

# %%
from matplotlib.lines import Line2D

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_ntk_components")

# %%
c8a = read_json(snakemake.input[0])["C8a"]["measured"]
smallest_cut = 1 - c8a["min_fall"]  # rho at the smallest cut the rule counts
panels = {f"{model}: {'passes' if result['passed'] else 'fails'}": result for model, result in c8a["models"].items()}
SIGNALS = [("key0", "key 0's signal", "C0", "o"), ("other_keys", "the other keys' (control)", "C1", "s")]
fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(3.2 * max(len(panels), 1), 3.0), squeeze=False)
for ax, (title, result) in zip(axes[0], panels.items(), strict=False):
    factors = sorted(result["factors"], key=float)
    xs = [1.0] + [float(f) for f in factors]
    for k, (name, _label, colour, marker) in enumerate(SIGNALS):
        shift = 1.04 if k else 1 / 1.04  # the two signals side by side
        ys = [1.0] + [value(result["factors"][f][name]["value"]) for f in factors]
        # Error bars: +- the claim's multiple of the noise floor, the margin its rule asks a cut to exceed.
        errors = [0.0] + [result["floor_multiple"] * value(result["factors"][f][name]["floor"]) for f in factors]
        ax.errorbar([x * shift for x in xs], ys, yerr=errors, color=colour, marker=marker, lw=1, markersize=4,
                    elinewidth=0.8, capsize=2, mfc="white")
        suppressed = [f for f in factors if result["factors"][f][name]["suppressed"]]
        ax.plot([float(f) * shift for f in suppressed], [value(result["factors"][f][name]["value"]) for f in suppressed],
                marker, color=colour, markersize=4, lw=0, zorder=4)
    ax.axhline(smallest_cut, color="grey", lw=0.6, ls=":")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.minorticks_off()
    style_panel(ax, title, "NTK factor s", "remaining share rho" if ax is axes[0, 0] else "", legend=False)
handles = [Line2D([], [], color=colour, marker=marker, lw=1, markersize=4, label=label)
           for _, label, colour, marker in SIGNALS]
handles.append(Line2D([], [], color="black", marker="o", mfc="white", lw=0, markersize=4, label="not suppressed"))
axes[0, -1].legend(handles=handles, fontsize=6)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
