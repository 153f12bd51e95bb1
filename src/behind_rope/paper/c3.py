"""The paper's values and tables for claim C3 (the trained NoPE twin over its seeds): LaTeX from
results/claims.json, never typed in.  Every phrase whose meaning depends on a verdict is made here."""

from __future__ import annotations

from behind_rope.paper.format import bound, interval, listing, models, number, percent, span, tex_escape, verdict

# What Section 4.2 of the paper says of each panel of Figure 3, short (behind_rope.claims.panels has the full
# quotes and the statistic each becomes).
PANEL_STATEMENTS = {
    ("a", "offdiag_over_diag"): "close to zero except along the main diagonal",
    ("b", "offdiag_over_diag_rise_from_a"): "the ratio of off-diagonal to diagonal values increases substantially",
    ("b", "sink_column_z"): "a vivid line [...] at the 0th column",
    ("c", "diagonal_trend_correlation"): "the main diagonal values decrease with increasing $i$",
    ("c", "offdiag_spread_over_diag_spread"): "the off-diagonal values remain nearly uniform",
    ("d", "offdiag_over_diag_fall_from_c"): "the ratio between the diagonal and off-diagonal elements is "
                                            "significantly increased compared to (c)",
    ("e", "correlation_with_d"): "the trend is almost identical to (d)",
    ("f", "locality"): "attention increases strictly with $j$ for fixed $i$",
    ("g", "locality"): "appears to laterally invert the pattern",
    ("h", "locality"): "a subsequent LayerNorm restores it",
    ("i", "locality"): "the expected pattern of strict increase",
}
PANEL_STATISTICS = {
    "offdiag_over_diag": "mean off-diagonal / mean diagonal",
    "offdiag_over_diag_rise_from_a": "rise of that ratio from (a)",
    "sink_column_z": "key-0 column above the others, in s.d.",
    "diagonal_trend_correlation": "correlation of the diagonal with $i$",
    "offdiag_spread_over_diag_spread": "s.d.\\ off the diagonal / s.d.\\ on it",
    "offdiag_over_diag_fall_from_c": "fall of off-diagonal / diagonal from (c)",
    "correlation_with_d": "correlation with (d), lower triangle",
    "locality": "locality",
}
CONTROLS = {"no_mask_probe": "the same weights without the mask", "untrained": "the untrained twin's seeds"}


def statistic_label(name: str) -> str:
    """'locality_layer_2' -> 'locality, layer 2' (a table header)."""
    if name.startswith("locality_layer_"):
        return f"locality, layer {name.removeprefix('locality_layer_')}"
    return tex_escape(name.replace("_", " "))


def statistic_phrase(name: str) -> str:
    """'locality_layer_2' -> 'locality in layer~2' (in a sentence)."""
    if name.startswith("locality_layer_"):
        return f"locality in layer~{name.removeprefix('locality_layer_')}"
    return f"the {tex_escape(name.replace('_', ' '))}"


def _verb(subjects: list[str], singular: str, plural: str) -> str:
    return singular if len(subjects) == 1 else plural


def rule_outcome(rules: dict) -> str:
    """'locality in layer~3 passes the seed rule; locality in layer~2 and the amplification fail it'."""
    passed = [statistic_phrase(name) for name, rule in rules.items() if rule["passed"]]
    failed = [statistic_phrase(name) for name, rule in rules.items() if not rule["passed"]]
    parts = []
    if passed:
        parts.append(f"{listing(passed)} {_verb(passed, 'passes', 'pass')} the seed rule")
    if failed:
        parts.append(f"{listing(failed)} {_verb(failed, 'fails', 'fail')} {'it' if passed else 'the seed rule'}")
    return "; ".join(parts)


def _check_phrase(name: str) -> str:
    """Why a failed check of C3.measured.checks fails the claim, in words."""
    if name.endswith("_on_iid_tokens"):
        return f"{statistic_phrase(name.removesuffix('_on_iid_tokens'))} fails the seed rule on the probe"
    return {"enough_seeds": "there are fewer seeds than the rule needs",
            "training_sanity": "a twin fails the sanity check",
            "no_mask_probe_fails": "the no-mask control passes the rule",
            "untrained_twin_fails": "the untrained twin passes the rule"}.get(name, tex_escape(name.replace("_", " ")))


def before_the_cap(seed: dict, cap: int) -> bool:
    """Whether the training-length rule stopped a seed before the cap (it may also trigger at the cap itself)."""
    return bool(seed["stopped_early"]) and seed["steps"] < cap


def _mean(values) -> float:
    values = [v for v in values if v is not None and v == v]
    return sum(values) / len(values) if values else float("nan")


