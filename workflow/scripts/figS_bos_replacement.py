# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # BOS replacement against its controls (claim C7)
#
# For each model (the deciding model first, the others exploratory), the remaining share rho of key 0's
# positional signal at the early queries (what its value carries into their attention outputs, over the
# checked layers) after the position-0 embedding is replaced before the forward pass, one point per
# replacement with a bar over the shares of its two halves; the random replacements that differ only in
# their seed are drawn together as one band (their range) with a point per seed.  Filled: the replacement
# removes the signal by the claim's rule; hollow: it does not.  Lines: 1 (nothing removed), 1 minus the
# reading's fraction (what the reading reports) and 0 (all of it removed; below, the signal turned around).  Read from
# `results/claims/position.json` (C7).

# %%
from matplotlib.lines import Line2D

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_bos_replacement")

# %%
c7 = read_json(snakemake.input[0])["C7"]
measured, controls = c7["measured"], set(c7.get("controls", {}))
reading = value(measured["reading_fraction"])
models = sorted(measured["models"].items(), key=lambda item: item[1]["role"] != "decides")
widest = max(len(result["bands"]) for _, result in models)
fig, axes = plt.subplots(1, len(models), figsize=(max(3.6, 0.45 * widest + 1.2) * len(models), 3.3), squeeze=False)
for ax, (model, result) in zip(axes[0], models, strict=True):
    replacements = result["replacements"]
    groups = list(result["bands"].items())
    for x, (_group, band) in enumerate(groups):
        members = band["members"]
        if len(members) > 1:
            low, high = (value(r) for r in band["ratio_band"])
            ax.fill_between([x - 0.3, x + 0.3], low, high, color="C0", alpha=0.2, lw=0)
        for k, name in enumerate(members):
            effect = replacements[name]
            dx = 0.4 * (k / (len(members) - 1) - 0.5) if len(members) > 1 else 0.0
            ratio, halves = value(effect["ratio"]), [value(h) for h in effect["ratio_halves"]]
            ax.vlines(x + dx, min(halves + [ratio]), max(halves + [ratio]), color="C0", lw=1)
            ax.plot(x + dx, ratio, "o", color="C0", mfc="C0" if effect["removes"] else "white",
                    markersize=4 if len(members) > 1 else 5, zorder=3)
    ax.axhline(1, color="black", lw=0.8)
    ax.axhline(1 - reading, color="C2", lw=0.8, ls="--")
    ax.axhline(0, color="C3", lw=0.8, ls=":")
    labels = [f"{group}* ({len(band['members'])} seeds)" if len(band["members"]) > 1
              else group + (" (control)" if group in controls else "") for group, band in groups]
    ax.set_xticks(range(len(groups)), labels, rotation=45, ha="right")
    style_panel(ax, f"{model}: {result['role']}", "", "remaining share rho", legend=False)
handles = [Line2D([], [], color="C0", marker="o", lw=1, markersize=4, label="removes (bar: halves)"),
           Line2D([], [], color="C0", marker="o", mfc="white", lw=1, markersize=4, label="does not remove"),
           Line2D([], [], color="black", lw=0.8, label="1: nothing removed"),
           Line2D([], [], color="C2", lw=0.8, ls="--", label=f"the reading: {reading:.0%} removed"),
           Line2D([], [], color="C3", lw=0.8, ls=":", label="0: all removed; below, turned around")]
axes[0, -1].legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1))
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
