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
# For each model, the first-key (residual-stream) component at early queries, |R|, by layer, for the
# original run and for the position-0 embedding replaced before the forward pass: by the mean token
# embedding (the claim), by the embedding of " the", at position 5 instead (control), and by itself
# (control: must change nothing).  Read from `results/claims/position.json` (C7), which also gives the
# fraction each removes over the checked layers (in the legend).

# %%
from behind_rope.atomic import read_json
from behind_rope.plotting import plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_bos_replacement")

# %%
c7 = read_json(snakemake.input[0])["C7"]["measured"]["models"]
fig, axes = plt.subplots(1, len(c7), figsize=(4.2 * len(c7), 3.2), squeeze=False)
for ax, (model, result) in zip(axes[0], c7.items(), strict=True):
    for name, rows in result["layers"].items():
        layers = [int(layer) for layer in rows]
        removed = result["fraction_removed"].get(name)
        label = f"{name} (removes {value(removed):.0%})" if name != "original" else name
        ax.plot(layers, [value(row["first_key_early"], abs) for row in rows.values()], "o-", lw=1, markersize=3,
                label=label)
    style_panel(ax, f"{model}: first-key component, early queries", "layer", "|R| (logits)")
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
