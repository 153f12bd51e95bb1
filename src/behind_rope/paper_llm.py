"""The paper's values and tables for claims C5a and C5b (pretrained RoPE LLMs), and the score
decomposition of every run: LaTeX from results/claims.json, never typed in."""

from __future__ import annotations

from behind_rope.paper_format import listing, number, tex_escape, verdict

PARTS = (("relative_share", "rel."), ("query_offset_share", "offset"), ("visible_share", "visible"))


def c5_values(claims: dict, settings: dict) -> dict[str, str]:
    c5a, c5b, c5 = claims["C5a"]["measured"]["models"], claims["C5b"]["measured"]["models"], settings["claims"]["C5"]
    figure5 = next(iter(c5b.values()))["figure5_inputs"]
    drawn = [row["drawn_reliability"] for model in c5b.values() for layer, row in model["figure5"].items()
             if 2 <= int(layer) <= 4]
    return {
        "c5.threshold": number(c5["min_reliability"]), "c5.min_layers": str(c5["min_layers"]),
        "c5.first_layer": str(c5["layers"][0]), "c5.later_layers": listing(c5["layers"][1:]),
        "c5a.models_passed": str(sum(m["passed"] for m in c5a.values())), "c5a.models_total": str(len(c5a)),
        "c5b.models_passed": str(sum(m["passed"] for m in c5b.values())), "c5b.models_total": str(len(c5b)),
        "c5b.passed_models": listing([rf"\texttt{{{tex_escape(n)}}}" for n, m in c5b.items() if m["passed"]] or ["none"]),
        "c5b.failed_models": listing([rf"\texttt{{{tex_escape(n)}}}" for n, m in c5b.items() if not m["passed"]] or ["none"]),
        "fig5.sequences": number(figure5["sequences"]), "fig5.seq_len": number(figure5["seq_len"]),
        "fig5.sampling": tex_escape(figure5["sampling"] or "n/a"),
        "fig5.min_drawn_reliability": number(min(drawn)), "fig5.max_drawn_reliability": number(max(drawn)),
        **_direction_values(c5b),
    }


def _direction_values(c5b: dict) -> dict[str, str]:
    """The ranges, over the layers C5b judges, of what decides it and of what stands beside it."""
    judged = [model["figure5"][str(layer)] for model in c5b.values() for layer in model["layers_where_c5a_holds"]]

    def span(key):
        values = [row[key] for row in judged if row[key] is not None and row[key] == row[key]]
        return (number(min(values)), number(max(values))) if values else ("n/a", "n/a")

    visible, paper, offset, sink = (span(key) for key in ("start_deficit_visible", "start_deficit_paper",
                                                          "query_offset_share", "sink"))
    return {"c5b.min_visible": visible[0], "c5b.max_visible": visible[1], "c5b.min_paper": paper[0],
            "c5b.max_paper": paper[1], "c5b.min_offset_share": offset[0], "c5b.max_offset_share": offset[1],
            "c5b.min_sink": sink[0], "c5b.max_sink": sink[1]}


def c5_table(claims: dict) -> str:
    """C5a per model: block reliability of the non-relative residual by layer, on text, on i.i.d. tokens and
    on the same i.i.d. tokens without the mask."""
    models = claims["C5a"]["measured"]["models"]
    layers = sorted({int(layer) for model in models.values() for layer in model["text"]})
    runs = (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", r"no mask"))
    width = len(layers)
    header = " & ".join(str(layer) for layer in layers)
    lines = [rf"\begin{{tabular}}{{@{{}}l{'r' * width * len(runs)}c@{{}}}}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{width}}}{{c}}{{{label}, layer}}" for _, label in runs) + r" & \\",
             "".join(rf"\cmidrule(lr){{{2 + k * width}-{1 + (k + 1) * width}}}" for k in range(len(runs))),
             rf"model & {' & '.join([header] * len(runs))} & C5a \\", r"\midrule"]
    for name, model in models.items():
        cells = [number(model[run][str(layer)]["block_reliability"]) for run, _ in runs for layer in layers]
        lines.append(rf"\texttt{{{tex_escape(name)}}} & {' & '.join(cells)} & {verdict(model['passed'])} \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def c5b_table(claims: dict) -> str:
    """C5b per model and layer of the Figure 5 run: what the panel's reliability is, the start deficit the
    paper's way and in the softmax-visible part (mean; halves), and the sink."""
    models = claims["C5b"]["measured"]["models"]
    lines = [r"\begin{tabular}{@{}llrrrrc@{}}", r"\toprule",
             r"model & layer & panel $r$ & deficit, paper's way & deficit, softmax-visible (halves) & sink & C5b \\",
             r"\midrule"]
    for name, model in models.items():
        for k, (layer, row) in enumerate(model["figure5"].items()):
            checked = int(layer) in model["layers_where_c5a_holds"]
            halves = ", ".join(number(v) for v in row["start_deficit_visible_halves"])
            cells = [rf"\texttt{{{tex_escape(name)}}}" if k == 0 else "", layer + ("" if checked else "*"),
                     number(row["drawn_reliability"]), number(row["start_deficit_paper"]),
                     f"{number(row['start_deficit_visible'])} ({halves})", number(row["sink"]),
                     verdict(model["passed"]) if k == 0 else ""]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def decomposition_table(claims: dict) -> str:
    """The variance shares of every kind of run, layers 1-4: relative / query offset / softmax-visible."""
    rows = []
    for name, model in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", r"i.i.d.\ tokens"), ("iid_tokens_no_mask", "no mask")):
            rows.append((rf"\texttt{{{tex_escape(name)}}}, {label}", model["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        if run.endswith("text_causal"):
            rows.append((rf"twin \texttt{{{tex_escape(run.removesuffix('_text_causal'))}}}, text",
                         {str(r["layer"]): r for r in layers}))
    for variant, by_layer in claims["C4"]["measured"]["decomposition"].items():
        rows.append((rf"simulation \texttt{{{tex_escape(variant)}}}", by_layer))
    layers = ["1", "2", "3", "4"]
    lines = [r"\begin{tabular}{@{}l" + "c" * len(layers) + r"@{}}", r"\toprule",
             "run & " + " & ".join(f"layer {layer}" for layer in layers) + r" \\", r"\midrule"]
    for label, by_layer in rows:
        cells = [" / ".join(number(by_layer[layer][key]) for key, _ in PARTS) if layer in by_layer else "" for layer in layers]
        lines.append(f"{label} & {' & '.join(cells)} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
