# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 5: the first four layers of pretrained RoPE LLMs, diagonal-normalised
#
# Each row is one model; each panel is the mean pre-softmax score `QKᵀ·scale` over natural-text
# sequences (the Figure 5 token set: the first 1,024 tokens of each document, as the authors take
# them) and heads, with every diagonal (fixed offset i − j) minus its own mean, key 0 included, as
# the paper does.  A purely relative pattern would come out flat; what is left depends on absolute
# position.  Colour limits are each panel's 1% and 99% quantiles of its finite values, the main
# diagonal included.  Panels show block means, at most 256 per side (`blocks.DRAWN_GRID`), and
# their titles give the split-half reliability of exactly that (`drawn_reliability`, from the
# metrics file, the number that `results/claims.json` carries).  `snakemake fig5_llm_layers`
# rebuilds it from `results/` without any model.

# %%
from behind_rope.atomic import read_json, read_npz
from behind_rope.figures.plotting import (
    NORMALISED,
    layer_title,
    metadata,
    panel_grid,
    quantile_limits,
    save,
    standalone,
)
from behind_rope.maths.blocks import DRAWN_GRID
from behind_rope.maths.metrics import diagonal_normalise

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("fig5_llm_layers")

# %%
scores = [path for path in snakemake.input if path.endswith(".npz")]
metrics = [path for path in snakemake.input if path.endswith(".json")]
panels = []
for score_path, metrics_path in zip(scores, metrics, strict=True):
    data, rows = read_npz(score_path), read_json(metrics_path)["layers"]
    about = metadata(data)
    for k, matrix in enumerate(diagonal_normalise(data["mean_scores"][: snakemake.params.layers])):
        title = f"{about['model']}: {layer_title(k + 1, about['layer_types'][k])}, r = {rows[k]['drawn_reliability']:.2f}"
        panels.append((title, matrix, quantile_limits([matrix]), NORMALISED))
# Positions from 0, as the captions and the paper count an LLM's keys (key 0: BOS or the first token).
save(panel_grid(panels, columns=snakemake.params.layers, max_pixels=DRAWN_GRID, first=0), snakemake.output, snakemake.log)
