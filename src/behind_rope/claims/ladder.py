"""The scale ladder: claim C5's measures for every model, ordered by size, read from claims.json.

One model family in two sizes (Qwen2.5-Coder 0.5B and 1.5B) beside the other models answers the first
question a reader of C5 asks: does a disagreement with the paper's 8B models come from scale?  Every
value here is one the C5 claims recorded; nothing is measured anew.

- structure: C5a's block reliability of the non-relative residual on text;
- magnitude: C5b's spread ratio (pattern width over raw width) in the Figure 5 run;
- first keys: C5c's contrast of the first keys against mid-context keys, in noise floors;
- direction: C5d's softmax-visible start deficit in the Figure 5 run;
- reliability: the split-half reliability of the Figure 5 panel as drawn.
"""

from __future__ import annotations

from behind_rope.claims.outcome import part_outcome

C5_PARTS = ("C5a", "C5b", "C5c", "C5d")
# column: (claim, what its value is, as an axis label)
MEASURES = {
    "structure": ("C5a", "block reliability, text"),
    "magnitude": ("C5b", "pattern width / raw width"),
    "first_keys": ("C5c", "first keys, in noise floors"),
    "direction": ("C5d", "visible start deficit (logits)"),
    "reliability": ("recorded by C5d", "Figure 5 split-half reliability"),
}
# C5c counts the first keys' contrast whatever its sign: a model's mean over layers is of its size, so that layers
# of opposite sign do not cancel (each layer keeps its sign in ladder_rows and the figure).
UNSIGNED_MEANS = ("first_keys",)


def _floors(row: dict) -> float | None:
    value, noise = row["first_keys_contrast"], row["first_keys_noise"]
    if value is None or noise is None or value != value or not noise:
        return None
    return value / noise


def ladder_models(claims: dict) -> list[str]:
    """The models of claim C5, smallest first (by the parameter count each score run recorded)."""
    models = claims["C5a"]["measured"]["models"]
    return sorted(models, key=lambda name: models[name]["parameters"])


def ladder_layers(claims: dict) -> list[int]:
    """The layers C5b-C5d decide on (the same for every model)."""
    first = next(iter(claims["C5b"]["measured"]["models"].values()))
    return sorted(int(layer) for layer in first["layers"])


def ladder_rows(claims: dict) -> list[dict]:
    """One row per model (smallest first) and decided layer: the model's size, the C5 measures and verdicts."""
    a, b, c, d = (claims[name]["measured"]["models"] for name in C5_PARTS)
    rows = []
    for model in ladder_models(claims):
        verdicts = {name: part_outcome(claims[name]["measured"]["models"][model]) for name in C5_PARTS}
        for layer in ladder_layers(claims):
            key = str(layer)
            rows.append({
                "model": model, "parameters": a[model]["parameters"], "layer": layer,
                "figure5_sequences": d[model]["figure5_inputs"]["sequences"],
                "structure": a[model]["text"][key]["block_reliability"],
                "magnitude": b[model]["layers"][key]["spread_ratio"],
                "first_keys": _floors(c[model]["text"][key]),
                "direction": d[model]["figure5"][key]["start_deficit_visible"],
                "reliability": d[model]["figure5"][key]["drawn_reliability"],
                "verdicts": verdicts,
            })
    return rows


def _mean(values) -> float | None:
    values = [v for v in values if v is not None and v == v]
    return sum(values) / len(values) if values else None


def model_means(claims: dict) -> dict[str, dict]:
    """Per model (smallest first): its size and the mean of each measure over the decided layers (of its size,
    for ``UNSIGNED_MEANS``)."""
    rows = ladder_rows(claims)
    means = {}
    for model in ladder_models(claims):
        own = [row for row in rows if row["model"] == model]
        means[model] = {"parameters": own[0]["parameters"], "verdicts": own[0]["verdicts"],
                        **{measure: _mean(abs(row[measure]) if measure in UNSIGNED_MEANS and row[measure] is not None
                                          else row[measure] for row in own) for measure in MEASURES}}
    return means


def families(claims: dict) -> dict[str, list[str]]:
    """Models of one architecture in more than one size (smallest first): the rungs that compare scale alone."""
    models = claims["C5a"]["measured"]["models"]
    by_architecture: dict[str, list[str]] = {}
    for model in ladder_models(claims):
        by_architecture.setdefault(models[model]["architecture"], []).append(model)
    return {architecture: names for architecture, names in by_architecture.items() if len(names) > 1}


def trend(values: list) -> str:
    """rises, falls or mixed: how a measure moves along models ordered by size."""
    steps = [b - a for a, b in zip(values, values[1:], strict=False) if a is not None and b is not None]
    if steps and all(step > 0 for step in steps):
        return "rises"
    if steps and all(step < 0 for step in steps):
        return "falls"
    return "mixed"
