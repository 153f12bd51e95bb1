# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Appendix: the simulation of Figure 2 at larger α
#
# Larger α (more similar inputs) weakens the position dependence.  Colour range [0, 1].
# Run with `snakemake figS_alpha_sweep`.

# %%
from behind_rope.plotting import alpha_rows, layer_grid, save

try:
    snakemake  # noqa: B018  (injected by Snakemake's script: directive)
except NameError:
    from types import SimpleNamespace

    snakemake = SimpleNamespace(input=[f"results/simulation/l2_alpha{a}.npz" for a in ("0.4", "0.6", "0.8")],
                                output=["figures/figS_alpha_sweep.pdf", "figures/figS_alpha_sweep.png"], log=[])

# %%
save(layer_grid(alpha_rows(snakemake.input)), snakemake.output, snakemake.log)
