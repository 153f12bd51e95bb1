# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Figure 2: mean pre-softmax scores of a stacked parameter-free causal layer
#
# Rows are α (the mean inner product of the inputs), columns are layers.  Colour range [0, 1].
# Run with `snakemake fig2`; the inputs are `results/simulation/<variant>.npz`.

# %%
from behind_rope.plotting import alpha_rows, layer_grid, save

try:
    snakemake  # noqa: B018  (injected by Snakemake's script: directive)
except NameError:
    from types import SimpleNamespace

    snakemake = SimpleNamespace(input=[f"results/simulation/l2_alpha{a}.npz" for a in ("0.0", "0.2")],
                                output=["figures/fig2_simulation.pdf", "figures/fig2_simulation.png"], log=[])

# %%
save(layer_grid(alpha_rows(snakemake.input)), snakemake.output, snakemake.log)
