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

from behind_rope.claims import markdown as md
from behind_rope.claims.format import model_name, models, number, parameter_count
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


# ---- the paper's values and table ----------------------------------------------------------------


# (measure, table header, name in the text)
LADDER_COLUMNS = (("structure", "structure", "structure"), ("magnitude", "magnitude", "magnitude"),
                  ("first_keys", "first keys", "first keys (their size)"), ("direction", "direction", "direction"),
                  ("reliability", "fig.~5 $r$", "fig. 5 reliability"))


def ladder_table(claims: dict) -> str:
    """The scale ladder: per model (smallest first) and decided layer, C5's four measures, the Figure 5 panel's
    split-half reliability, and the model's C5a-C5d verdicts."""
    rows = ladder_rows(claims)
    lines = [r"\begin{tabular}{@{}lrrrrrrrc@{}}", r"\toprule",
             "model & parameters & layer & " + " & ".join(header for _, header, _ in LADDER_COLUMNS)
             + r" & C5a--d \\", r"\midrule"]
    for k, row in enumerate(rows):
        first = k == 0 or rows[k - 1]["model"] != row["model"]
        if first and k:
            lines.append(r"\addlinespace")
        model = [model_name(row["model"]), f"{row['parameters'] / 1e6:,.0f}M".replace(",", "{,}")] if first else ["", ""]
        cells = [number(row[key], 1 if key == "first_keys" else 3 if key == "direction" else 2) for key, _, _ in LADDER_COLUMNS]
        verdicts = "".join(said[0] for said in row["verdicts"].values()) if first else ""  # P, F or U
        lines.append(" & ".join([*model, str(row["layer"]), *cells, verdicts]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _moves(before: dict, after: dict) -> str:
    """'structure 0.62 to 0.71, magnitude ...': each measure's mean over the decided layers, before and after."""
    return ", ".join(f"{name} {number(before[key])} to {number(after[key])}" for key, _, name in LADDER_COLUMNS)


def ladder_values(claims: dict) -> dict[str, str]:
    """The paper's sentences on the scale ladder, from the numbers: what changes between the sizes of one family,
    and which measures move the same way along every model ordered by size."""
    means = model_means(claims)
    order = list(means)
    family_sentences = []
    for names in families(claims).values():
        small, large = means[names[0]], means[names[-1]]
        changed = [part for part in C5_PARTS if small["verdicts"][part] != large["verdicts"][part]]
        verdicts = ("no verdict of C5a to C5d changes" if not changed else
                    "; ".join(f"{part} goes from {small['verdicts'][part].lower()} to {large['verdicts'][part].lower()}"
                              for part in changed))
        family_sentences.append(
            f"From {model_name(names[0])} to {model_name(names[-1])} ({large['parameters'] / small['parameters']:.1f} "
            f"times the parameters, the same architecture), the means over the decided layers move so: "
            f"{_moves(small, large)}; {verdicts}.")
    trends = {name: trend([means[m][key] for m in order]) for key, _, name in LADDER_COLUMNS}
    monotone = [f"{name} {how}" for name, how in trends.items() if how != "mixed"]
    return {
        "ladder.models": models(order),
        "ladder.count": f"{number(len(order))} model{'s' if len(order) != 1 else ''}",
        "ladder.largest": parameter_count(max(mean["parameters"] for mean in means.values())),
        "ladder.family": " ".join(family_sentences) or "No two models here share an architecture.",
        "ladder.trend": ("Along all the models, smallest to largest, "
                         + (", ".join(monotone) + " with every step; the other measures go up and down."
                            if monotone else "no measure moves the same way with every step in size.")),
    }


# ---- docs/results.md -----------------------------------------------------------------------------


def results_table(claims: dict) -> str:
    """The scale ladder (behind_rope.claims.ladder): claim C5's measures per model, smallest first, and decided layer."""
    lines = ["| model | parameters (as loaded) | Figure 5 sequences | layer | structure (C5a) | magnitude (C5b) | "
             "first keys, noise floors (C5c) | direction (C5d) | Figure 5 reliability | C5a / C5b / C5c / C5d |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = ladder_rows(claims)
    for k, row in enumerate(rows):
        first = k == 0 or rows[k - 1]["model"] != row["model"]
        verdicts = " / ".join(row["verdicts"].values())
        lines.append(" | ".join([
            f"| {row['model'] if first else ''}", f"{row['parameters'] / 1e6:,.0f}M" if first else "",
            str(row["figure5_sequences"]) if first else "", str(row["layer"]), md.value(row["structure"], ".2f"),
            md.value(row["magnitude"], ".3f"), md.value(row["first_keys"], "+.1f"), md.value(row["direction"], "+.3f"),
            md.value(row["reliability"], ".2f"), verdicts if first else ""]) + " |")
    means = model_means(claims)
    lines += ["", "Means over the decided layers:", "",
              "| model | structure | magnitude | first keys (their size) | direction | Figure 5 reliability |",
              "|---|---|---|---|---|---|"]
    for model, mean in means.items():
        lines.append(f"| {model} | {md.value(mean['structure'], '.2f')} | {md.value(mean['magnitude'], '.3f')} | "
                     f"{md.value(mean['first_keys'], '.1f')} | {md.value(mean['direction'], '+.3f')} | "
                     f"{md.value(mean['reliability'], '.2f')} |")
    return "\n".join(lines) + "\n"
