# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The scale ladder (claim C5 by model size)
#
# For each model, smallest first, claim C5's four measures in each decided layer: the structure (C5a's
# block reliability on text), the magnitude (C5b's spread ratio), the first keys (C5c's contrast in noise
# floors) and the direction (C5d's softmax-visible start deficit), and the Figure 5 panel's split-half
# reliability.  The two Qwen2.5-Coder sizes sit side by side.  Read from `results/claims.json` through
# `behind_rope.claims.ladder`; each model's label gives its C5a-C5d verdicts.

# %%
import numpy as np

from behind_rope.atomic import read_json
from behind_rope.claims.ladder import MEASURES, ladder_layers, ladder_models, ladder_rows
from behind_rope.figures.plotting import plt, save, standalone, style_panel, value

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_scale_ladder")

# %%
claims = read_json(snakemake.input[0])
rows, models, layers = ladder_rows(claims), ladder_models(claims), ladder_layers(claims)
parameters = {row["model"]: row["parameters"] for row in rows}
verdicts = {row["model"]: "".join("✓" if passed else "✗" for passed in row["verdicts"].values()) for row in rows}
labels = [f"{model}  {parameters[model] / 1e6:,.0f}M  {verdicts[model]}" for model in models]
fig, axes = plt.subplots(1, len(MEASURES), figsize=(3.2 * len(MEASURES), 4.0), squeeze=False)
x = np.arange(len(models))
for ax, (measure, (claim, meaning)) in zip(axes[0], MEASURES.items(), strict=True):
    for k, layer in enumerate(layers):
        by_model = {row["model"]: row[measure] for row in rows if row["layer"] == layer}
        ax.plot(x + (k - 1) * 0.08, [value(by_model[m]) for m in models], "o-", lw=0.8, markersize=4,
                color=f"C{k}", label=f"layer {layer}")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xticks(x, labels, fontsize=6, rotation=35, ha="right")
    style_panel(ax, f"{measure.replace('_', ' ')} ({claim})", "", meaning, legend=measure == "structure")
fig.suptitle("C5 by model size (✓/✗: C5a, C5b, C5c, C5d)", fontsize=9)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
