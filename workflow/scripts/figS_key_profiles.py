# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Key profiles by layer, the sink apart
#
# For each model, the key profile of each of the first layers on the Figure 5 text: the column
# means of the softmax-visible residual (mean scores minus a query offset a(i) and a relative part
# r(i − j), fitted with key 0 left out; `behind_rope.maths.decompose`), an absolute preference for some
# keys.  A profile is determined up to a linear trend in the key, which the softmax cannot tell from
# a relative decay.  Key 0 (the attention sink) is marked apart: its residual for late queries, the
# `sink` of the metrics file.  The shaded band is the start keys of the direction check (1..S/10).

# %%
from behind_rope.atomic import read_json, read_npz
from behind_rope.figures.plotting import metadata, plt, save, standalone, style_panel
from behind_rope.maths.decompose import decompose, key_profile

# Snakemake passes `snakemake`; run by hand or as a notebook, the script reads the figure's inputs itself.
snakemake = globals().get("snakemake") or standalone("figS_key_profiles")

# %%
scores = [path for path in snakemake.input if path.endswith(".npz")]
metrics = [path for path in snakemake.input if path.endswith(".json")]
fig, axes = plt.subplots(1, len(scores), figsize=(4.2 * len(scores), 3.2), squeeze=False)
for ax, score_path, metrics_path in zip(axes[0], scores, metrics, strict=True):
    data, measured = read_npz(score_path), read_json(metrics_path)
    rows = measured["layers"]
    layers = min(snakemake.params.layers, len(rows))
    profiles = key_profile(decompose(data["mean_scores"][:layers]).residual)
    seq_len = profiles.shape[-1]
    ax.axvspan(1, measured["positions"]["start_keys"], color="0.92")  # keys 1 .. start_keys: the direction check's
    hidden = []  # layers whose sink is None (NaN): a sliding window hides key 0 from every late query
    for k in range(layers):
        line, = ax.plot(range(1, seq_len), profiles[k, 1:], lw=0.8, label=f"layer {k + 1}")
        if rows[k]["sink"] is None:
            hidden.append(str(k + 1))
        else:
            ax.plot([0], [rows[k]["sink"]], "*", color=line.get_color(), markersize=8)
    sink_note = f"no ★ in layers {', '.join(hidden)}: the window hides key 0 from late queries" if hidden else ""
    ax.set_xscale("symlog", linthresh=10)
    style_panel(ax, f"{metadata(data)['model']} (★ key 0, the sink)" + (f"\n{sink_note}" if sink_note else ""),
                "key position", "key profile (residual column mean)")
fig.tight_layout()
save(fig, snakemake.output, snakemake.log)
