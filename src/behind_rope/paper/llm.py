"""The paper's values and tables for claims C5a-C5d (pretrained RoPE LLMs), and the score decomposition of
every run: LaTeX from results/claims.json, never typed in."""

from __future__ import annotations

from behind_rope.claims import ladder
from behind_rope.paper.format import listing, model_name, models, number, parameter_count, quote_tex, span, verdict

PARTS = (("relative_share", "rel."), ("query_offset_share", "offset"), ("visible_share", "visible"))


def _defined(value) -> bool:
    return value is not None and value == value


def _counts(models_: dict) -> dict[str, str]:
    return {"models_passed": str(sum(m["passed"] for m in models_.values())), "models_total": str(len(models_)),
            "passed_models": models([n for n, m in models_.items() if m["passed"]]),
            "failed_models": models([n for n, m in models_.items() if not m["passed"]])}


def _direction(values: list[float]) -> str:
    """The signs of some contrasts against mid-context keys, in words: 'higher than mid-context keys in every
    one of them', 'higher than mid-context keys in 2 and lower in 1 of them', 'lower than mid-context keys there'."""
    values = [v for v in values if _defined(v)]
    up, down = sum(v > 0 for v in values), sum(v < 0 for v in values)
    if not values:
        return "neither higher nor lower than mid-context keys in any of them"
    if up == len(values) or down == len(values):
        where = "there" if len(values) == 1 else "in every one of them"
        return f"{'higher' if up else 'lower'} than mid-context keys {where}"
    return f"higher than mid-context keys in {up} and lower in {down} of them"


def _above_or_below(values: list[float]) -> str:
    r"""How far some values lie from zero, with their side: '0.13 to 10.57 above', '0.20 below', or 'from
    \ensuremath{-}1.00 to 2.00 above or below' (both signs)."""
    values = [v for v in values if _defined(v)]
    if values and all(v > 0 for v in values):
        return f"{span(values)} above"
    if values and all(v < 0 for v in values):
        return f"{span([-v for v in values])} below"
    return f"from {span(values)} above or below"


def _apart_sentence(subject: str, contrasts: list[float], checked: int) -> str:
    """'The group of first keys stands apart in 5 of the 9 layers checked, scoring higher than mid-context keys
    in every one of them.'"""
    text = f"{subject} stands apart in {len(contrasts)} of the {checked} layers checked"
    return text + (f", scoring {_direction(contrasts)}." if contrasts else ".")


def ranging(values, digits: int = 2) -> str:
    """'is 0.03' or 'runs from -0.10 to 0.12' (or 'is not defined')."""
    text = span(values, digits)
    return "is not defined" if text == "n/a" else (f"runs from {text}" if " to " in text else f"is {text}")


def _judged_sentence(deficits: list[float]) -> str:
    """C5d's judged layers: how many, what their softmax-visible start deficits are, and their signs."""
    if not deficits:
        return r"\C{5a}'s text structure holds in none of these layers, so \C{5d} has no layer to judge and cannot pass."
    layers = "the one layer" if len(deficits) == 1 else f"the {len(deficits)} layers"
    return (f"In {layers} it judges, the softmax-visible start deficit {ranging(deficits)} logits: the start keys "
            f"score {_direction(deficits)}.")