def c3_values(claim: dict, args: dict, settings: dict) -> dict[str, str]:
    measured = claim["measured"]
    seeds, rules, controls = measured["seeds"], measured["probe"]["statistics"], measured["controls"]
    sanity, rope = measured["sanity"], args["rope_twin"]
    nope_sanity = [seed["sanity"] for seed in seeds.values()]
    untrained_sanity = [seed["sanity"] for seed in controls["untrained"]["seeds"].values()]
    cap = settings["training"]["steps"]
    stopped = sum(before_the_cap(seed, cap) for seed in seeds.values())
    stopped_text = ("every seed stopped by the rule before the cap" if stopped == len(seeds) else
                    "the rule stopped none of them before the cap" if stopped == 0 else
                    f"the rule stopped {stopped} of the {len(seeds)} before the cap, the others reached it")
    insane = [name for name, entry in sanity.items() if not entry["passed"]]
    sanity_text = (f"every seed of the NoPE twin and the RoPE twin beat it by at least {number(args['min_gain_over_unigram'])} "
                   "nats, as the sanity check asks" if not insane else
                   f"{models(insane)} "
                   f"{_verb(insane, 'does', 'do')} not beat it by {number(args['min_gain_over_unigram'])} nats, "
                   "so the sanity check fails")
    if not any(control["passed"] for control in controls.values()):
        controls_text = f"{listing(CONTROLS.get(name, tex_escape(name)) for name in controls)} fail the rule, as controls must"
    else:
        controls_text = "; ".join(f"{CONTROLS.get(name, tex_escape(name))} "
                                  + ("pass the rule, which alone fails the claim" if control["passed"]
                                     else "fail the rule, as a control must") for name, control in controls.items())
    failed_checks = [_check_phrase(name) for name, ok in measured["checks"].items() if not ok]
    panels = measured["panels"]
    holding = [f"({letter})" for letter, panel in panels.items() if panel["passed"]]
    # Held-out text is recorded: the seeds' mean locality with and without the mask, layer by layer.
    localities = [name for name in rules if name.startswith("locality_layer_")]

    def text_means(role):
        return listing(number(_mean(seed[role][name] for seed in seeds.values())) for name in localities)

    layers = listing(name.removeprefix("locality_layer_") for name in localities)
    return {
        "c3.seeds": str(len(seeds)), "c3.min_seeds": str(args["min_seeds"]),
        "c3.seed_phrase": "one training seed" if len(seeds) == 1 else f"{len(seeds)} training seeds",
        "c3.trained_from": "one seed" if len(seeds) == 1 else f"each of {len(seeds)} seeds",
        "c3.seed_rule": _seed_rule_sentence(args),
        "c3.min_seeds_passing": str(args["min_seeds_passing"]), "c3.confidence": percent(args["confidence"]),
        "c3.locality_layers": listing(args["locality_layers"]), "c3.threshold": number(args["min_locality"]),
        "c3.amplification_layer": str(args["amplification_layer"]),
        "c3.min_amplification": number(args["min_amplification"], 1),
        "c3.min_gain": number(args["min_gain_over_unigram"]),
        "c3.steps": span([seed["steps"] for seed in seeds.values()]), "c3.stopped": stopped_text,
        "c3.nope_loss": span([entry["validation_loss"] for entry in nope_sanity]),
        "c3.nope_gain": span([entry["gain_over_unigram"] for entry in nope_sanity]),
        "c3.rope_loss": number(sanity[rope]["validation_loss"]), "c3.rope_gain": number(sanity[rope]["gain_over_unigram"]),
        "c3.untrained_loss": span([entry["validation_loss"] for entry in untrained_sanity]),
        "c3.unigram_loss": number(nope_sanity[0]["unigram_loss"]),
        "c3.sanity": sanity_text,
        "c3.simulated_key_slope": number(max(measured["simulation_key_slopes"].values()), 4),
        "c3.probe_outcome": rule_outcome(rules),
        "c3.probe_summary": "; ".join(f"{statistic_label(name)} {interval(rule)}, {rule['seeds_passing']} of "
                                      f"{rule['seeds']} seeds clear it" for name, rule in rules.items()),
        "c3.controls_outcome": controls_text,
        "c3.controls_summary": ", ".join(f"{CONTROLS.get(name, tex_escape(name))} "
                                         f"{'pass' if control['passed'] else 'fail'}" for name, control in controls.items()),
        "c3.verdict_reason": _verdict_reason(claim, failed_checks),
        "c3.competence": _competence_sentence(claim, args),
        "c3.min_order_gap": number(args["min_order_gap"]), "c3.max_loss_above_rope": number(args["max_loss_above_rope"]),
        "c3.order_positions": listing(args["order_positions"]), "c3.order_sequences": f"{args['order_sequences']:,}",
        "c3.min_power": number(args["min_power"]), "c3.order_confidence": percent(args["order_confidence"]),
        "c3.panels_passed": str(len(holding)), "c3.panels_total": str(len(panels)),
        "c3.panels_holding": listing(holding) if holding else "none",
        "c3.text_layers": layers, "c3.text_locality": text_means("text"),
        "c3.text_locality_no_mask": text_means("text_no_mask"),
        "c3.power": _power_sentence(measured["probe_power"], args["min_locality"], args["min_power"]),
    }


