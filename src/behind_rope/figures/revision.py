"""The revision's figures (version 2): its Figure 1's score heatmaps, RP against depth for each d, and
the alpha sweeps, drawn from results/revision/<setting>.json."""

from __future__ import annotations

from statistics import NormalDist

import matplotlib.pyplot as plt
import numpy as np

from behind_rope.atomic import read_json
from behind_rope.figures.plotting import below_diagonal, layer_axis, layer_grid, style_panel

NORM_NAMES = {"none": "no normalisation", "layernorm": "LayerNorm"}
Z99 = NormalDist().inv_cdf(0.995)  # the claims' 99 % intervals (config/claims.yaml, R0-R5)


def describe(setting: dict) -> str:
    """``LayerNorm + residual, α = 0.5, d = 16`` from a setting's fields."""
    return (NORM_NAMES[setting["norm"]] + (" + residual" if setting.get("residual") else "")
            + f", α = {setting['alpha']}, d = {setting['dim']}" + ("" if setting.get("causal", True) else ", no mask"))


def score_rows(paths) -> list[tuple]:
    """One heatmap row per setting: its mean pre-softmax scores per layer, the upper triangle blank, each
    layer on its own colour range, taken below the diagonal (the self-scores, far larger, saturate)."""
    rows = []
    for path in paths:
        data = read_json(path)
        scores = np.asarray(data["mean_scores"], dtype=float)
        hidden = np.triu(np.ones(scores.shape[-2:], dtype=bool), 1)
        scores = np.where(hidden, np.nan, scores)
        limits = [(float(below_diagonal(layer).min()), float(below_diagonal(layer).max())) for layer in scores]
        rows.append((describe(data["settings"]["setting"]), scores, [(low, max(high, low + 1e-9)) for low, high in limits]))
    return rows


def heatmaps(paths):
    return layer_grid(score_rows(paths))


def _rp_line(ax, data, x, label, **style):
    rp, error = np.asarray(data["rp"]), np.asarray(data["standard_error"])
    ax.errorbar(x, rp, yerr=Z99 * error, marker="o", markersize=3, capsize=2, label=label, **style)


def rp_by_depth(paths, panels: list[str]):
    """One panel per kind of stack (``panels``: the settings' descriptions without d), RP against the layer
    for each d, with 99 % intervals; 0.5 dashed."""
    data = [read_json(path) for path in paths]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.0), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        for entry in data:
            setting = entry["settings"]["setting"]
            if describe(setting).rsplit(", d = ", 1)[0] == panel:
                layers = np.arange(1, len(entry["rp"]) + 1)
                _rp_line(ax, entry, layers, f"d = {setting['dim']}")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_ylim(-0.02, 1.02)
        layer_axis(ax, range(1, len(data[0]["rp"]) + 1))
        style_panel(ax, panel, "Layer", "recency probability RP")
    fig.tight_layout()
    return fig


def alpha_sweeps(paths):
    """RP against α (d = 16), one line per layer, without and with the residual, with 99 % intervals."""
    data = [read_json(path) for path in paths]
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0), squeeze=False)
    for ax, residual in zip(axes[0], (False, True), strict=True):
        chosen = sorted((entry for entry in data if bool(entry["settings"]["setting"].get("residual")) == residual),
                        key=lambda entry: entry["settings"]["setting"]["alpha"])
        alphas = [entry["settings"]["setting"]["alpha"] for entry in chosen]
        for layer in range(len(chosen[0]["rp"])):
            rp = np.array([entry["rp"][layer] for entry in chosen])
            error = np.array([entry["standard_error"][layer] for entry in chosen])
            ax.errorbar(alphas, rp, yerr=Z99 * error, marker="o", markersize=3, capsize=2, label=f"layer {layer + 1}")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.set_ylim(0.4, 1.02)
        ax.set_xlim(min(alphas) - 0.05, max(alphas) + 0.05)
        style_panel(ax, "LayerNorm" + (" + residual" if residual else "") + ", d = 16", "anisotropy α",
                    "recency probability RP")
    fig.tight_layout()
    return fig