def c5_values(claims: dict, settings: dict) -> dict[str, str]:
    args, entries = settings["claims"], settings["entries"]
    a, b, c, d = (claims[name]["measured"]["models"] for name in ("C5a", "C5b", "C5c", "C5d"))
    a_args, b_args, c_args, d_args = (args[name] for name in ("C5a", "C5b", "C5c", "C5d"))
    values = {f"c5a.{key}": text for key, text in _counts(a).items()}
    values |= {f"c5b.{key}": text for key, text in _counts(b).items()}
    values |= {f"c5c.{key}": text for key, text in _counts(c).items()}
    values |= {f"c5d.{key}": text for key, text in _counts(d).items()}
    values |= {
        "c5a.threshold": number(a_args["min_reliability"]), "c5a.min_layers": str(a_args["min_layers"]),
        "c5a.first_layer": str(a_args["layers"][0]), "c5a.later_layers": listing(a_args["layers"][1:]),
        "c5a.quote": quote_tex(entries["C5a"]["paper"]["quote"]),
    }

    # C5b, magnitude: the spread ratios of the pattern and of the noise, and the widths behind them.
    rows = [row for model in b.values() for row in model["layers"].values()]
    noisy = [n for n, m in b.items() if m["control_split_half_noise"]["passed"]]
    values |= {
        "c5b.layers": listing(b_args["layers"]), "c5b.min_layers": str(b_args["min_layers"]),
        "c5b.min_spread_ratio": number(b_args["min_spread_ratio"]), "c5b.min_over_noise": f"{b_args['min_over_noise']:g}",
        "c5b.ratio_span": span([r["spread_ratio"] for r in rows]),
        "c5b.noise_span": span([r["noise_spread_ratio"] for r in rows], 3),
        "c5b.raw_span": span([r["raw_spread"] for r in rows], 1),
        "c5b.pattern_span": span([r["pattern_spread"] for r in rows]),
        "c5b.quote": quote_tex(entries["C5b"]["paper"]["quote"]),
        "c5b.noise_outcome": "for every model the noise stays below the bound in enough layers, as a control must"
        if not noisy else f"for {models(noisy)} the noise itself reaches the bound in {b_args['min_layers']} or more "
        "of those layers, so that the data cannot resolve it: \\C{5b} is undecided there, and would be decided at "
        + listing(f"about {number(b[n]['preconditions']['noise_control']['documents_to_resolve'])} documents for "
                  f"{model_name(n)}" for n in noisy),
    }

    # C5c, the first keys: in which direction they stand apart, and key 0 on its own.
    apart = [row for model in c.values() for row in model["text"].values()]
    contrasts = [row["first_keys_contrast"] for row in apart if row["stands_apart"]]
    control_pass = [n for n, m in c.items() if m["control_text_no_mask"]["passed"]]
    values |= {
        "c5c.first_keys": str(settings["measures"]["first_keys"]), "c5c.layers": listing(c_args["layers"]),
        "c5c.min_layers": str(c_args["min_layers"]), "c5c.min_over_noise": f"{c_args['min_over_noise']:g}",
        "c5c.quote": quote_tex(entries["C5c"]["paper"]["quote"]),
        "c5c.apart": _apart_sentence("The group of first keys", contrasts, len(apart)),
        # Key 0 only where late queries see it (a sliding window may hide it).
        "c5c.sink_apart": _apart_sentence("Key~0", [row["sink_contrast"] for row in apart if row["sink_stands_apart"]],
                                          sum(_defined(row["sink_contrast"]) for row in apart)),
        "c5c.figure5_apart": listing(
            f"{model_name(n)}'s first keys stand apart in {sum(row['stands_apart'] for row in m['figure5'].values())} of "
            f"{len(m['figure5'])} layers there" for n, m in c.items()),
        "c5c.control_outcome": "For every model, the no-mask control stands apart in fewer layers than the claim "
        "needs, as a control must." if not control_pass else f"The no-mask control stands apart in as many layers "
        f"for {models(control_pass)}, which alone fails the claim there.",
    }

    # C5d, the direction (our question): the judged layers' signed start deficits.
    figure5 = next(iter(d.values()))["figure5_inputs"]
    judged = [model["figure5"][str(layer)] for model in d.values() for layer in model["layers_where_c5a_holds"]]
    iid = [row["start_deficit_visible"] for model in d.values() for row in model["iid_tokens"].values()]
    drawn = [row["drawn_reliability"] for model in d.values() for layer, row in model["figure5"].items()
             if int(layer) in d_args["layers"]]
    values |= {
        "c5d.layers": listing(d_args["layers"]), "c5d.below": f"{d_args['below']:g}",
        "c5d.quote": quote_tex(entries["C5d"]["paper"]["quote"]),
        "c5d.judged": _judged_sentence([row["start_deficit_visible"] for row in judged]),
        "c5d.paper_span": ranging([row["start_deficit_paper"] for row in judged]),
        "c5d.offset_span": span([row["query_offset_share"] for row in judged]),
        "c5d.sink_side": _above_or_below([row["sink"] for row in judged]),
        "c5d.iid_span": ranging(iid), "c5d.iid_direction": _direction(iid),
        "c5d.iid_layers": str(len([v for v in iid if _defined(v)])),
        "fig5.sequences": _per_model_count({name: model["figure5_inputs"]["sequences"] for name, model in d.items()}),
        "fig5.seq_len": number(figure5["seq_len"]),
        "fig5.sampling": (figure5["sampling"] or "n/a").replace("_", r"\_"),
        "fig5.drawn_span": span(drawn), "fig5.layers": listing(d_args["layers"]),
        "fig5.reliable": _reliable_sentence(d, d_args),
    }
    return values