def _seed_rule_sentence(args: dict) -> str:
    """How a statistic of trained weights passes: the rule written for the number of seeds this scale trains."""
    if args["min_seeds"] == 1:
        return ("A competent twin costs this scale about as much CPU time as the rest of its claims, so it trains one "
                "seed, and each statistic passes by the \\emph{seed rule} written for one: that seed clears the bound. "
                "The probe's sampling noise is held by the power precondition below; the variation from seed to seed "
                "is not, and the paper scale decides over five seeds.")
    return ("A statistic of trained weights differs from seed to seed and, in its last bits, from one CPU's float "
            "kernels to another's, so no verdict rests on one run: each statistic passes by the \\emph{seed rule} when "
            f"the lower end of the {percent(args['confidence'])} t-interval of its mean over the seeds clears the bound "
            rf"\emph{{and}} at least {args['min_seeds_passing']} of the {args['min_seeds']} seeds clear it on their own.")


def _verdict_reason(claim: dict, failed_checks: list[str]) -> str:
    criteria = ("every part of the rule holds" if not failed_checks else "the rule fails because " + listing(failed_checks))
    if claim.get("outcome") != "UNDECIDED":
        return criteria.replace("the rule fails because", "it fails because", 1)
    unmet = listing(f"the {name} precondition" for name in claim["undecided"]["preconditions_unmet"])
    return (f"{unmet} {_verb(claim['undecided']['preconditions_unmet'], 'is', 'are')} not met, so the statistics "
            f"below answer nothing about the paper ({criteria}, which decides nothing); what would decide it: "
            f"{tex_escape(claim['undecided']['would_decide'])}")


def _competence_sentence(claim: dict, args: dict) -> str:
    """The competence precondition, seed by seed: the order gap and the loss above the RoPE twin."""
    seeds, rope = claim["measured"]["seeds"], claim["measured"]["rope_twin_order"]
    gaps = span([seed["competence"]["uses_order"]["order_gap"] for seed in seeds.values()])
    above = span([seed["competence"]["loss_above_rope"] for seed in seeds.values()])
    failing = [name for name, seed in seeds.items() if not seed["competence"]["passed"]]
    state = ("every seed meets it" if not failing and rope["passed"] else
             f"{models(failing) if failing else 'no NoPE seed'} {'fails' if len(failing) == 1 else 'fail'} it"
             + ("" if rope["passed"] else ", and the RoPE twin does not use order either"))
    gap = claim["measured"].get("loss_gap")
    over_seeds = ""
    if gap and gap["nope_seeds"] + gap["rope_seeds"] >= 3:
        low, high = gap["interval"]
        over_seeds = (f" Over the seeds, the NoPE twin's mean held-out loss lies {number(gap['difference'])} nats above "
                      f"the mean of the RoPE twin's {gap['rope_seeds']} "
                      f"{'seed' if gap['rope_seeds'] == 1 else 'seeds'}, {percent(gap['confidence'])} interval "
                      f"[{number(low)}, {number(high)}] with the seeds' spread pooled: the bound of "
                      f"{number(gap['bound'])} is {'met' if gap['passed'] else 'not met'}"
                      + (f" (about {gap['seeds_to_resolve']} seeds of each twin would resolve it)"
                         if not gap["passed"] and gap["seeds_to_resolve"] else "") + ".")
    return (f"The NoPE seeds' order gaps are {gaps} nats and the RoPE twin's {number(rope['order_gap'])}; the seeds' "
            f"held-out losses lie {above} nats above the RoPE twin's: {state}.{over_seeds}")


def _power_sentence(power: dict, bound_locality: float, min_power: float) -> str:
    """The power precondition: how likely a twin at the bound would pass the locality check at the probe's size."""
    powers = [entry["power"] for entry in power["power"].values()]
    sequences = next(iter(power["power"].values()))["sequences"]
    weak = sum(value < min_power for value in powers)
    would = (f"A twin whose every query had the layer-{power['layer']} relative key slope the amplification bound asks for "
             f"would reach a locality of {number(bound_locality)} with a probability of {span(powers)} at the probe's "
             f"{sequences:,} sequences, by each seed's sampling noise row by row")
    if weak:
        needed = [entry["sequences_for_power"] for entry in power["power"].values() if entry["power"] < min_power]
        size = ("no size would do" if None in needed else
                f"about {max(needed):,} sequences would, were that noise to fall as one over the root of their number")
        return f"{would}: below {number(min_power)} for {weak} of the {len(powers)} seeds ({size})."
    return f"{would}: the probe has the power the precondition asks ({number(min_power)} or more)."


