# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # What the softmax can see of the non-relative part, by layer
#
# For each model (rows) and run (columns: natural text, every layer; i.i.d. tokens with and
# without the mask, the first layers), the variance of the mean pre-softmax scores (strict lower
# triangle, key 0 left out) split in order: the relative part r(i − j) (what the paper's diagonal
# normalisation removes), the query offset a(i) (invisible to the softmax) and the rest, the
# softmax-visible non-relative part (`behind_rope.maths.decompose`).  Read from the metrics files.

# %%
import numpy as np

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import layer_axis, plt, save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_c5_decomposition")

# %%
PARTS = [("relative_share", "relative r(i − j)", "#c9c9c9"), ("query_offset_share", "query offset a(i)", "#7fa7d6"),
         ("visible_share", "softmax-visible non-relative", "#d1495b")]
INPUTS = {"text": "text", "random": "i.i.d. tokens"}  # a run's label, from its own metadata
RUNS = 3  # per model, in the order of the inputs: text, random, no mask
files = [read_json(path) for path in snakemake.input]
models = list(dict.fromkeys(f["metadata"]["model"] for f in files))
fig, axes = plt.subplots(len(models), RUNS, figsize=(11, 2.4 * len(models)), squeeze=False,
                         gridspec_kw={"width_ratios": [3, 1, 1]})
for r, model in enumerate(models):
    runs = [f for f in files if f["metadata"]["model"] == model]  # in the order of the inputs: text, random, no mask
    for c, (ax, run) in enumerate(zip(axes[r], runs, strict=True)):
        about = run["metadata"]
        label = f"{INPUTS.get(about['inputs'], about['inputs'])}, {'mask' if about['causal'] else 'no mask'}"
        layers = np.array([row["layer"] for row in run["layers"]])
        bottom = np.zeros(len(layers))
        for key, name, colour in PARTS:
            share = np.array([row[key] for row in run["layers"]], dtype=float)
            ax.bar(layers, share, bottom=bottom, color=colour, width=0.85, label=name)
            bottom += share
        ax.set_ylim(0, 1)
        ax.set_title(label, fontsize=8)  # the model names its row, on the left: long names would touch
        ax.set_xlabel("layer", fontsize=8)
        ax.tick_params(labelsize=7)
        layer_axis(ax, layers)
        if c == 0:
            ax.set_ylabel(f"{model}\nshare of variance", fontsize=8)
# Above the panels: the stacked shares fill every bar to 1, so a legend inside any panel covers some.
fig.legend(*axes[0, 0].get_legend_handles_labels(), fontsize=7, loc="upper center", ncol=len(PARTS), frameon=False)
fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / fig.get_figheight()))
save(fig, snakemake.output, snakemake.log)
