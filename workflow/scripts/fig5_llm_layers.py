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
# sequences and heads, with every diagonal (fixed offset i − j) minus its own mean.  A purely
# relative pattern would come out flat; what is left depends on absolute position.  Colour limits
# are each panel's 1% and 99% quantiles below the diagonal.  Panels show 2 × 2 block means of the
# 1,024 × 1,024 matrices.  `snakemake fig5` rebuilds it from `results/attention/` without any model.

# %%
import json

from behind_rope.atomic import read_npz
from behind_rope.metrics import diagonal_normalise
from behind_rope.plotting import below_diagonal, layer_title, panel_grid, quantile_limits, save

try:
    snakemake  # noqa: B018  (injected by Snakemake's script: directive)
except NameError:
    from glob import glob
    from types import SimpleNamespace

    snakemake = SimpleNamespace(input=sorted(glob("results/attention/*.npz")), params=SimpleNamespace(layers=4),
                                output=["figures/fig5_llm_layers.pdf", "figures/fig5_llm_layers.png"], log=[])

# %%
panels = []
for path in snakemake.input:
    data = read_npz(path)
    metadata = json.loads(str(data["metadata"]))
    normalised = diagonal_normalise(data["mean_scores"][: snakemake.params.layers])
    for k, matrix in enumerate(normalised):
        title = f"{metadata['model']}: {layer_title(k + 1, metadata['layer_types'][k])}"
        panels.append((title, matrix, quantile_limits([below_diagonal(matrix)])))
save(panel_grid(panels, columns=snakemake.params.layers, max_pixels=512), snakemake.output, snakemake.log)