def seeds_table(claim: dict, cap: int) -> str:
    """C3 per seed on the i.i.d. probe (steps trained, each statistic, whether the seed passes on its own,
    its sanity check), then each statistic over the seeds by the seed rule, for the probe (which decides)
    and for its two controls, and the held-out text (recorded)."""
    measured = claim["measured"]
    seeds, probe, controls = measured["seeds"], measured["probe"], measured["controls"]
    names = list(probe["statistics"])
    width = 2 + len(names) + 2
    lines = [rf"\begin{{tabular}}{{@{{}}lr{'c' * len(names)}cc@{{}}}}", r"\toprule",
             "seed & steps & " + " & ".join(statistic_label(name) for name in names) + r" & on its own & sanity \\",
             r"\midrule"]
    for seed in seeds.values():
        steps = number(seed["steps"]) + ("" if before_the_cap(seed, cap) else r"$^\dagger$")
        cells = [str(seed["seed"]), steps, *(number(seed["probe"][name]) for name in names),
                 verdict(seed["passes_on_its_own"]), verdict(seed["sanity"]["passed"])]
        lines.append(" & ".join(cells) + r" \\")

    def over_seeds(title: str, result: dict) -> list[str]:
        rules = result["statistics"]
        first = next(iter(rules.values()))
        return [r"\midrule", rf"\multicolumn{{{width}}}{{@{{}}l}}{{\emph{{{title}}}}} \\",
                rf"\multicolumn{{2}}{{@{{}}l}}{{mean [{percent(first['confidence'])} interval]}} & "
                + " & ".join(interval(rules[name]) for name in names) + r" & & \\",
                r"\multicolumn{2}{@{}l}{seeds clearing the bound} & "
                + " & ".join(f"{rules[name]['seeds_passing']} of {rules[name]['seeds']} "
                             f"({bound(rules[name]['direction'], rules[name]['threshold'])})" for name in names) + r" & & \\",
                r"\multicolumn{2}{@{}l}{seed rule} & " + " & ".join(verdict(rules[name]["passed"]) for name in names)
                + rf" & \multicolumn{{2}}{{c}}{{all: {verdict(result['passed'])}}} \\"]

    lines += over_seeds("Over the seeds, the i.i.d.\\ probe with the mask (decides C3)", probe)
    lines += over_seeds("Control: the same weights and tokens without the mask (must fail)", controls["no_mask_probe"])
    lines += over_seeds("Control: the untrained twin's seeds (must fail)", controls["untrained"])
    lines += [r"\midrule", rf"\multicolumn{{{width}}}{{@{{}}l}}{{\emph{{Recorded: held-out text, mean over the seeds}}}} \\"]
    for role, label in (("text", "with the mask"), ("text_no_mask", "without the mask")):
        lines.append(rf"\multicolumn{{2}}{{@{{}}l}}{{{label}}} & "
                     + " & ".join(number(_mean(seed[role][name] for seed in seeds.values())) for name in names) + r" & & \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def panels_table(claim: dict) -> str:
    """Figure 3 panel by panel: what the paper says, our statistic, its pre-registered bound, its mean and
    interval over the seeds, the seeds that clear it, its verdict, and the panel's."""
    lines = [r"\begin{tabularx}{\linewidth}{@{}l>{\raggedright\arraybackslash}X>{\raggedright\arraybackslash}p{1.45in}"
             r"rccc@{}}", r"\toprule",
             r"panel & the paper (Section 4.2) & our statistic & bound & mean [interval] & seeds & verdict \\",
             r"\midrule"]
    for letter, panel in claim["measured"]["panels"].items():
        for k, (name, rule) in enumerate(panel["statistics"].items()):
            statement = PANEL_STATEMENTS.get((letter, name), "")
            label = f"({letter}) {verdict(panel['passed'])}" if k == 0 else ""
            cells = [label, f"``{statement}''" if statement else "", PANEL_STATISTICS.get(name, tex_escape(name)),
                     bound(rule["direction"], rule["threshold"]), interval(rule),
                     f"{rule['seeds_passing']} of {rule['seeds']}", verdict(rule["passed"])]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabularx}"]
    return "\n".join(lines) + "\n"
