"""The paper's values and table for claims C6-C8 (where absolute position comes from), from results/claims.json."""

from __future__ import annotations

from behind_rope.paper_format import listing, models, number, span, tex_escape, verdict


def position_values(claims: dict, settings: dict) -> dict[str, str]:
    c6, c7, c8a, c8b = (claims[name]["measured"] for name in ("C6", "C7", "C8a", "C8b"))
    c6_settings, c7_settings, c8_settings = (settings["claims"][name] for name in ("C6", "C7", "C8"))
    variants = settings["llm"]["variants"]
    # Where the controls swap the embedding (the same swap at a later position), and the NTK factors.
    later = [variants[name]["replace_embedding"]["position"] for name in c7_settings["control_replacements"]
             if variants[name]["replace_embedding"]["position"] != 0]
    factors = [variants[name]["ntk_factor"] for name in c8_settings["ntk_variants"]]
    removed = {model: result["fraction_removed"][c7_settings["replacement"]] for model, result in c7["models"].items()}
    identity = [gap for result in c7["models"].values() for gap in result["largest_identity_change"].values()]
    closed = [result["position_0_closed_system"] for result in c7["models"].values()]
    sliding = c8b["by_layer_type"].get("sliding_attention", {})
    shares = [v for v in sliding.get("residual_stream_share_early", []) if v is not None]

    def flipped(result):  # the replacement turns the first key's residual around in some layer
        before, after = result["layers"]["original"], result["layers"][c7_settings["replacement"]]
        return any((before[k]["first_key_early"] or 0) * (after[k]["first_key_early"] or 0) < 0 for k in before)

    return {
        "c6.models_passed": models([m for m, r in c6["models"].items() if r["passed"]]),
        "c6.models_failed": models([m for m, r in c6["models"].items() if not r["passed"]]),
        "c6.threshold": number(c6_settings["min_reliability"]), "c6.min_layers": str(c6_settings["min_layers"]),
        "c6.layers": listing(c6_settings["layers"]), "c6.sim_threshold": number(c6_settings["simulation_min_reliability"]),
        "c6.sim_from_layer": str(c6_settings["simulation_from_layer"]),
        "c7.layers": listing(c7_settings["layers"]), "c7.late_position": listing(later) if later else "n/a",
        "c8.factors": listing(f"{factor:g}" for factor in factors), "c8.layers": listing(c8_settings["layers"]),
        "c7.threshold": number(c7_settings["min_fraction_removed"]),
        "c7.reading": number(c7_settings["reading_fraction"], 1),
        "c7.removed": span(removed.values()),
        "c7.models_passed": models([m for m, r in c7["models"].items() if r["passed"]]),
        "c7.models_failed": models([m for m, r in c7["models"].items() if not r["passed"]]),
        "c7.identity_gap": f"{max(identity):.1e}" if identity else "n/a",
        "c7.closed_models": models([m for m, r in c7["models"].items() if r["position_0_closed_system"]["passed"]]),
        "c7.closed_gap": f"{max(c['largest_gap_same_first_token'] for c in closed):.1e}",
        "c7.open_gap": f"{min(c['smallest_gap_different_first_tokens'] for c in closed):.1e}",
        "c8.ntk_models": models(list(c8a["models"])),
        "c8a.models_passed": models([m for m, r in c8a["models"].items() if r["passed"]]),
        "c8b.model": rf"\texttt{{{tex_escape(c8b['model'])}}}",
        "c8b.correlation": number(sliding.get("depth_correlation")),
        "c8b.threshold": number(c8_settings["min_depth_correlation"]),
        "c8b.min_share": number(min(shares), 3) if shares else "n/a",
        "c8b.max_share": number(max(shares), 3) if shares else "n/a",
        "c7.sign_flipped": models([m for m, r in c7["models"].items() if flipped(r)]),
    }


def position_table(claims: dict) -> str:
    """Per model: C7's fractions removed (the claim and its controls) and the sink, and C8a's shares by NTK factor."""
    c7, c8a = claims["C7"]["measured"]["models"], claims["C8a"]["measured"]["models"]
    variants = list(next(iter(c7.values()))["fraction_removed"])
    factors = sorted({factor for result in c8a.values() for factor in result["residual_stream_share_early"]}, key=float)
    lines = [r"\begin{tabular}{@{}l" + "r" * (len(variants) + 1) + "c" + "r" * len(factors) + r"c@{}}", r"\toprule",
             rf" & \multicolumn{{{len(variants) + 2}}}{{c}}{{\C7: fraction of the first-key component removed}} & "
             rf"\multicolumn{{{len(factors) + 1}}}{{c}}{{\C{{8a}}: residual-stream share, NTK factor}} \\",
             "model & " + " & ".join(tex_escape(v) for v in variants) + r" & $|R|$ & \C7 & "
             + " & ".join(f"$s={f}$" for f in factors) + r" & \C{8a} \\", r"\midrule"]
    for model, result in c7.items():
        cells = [number(result["fraction_removed"][v]) for v in variants]
        cells += [number(result["first_key_early_original"]), verdict(result["passed"])]
        ntk = c8a.get(model)
        cells += [number(ntk["residual_stream_share_early"][f]) if ntk else "" for f in factors]
        cells.append(verdict(ntk["passed"]) if ntk else "")
        lines.append(rf"\texttt{{{tex_escape(model)}}} & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
