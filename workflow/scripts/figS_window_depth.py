# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Log-Z growth by depth where the window binds (claim C8b)
#
# For the model with sliding-window layers and for the model without a window (the control), the mean
# |log-Z slope| over heads by layer, at queries i >= min_query (beyond the window); sliding-window and
# global layers have different markers, and the shaded band reaches 2 noise floors (the mean split-half
# |b_A - b_B| over heads).  The legend gives the rank correlation with depth over the checked layers
# (the sliding-window layers, or every layer of a model without a window).  Read from
# `results/claims/position.json` (C8b).

# %%
from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_window_depth")

# %%
c8b = read_json(snakemake.input[0])["C8b"]["measured"]
TYPES = {"sliding_attention": ("sliding-window layer", "o", "C0"), "full_attention": ("global layer", "s", "C1")}
checks = [c8b["sliding"], c8b["no_window"]]  # the model with sliding-window layers, then the control
fig, axes = plt.subplots(1, len(checks), figsize=(3.8 * len(checks), 3.1), squeeze=False)
for ax, check in zip(axes[0], checks, strict=True):
    rows = check["layers"]
    layers = sorted(rows, key=int)
    floors = check["floor_multiple"]  # the shaded band: the claim's multiple of each layer's noise floor
    ax.fill_between([int(layer) for layer in layers], 0, [floors * value(rows[layer]["floor"]) for layer in layers],
                    color="grey", alpha=0.3, lw=0, label=f"{floors:g} × floor")
    ax.plot([int(layer) for layer in layers], [value(rows[layer]["value"]) for layer in layers], color="grey", lw=0.6)
    for kind, (label, marker, colour) in TYPES.items():
        chosen = [layer for layer in layers if rows[layer]["type"] == kind]
        if chosen:
            rho = value(check["depth_correlation"])  # NaN when the checked layers have no values
            shown = f"ρ = {rho:.2f}" if rho == rho else "ρ: n/a"
            note = f", {shown}" if [int(x) for x in chosen] == check["checked_layers"] else ""
            ax.plot([int(layer) for layer in chosen], [value(rows[layer]["value"]) for layer in chosen], marker, lw=0,
                    color=colour, markersize=4, label=f"{label}s ({len(chosen)}){note}")
    window = f"window {check['window']}" if check["window"] is not None else "no window"
    style_panel(ax, f"{check['model']} ({window}): {'passes' if check['passed'] else 'fails'}", "layer",
                f"mean |log-Z slope|, queries ≥ {check['min_query']}")
    ax.set_ylim(bottom=0)
    if not any(value(rows[layer]["value"]) == value(rows[layer]["value"]) for layer in layers):
        ax.text(0.5, 0.5, f"no value: the sequences ({check['seq_len']} tokens)\nend before query {check['min_query']}",
                transform=ax.transAxes, ha="center", va="center", fontsize=7)
    layer_axis(ax, layers)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
