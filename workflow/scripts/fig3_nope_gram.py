# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 3: from layer 1 into layer 2 of the trained NoPE twin
#
# Nine Gram matrices on the first tokens of held-out sequences (mean over sequences, and over
# heads for the per-head panels b, c and i; upper triangle masked).  They were recomputed from
# the model's weights and checked against its forward pass by the `gram` rule; this script only
# draws `results/gram/nope.npz`.  Colour limits are the 1%/99% quantiles of the entries
# below the diagonal, so the much larger self-similarities on the diagonal saturate and the
# position dependence stays visible.  Run with `snakemake fig3_nope_gram`.

# %%
import json

import matplotlib.pyplot as plt

from behind_rope.atomic import read_npz
from behind_rope.figures.plotting import below_diagonal, heatmap, quantile_limits, save, standalone

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("fig3_nope_gram")

# %%
# The panels' titles live here, with the drawing: retitling a panel reruns only this script.
TITLES = {
    "a": "$YY^T$ ($Y$ = RMSNorm of the layer-1 input)",
    "b": r"$QK^T/\sqrt{d}$ (layer 1)",
    "c": "$(AV)(AV)^T$",
    "d": "$(AVW_O)(AVW_O)^T$",
    "e": "$OO^T$ ($O = AVW_O + X$)",
    "f": "LN$(O)$ LN$(O)^T$",
    "g": "$X'X'^T$ ($X'$ = FFN(LN$(O)$) + $O$)",
    "h": "$Y'Y'^T$ (normed input of layer 2)",
    "i": r"$QK^T/\sqrt{d}$ (layer 2)",
}
gram = read_npz(snakemake.input[0])
print("recomputation check:", json.loads(str(gram["check"]))["max_abs_gap"])
fig, axes = plt.subplots(3, 3, figsize=(10.5, 9.5))
for ax, (name, title) in zip(axes.flat, TITLES.items(), strict=True):
    heatmap(ax, gram[name], *quantile_limits([below_diagonal(gram[name])]), f"({name}) {title}", label="mean entry")
fig.suptitle(f"Trained NoPE twin, layer 1 into layer 2 ({int(gram['sequences'])} held-out sequences)", fontsize=11)
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