def _reliable_sentence(direction: dict, args: dict) -> str:
    """Whether every model's Figure 5 panels reach the recorded reliability in enough layers."""
    short = [name for name, model in direction.items() if not model["figure5_reliability"]["passed"]]
    rule = f"{number(args['figure5_min_reliability'])} in at least {args['figure5_min_layers']} of them"
    if not short:
        return f"every model's panels reach {rule}."
    return f"the panels of {models(short)} fall short of {rule}, so read them with care."


def _per_model_count(counts: dict[str, int]) -> str:
    """'128', or '128 (gemma3: 224)' when some models differ from the most common count."""
    values = list(counts.values())
    common = max(set(values), key=values.count)
    others = [f"{model_name(name)}: {number(count)}" for name, count in counts.items() if count != common]
    return number(common) + (f" ({', '.join(others)})" if others else "")


def c5a_table(claims: dict) -> str:
    """C5a per model: block reliability of the non-relative residual by layer, on text, on i.i.d. tokens and
    on the same i.i.d. tokens without the mask."""
    models_ = claims["C5a"]["measured"]["models"]
    layers = sorted({int(layer) for model in models_.values() for layer in model["text"]})
    runs = (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", r"no mask"))
    width = len(layers)
    header = " & ".join(str(layer) for layer in layers)
    lines = [rf"\begin{{tabular}}{{@{{}}l{'r' * width * len(runs)}c@{{}}}}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{label}, layer}}" for _, label in runs) + r" & \\",
             "".join(rf"\cmidrule(lr){{{2 + k * width}-{1 + (k + 1) * width}}}" for k in range(len(runs))),
             rf"model & {' & '.join([header] * len(runs))} & C5a \\", r"\midrule"]
    for name, model in models_.items():
        counted = model.get("iid_layers_with_and_without_the_mask", {})
        cells = [number(model[run][str(layer)]["block_reliability"])
                 + ("*" if run == "iid_tokens" and counted.get(str(layer), {}).get("counts_for_the_mask") else "")
                 for run, _ in runs for layer in layers]
        lines.append(rf"{model_name(name)} & {' & '.join(cells)} & {verdict(model['passed'])} \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def c5b_table(claims: dict) -> str:
    """C5b per model and layer of the Figure 5 run: the quantile widths of the raw and the diagonal-normalised
    scores as drawn, their ratio, the split-half noise's ratio, and whether the layer counts as large."""
    lines = [r"\begin{tabular}{@{}llrrrrcc@{}}", r"\toprule",
             r"model & layer & raw width & pattern width & ratio & noise ratio & large & C5b \\", r"\midrule"]
    for name, model in claims["C5b"]["measured"]["models"].items():
        first = model["layer_1"]
        rows = [("1*", "", "", number(first["spread_ratio"], 3), number(first["noise_spread_ratio"], 3), "")]
        rows += [(layer, number(r["raw_spread"], 1), number(r["pattern_spread"]), number(r["spread_ratio"], 3),
                  number(r["noise_spread_ratio"], 3), "yes" if r["large"] else "no") for layer, r in model["layers"].items()]
        for k, row in enumerate(rows):
            lines.append(" & ".join([model_name(name) if k == 0 else "", *row,
                                     verdict(model.get("outcome", model["passed"])) if k == 0 else ""])
                         + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _floors(value, noise) -> str:
    """|contrast| in noise floors."""
    return number(abs(value) / noise, 1) if _defined(value) and _defined(noise) and noise > 0 else "n/a"


def c5c_table(claims: dict) -> str:
    """C5c per model and layer of the Figure 5 run: the first keys' contrast against mid-context keys (mean,
    halves), its noise floor and its size in floors, whether it stands apart; key 0 (the sink) the same
    way; and the no-mask control's first keys in floors."""
    lines = [r"\begin{tabular}{@{}llrrrcrrr c@{}}", r"\toprule",
             r" & & \multicolumn{4}{c}{first keys} & \multicolumn{2}{c}{key 0 (sink)} & no mask & \\",
             r"\cmidrule(lr){3-6}\cmidrule(lr){7-8}",
             r"model & layer & contrast (halves) & floor & floors & apart & contrast & floors & floors & C5c \\",
             r"\midrule"]
    for name, model in claims["C5c"]["measured"]["models"].items():
        control = model["control_text_no_mask"]["layers"]
        for k, (layer, r) in enumerate(model["text"].items()):
            halves = ", ".join(number(v) for v in r["first_keys_contrast_halves"])
            off = control.get(layer, {})
            cells = [model_name(name) if k == 0 else "", layer,
                     f"{number(r['first_keys_contrast'])} ({halves})", number(r["first_keys_noise"], 3),
                     _floors(r["first_keys_contrast"], r["first_keys_noise"]), "yes" if r["stands_apart"] else "no",
                     number(r["sink_contrast"]), _floors(r["sink_contrast"], r["sink_noise"]),
                     _floors(off.get("first_keys_contrast"), off.get("first_keys_noise")),
                     verdict(model["passed"]) if k == 0 else ""]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def c5d_table(claims: dict) -> str:
    """C5d per model and layer of the Figure 5 run: the panel's reliability as drawn, the start deficit the
    paper's way and in the softmax-visible part (mean; halves), the same on i.i.d. tokens, and the sink."""
    lines = [r"\begin{tabular}{@{}llrrrrrc@{}}", r"\toprule",
             r" & & & \multicolumn{3}{c}{start deficit} & & \\", r"\cmidrule(lr){4-6}",
             r"model & layer & panel $r$ & paper's way & softmax-visible (halves) & i.i.d.\ tokens & sink & C5d \\",
             r"\midrule"]
    for name, model in claims["C5d"]["measured"]["models"].items():
        for k, (layer, row) in enumerate(model["figure5"].items()):
            judged = int(layer) in model["layers_where_c5a_holds"]
            halves = ", ".join(number(v) for v in row["start_deficit_visible_halves"])
            iid = model["iid_tokens"].get(layer, {}).get("start_deficit_visible")
            cells = [model_name(name) if k == 0 else "", layer + ("" if judged else "*"),
                     number(row["drawn_reliability"]), number(row["start_deficit_paper"]),
                     f"{number(row['start_deficit_visible'])} ({halves})", number(iid) if layer in model["iid_tokens"] else "",
                     number(row["sink"]), verdict(model["passed"]) if k == 0 else ""]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def decomposition_table(claims: dict) -> str:
    """The variance shares of every kind of run, layers 1-4: relative / query offset / softmax-visible."""
    rows = []
    for name, model in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", "no mask")):
            rows.append((rf"{model_name(name)}, {label}", model["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        if run.endswith("text_causal"):
            rows.append((rf"twin {model_name(run.removesuffix('_text_causal'))}, text",
                         {str(r["layer"]): r for r in layers}))
    for variant, by_layer in claims["C4"]["measured"]["decomposition"].items():
        rows.append((rf"simulation {model_name(variant)}", by_layer))
    layers = ["1", "2", "3", "4"]
    lines = [r"\begin{tabular}{@{}l" + "c" * len(layers) + r"@{}}", r"\toprule",
             "run & " + " & ".join(f"layer {layer}" for layer in layers) + r" \\", r"\midrule"]
    for label, by_layer in rows:
        cells = [" / ".join(number(by_layer[layer][key]) for key, _ in PARTS) if layer in by_layer else "" for layer in layers]
        lines.append(f"{label} & {' & '.join(cells)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


# (measure, table header, name in the text)
LADDER_COLUMNS = (("structure", "structure", "structure"), ("magnitude", "magnitude", "magnitude"),
                  ("first_keys", "first keys", "first keys (their size)"), ("direction", "direction", "direction"),
                  ("reliability", "fig.~5 $r$", "fig. 5 reliability"))


def ladder_table(claims: dict) -> str:
    """The scale ladder: per model (smallest first) and decided layer, C5's four measures, the Figure 5 panel's
    split-half reliability, and the model's C5a-C5d verdicts."""
    rows = ladder.ladder_rows(claims)
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
    means = ladder.model_means(claims)
    order = list(means)
    family_sentences = []
    for names in ladder.families(claims).values():
        small, large = means[names[0]], means[names[-1]]
        changed = [part for part in ladder.C5_PARTS if small["verdicts"][part] != large["verdicts"][part]]
        verdicts = ("no verdict of C5a to C5d changes" if not changed else
                    "; ".join(f"{part} goes from {small['verdicts'][part].lower()} to {large['verdicts'][part].lower()}"
                              for part in changed))
        family_sentences.append(
            f"From {model_name(names[0])} to {model_name(names[-1])} ({large['parameters'] / small['parameters']:.1f} "
            f"times the parameters, the same architecture), the means over the decided layers move so: "
            f"{_moves(small, large)}; {verdicts}.")
    trends = {name: ladder.trend([means[m][key] for m in order]) for key, _, name in LADDER_COLUMNS}
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
