"""The paper's values and table for claims C6-C9 (where absolute position comes from), from results/claims.json.

Every number is read from the claims (results/claims/position.json, merged into results/claims.json) or
from the settings (the pre-registration's criteria and the model variants); every phrase whose meaning
depends on a verdict ("supported", "contradicted") is written here from the verdicts, never in main.tex.
"""

from __future__ import annotations

import math
import re

import numpy as np

from behind_rope.paper.format import listing, model_name, models, number, percent, span, tex_escape, verdict

# The reading's statements as the paper names them (C8's quote holds two, decided as C8a and C8b).
STATEMENTS = {
    "C6": "that the causal mask ties each query's softmax normaliser to its absolute position",
    "C7": "that replacing the BOS embedding cuts the residual-stream part at early queries",
    "C8a": "that NTK-scaled RoPE suppresses the residual-stream part",
    "C8b": "that a sliding window lets the residual-stream part grow with depth",
    "C9": "that position~0 evolves as a closed system that attention-sink heads read",
}
CLAIM_TEX = {"C6": r"\C6", "C7": r"\C7", "C8a": r"\C{8a}", "C8b": r"\C{8b}", "C9": r"\C9"}
STANCES = ("supported", "contradicted", "not shown", "undecided")


def _defined(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def signed_percent(fraction) -> str:
    """0.123 -> '12\\,\\%', -0.4 -> '\\ensuremath{-}40\\,\\%' (a measured fraction, rounded to a whole percent)."""
    return number(100 * fraction, 0) + r"\,\%" if _defined(fraction) else "n/a"


def _small(value) -> str:
    """A value that may be far below a thousandth: '0.012', or '$1.4 \\times 10^{-5}$'."""
    return scientific(value) if _defined(value) and 0 < abs(value) < 1e-3 else number(value, 3)


def scientific(value, digits: int = 1) -> str:
    """3.2e-07 -> '$3.2 \\times 10^{-7}$', 0 -> '0' (a value far below the printed decimals)."""
    if not _defined(value):
        return "n/a"
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


def _texttt(name: str) -> str:
    return rf"\texttt{{{tex_escape(name)}}}"


def _factors(claim: dict) -> list[str]:
    """C8a's NTK factors, as the claims key them ('2', '4', '8'), in order."""
    return sorted({f for m in claim["measured"]["models"].values() for f in m["factors"]}, key=float)


# --- the reading's statements: supported, contradicted, not shown or undecided --------------------------

SUPPORTED, CONTRADICTED, NOT_SHOWN, UNDECIDED = STANCES


def _worst(found: dict[str, str], reasons: list[str], passing: list[str], caveat: str = "",
           counted: list[str] = ()) -> tuple[str, str, str]:
    """A claim decided over several models (``found``: model -> stance, for the models where it fails):
    contradicted if any model contradicts it, else not shown if any leaves it within the noise, else undecided;
    with its reason and, where the stance is not every model's, the models it is for ('for \\texttt{a}').  The
    passing models are named after the reason ('it holds in ...'), or, when ``caveat`` names them, only counted."""
    stance = next(stance for stance in (CONTRADICTED, NOT_SHOWN, UNDECIDED) if stance in found.values())
    those = [name for name, s in found.items() if s == stance]
    every = len(those) == len(found) + len(passing) + len(counted)
    scope = "" if every or "simulation" in those else f"for {models(those)}"
    return stance, "; ".join(reasons) + _holds_in(passing) + caveat, scope


def _holds_in(names) -> str:
    return f"; it holds in {models(names)}" if names else ""


def _c6_stance(claim: dict, args: dict) -> tuple[str, str]:
    measured = claim["measured"]
    passing = [m for m, r in measured["models"].items() if r["passed"]]
    # A passing model whose no-mask run carries the slope too in some layer: said beside it.
    holding = [model_name(m) + (f", whose no-mask run carries it too in {r['no_mask']['layers_holding']} of the checked "
                                "layers" if r["no_mask"]["layers_holding"] else "")
               for m, r in measured["models"].items() if r["passed"]]
    caveat = f"; it holds in {listing(holding)}" if holding else ""
    if claim["passed"]:
        return SUPPORTED, "the heads of every model carry the mask's growth of $\\log Z$ and the no-mask runs do not" + caveat
    found, reasons, unmeasured, underpowered = {}, [], [], []
    for model, result in measured["models"].items():
        if result["passed"]:
            continue
        if result.get("outcome") == "UNDECIDED":  # its floors could hide a head at the bound
            found[model] = UNDECIDED
            underpowered.append(model)
            continue
        if result["probe"]["passed"]:  # its own run shows it, but so does its no-mask run
            found[model] = UNDECIDED
            continue
        heads = [slope for row in result["probe"]["layers"].values()
                 for slope, floor, ratio in zip(row["slopes"], row["floors"], row["slope_ratio_to_simulation"], strict=True)
                 if _defined(slope) and _defined(floor) and _defined(ratio)]
        # No head with a slope and a ratio to the simulation's: nothing was measured, nothing shown or not.
        found[model] = UNDECIDED if not heads else NOT_SHOWN  # a weaker slope is not the opposite of one
        unmeasured += [model] if not heads else []
    reasons += [f"in {model_name(m)}, {_c6_heads(measured['models'][m], args)}"
                for m, s in found.items() if s == NOT_SHOWN]
    if names := [m for m, s in found.items() if s == UNDECIDED and m not in unmeasured + underpowered]:
        reasons.append(f"the no-mask run passes the same check in {models(names)}")
    if underpowered:
        reasons.append(f"the noise could hide a head at {number(args['min_resolvable_slope_ratio'])} of the simulation's "
                       f"slope in {models(underpowered)}")
    if unmeasured:
        reasons.append(f"no head's slope can be set against the simulation's in {models(unmeasured)}")
    simulation = measured["simulation"]
    if not simulation["probe"]["passed"] or simulation["no_mask"]["passed"]:
        found["simulation"] = UNDECIDED
        reasons.append("the parameter-free simulation does not separate the mask from its absence")
    return _worst(found, reasons, [], caveat, passing)


def _c6_heads(result: dict, args: dict) -> str:
    """Which of C6's two conditions a model's heads miss, counted over the checked layers: '2 of its 12 heads carry
    it (3 with the slope above the noise, 1 with at least 0.25 of the simulation's, 6 with it negative beyond the
    noise)'."""
    rows = [result["probe"]["layers"][str(layer)] for layer in args["layers"]]
    heads = [(slope, floor, ratio) for row in rows
             for slope, floor, ratio in zip(row["slopes"], row["floors"], row["slope_ratio_to_simulation"], strict=True)]
    beyond = args["floor_multiple"]
    above = sum(_defined(s) and _defined(f) and s > beyond * f for s, f, _ in heads)
    negative = sum(_defined(s) and _defined(f) and s < -beyond * f for s, f, _ in heads)
    strong = sum(_defined(r) and r >= args["min_slope_ratio"] for _, _, r in heads)
    counts = [f"{above} with the slope above the noise",
              f"{strong} with at least {number(args['min_slope_ratio'])} of the simulation's"]
    counts += [f"{negative} with it negative beyond the noise"] if negative else []
    carrying = sum(row["heads_carrying"] for row in rows)
    verb = "carries" if carrying == 1 else "carry"
    return f"{carrying} of its {len(heads)} heads in the checked layers {verb} it ({listing(counts)})"


def _c6_power(measured_models: dict) -> str:
    """Whether each model's floors could see a head at the bound wherever that could change its verdict, in words."""
    undecided = {m: r for m, r in measured_models.items() if r["outcome"] == "UNDECIDED"}
    if not undecided:
        return ("in every model the floors could see a head at that bound wherever one could change the verdict, so "
                "each verdict is decided")
    def needed(result):
        counts = [result[run]["preconditions"]["power"]["sequences_to_resolve"] for run in ("probe", "no_mask")]
        return max((n for n in counts if n), default=None)

    return "the floors could hide a head at that bound in " + listing(
        model_name(m) + (f" (about {number(needed(r))} sequences would resolve it)" if needed(r) else "")
        for m, r in undecided.items())


def _c7_stance(claim: dict, replacement: str) -> tuple[str, str]:
    measured = claim["measured"]
    decided = measured["decided_by"]
    result = measured["models"][decided]
    effect = result["replacements"][replacement]
    controls = [name for name, control in claim["controls"].items() if control["passed"]]
    where = f"on {model_name(decided)}"
    if claim["passed"]:
        return SUPPORTED, f"{where} the replacement removes {signed_percent(effect['fraction_removed'])} of it"
    if result.get("outcome") == "UNDECIDED":
        return UNDECIDED, (f"{where} the noise could hide the smallest removal the claim counts; "
                           f"{effect['preconditions']['power']['would_decide']} would decide it")
    if effect["removes"] and controls:
        return UNDECIDED, (f"{where} the control{'s' * (len(controls) > 1)} {listing(_texttt(c) for c in controls)} "
                           f"remove{'s' * (len(controls) == 1)} it too")
    if not effect["above_floor"]:
        return NOT_SHOWN, f"{where} the change the replacement makes is within the noise"
    if effect["fraction_removed"] < 0:
        return CONTRADICTED, (f"{where} the replacement strengthens key~0's positional signal "
                              f"($\\rho = {number(effect['ratio'])}$) instead of cutting it")
    return NOT_SHOWN, (f"{where} the replacement removes {signed_percent(effect['fraction_removed'])}, less than the "
                       "criterion asks in the mean or in a half")


def _c8a_stance(claim: dict, args: dict) -> tuple[str, str]:
    measured = claim["measured"]
    passing = [m for m, r in measured["models"].items() if r["passed"]]
    if claim["passed"]:
        return SUPPORTED, (f"NTK removes key~0's positional signal beyond the noise at every factor in {models(passing)}, "
                           "and not the other keys'")
    found, reasons = {}, []
    for model, result in measured["models"].items():
        if not result["passed"] and result.get("outcome") == "UNDECIDED":
            found[model] = UNDECIDED
        elif not result["passed"]:
            rows = [row["key0"] for row in result["factors"].values()]
            grows = any(_defined(row["fall"]) and _defined(row["floor"]) and row["fall"] < -args["floor_multiple"] * row["floor"]
                        for row in rows)
            found[model] = CONTRADICTED if grows else NOT_SHOWN
    if names := [m for m, s in found.items() if s == CONTRADICTED]:
        reasons.append(f"key~0's positional signal grows beyond the noise at some factor in {models(names)}")
    if names := [m for m, s in found.items() if s == NOT_SHOWN]:
        counts = [f"{sum(not row['passed'] for row in measured['models'][m]['factors'].values())} of "
                  f"{len(measured['models'][m]['factors'])} factors in {model_name(m)}" for m in names]
        reasons.append(f"NTK does not cut key~0's positional signal alone, beyond the noise, at {listing(counts)}")
    if names := [m for m, s in found.items() if s == UNDECIDED]:
        reasons.append(f"the noise could hide a cut of {percent(args['min_resolvable_fall'])} of the signal at some "
                       f"factor in {models(names)}")
    return _worst(found, reasons, passing)


def _c8a_power(models_scaled: dict) -> str:
    """Whether the floors of every NTK factor could see the smallest fall that counts, in words."""
    undecided = {m: [f for f, row in r["factors"].items() if not row["preconditions"]["power"]["passed"]]
                 for m, r in models_scaled.items()}
    if not any(undecided.values()):
        return "at every factor of every model the floors could see such a fall, so each verdict is decided"
    return "the floors could hide such a fall at " + listing(
        f"factors {listing(fs)} of {model_name(m)} (about "
        f"{number(max(models_scaled[m]['factors'][f]['preconditions']['power']['sequences_to_resolve'] for f in fs))} "
        "sequences would resolve them)" for m, fs in undecided.items() if fs)


def _c8b_power(sliding: dict, slope: str = "such a slope") -> str:
    """Whether the sliding-window layers' floors could see the smallest slope that counts, in words."""
    power = sliding["preconditions"]["power"]
    if power["passed"]:
        return f"the unresolved layers, whose floors could hide {slope}, cannot change the check's outcome"
    return (f"the floors of {power['layers_unresolved']} of its sliding-window layers could hide {slope} at "
            f"{number(power['sequences'])} sequences, so the check is undecided (about "
            f"{number(power['sequences_to_resolve'])} sequences would resolve every layer)")


def _c8b_stance(claim: dict, args: dict) -> tuple[str, str]:
    sliding, control = claim["measured"]["sliding"], claim["measured"]["no_window"]
    model, control_model = model_name(sliding["model"]), model_name(control["model"])
    correlation = number(sliding["depth_correlation"])
    above = f"{sliding['layers_above_floor']} of its {len(sliding['checked_layers'])} sliding-window layers"
    if claim["passed"]:
        return SUPPORTED, (f"the slope rises with depth over {model}'s sliding-window layers (rank correlation "
                           f"{correlation}) and not in {control_model}")
    if sliding["passed"]:
        return UNDECIDED, f"{control_model}, which has no window, passes the same check"
    if not sliding["window_binds"]:
        return UNDECIDED, "the queries checked lie inside the window, so it does not bind"
    if not any(_defined(row["value"]) for row in sliding["layers"].values()):
        return UNDECIDED, (f"in {model} the slope is not defined at queries $i \\geq {number(sliding['min_query'])}$ "
                           f"(sequences of {number(sliding['seq_len'])} tokens)")
    if sliding.get("outcome") == "UNDECIDED":
        return UNDECIDED, (f"in {model} the slope's rank correlation with depth is {correlation}, but "
                           f"{_c8b_power(sliding, 'a slope of ' + number(args['min_resolvable_slope']))}")
    if _defined(sliding["depth_correlation"]) and sliding["depth_correlation"] >= args["min_depth_correlation"]:
        return NOT_SHOWN, (f"in {model} the slope's rank correlation with depth is {correlation}, but it is above the "
                           f"noise in only {above}")
    return NOT_SHOWN, (f"in {model} the slope's rank correlation with depth is {correlation}, with {above} above "
                       "the noise")


def _c9_stance(claim: dict) -> tuple[str, str]:
    measured = claim["measured"]["models"]
    passing = [m for m, r in measured.items() if r["passed"]]
    if claim["passed"]:
        return SUPPORTED, ("patching position~0 changes the sink heads' outputs in every model, and patching the middle "
                           "position does not")
    found, reasons, few = {}, [], []
    for model, result in measured.items():
        if result["passed"]:
            continue
        rows = [row for row in result["position0"]["layers"].values() if row["sink_heads"]]
        if not result["closed_system"]["passed"]:
            found[model] = CONTRADICTED
        elif result["position0"]["passed"]:  # the middle position passes too
            found[model] = UNDECIDED
        elif all(row["supports"] for row in rows):  # too few checked layers have sink heads to test it
            found[model] = UNDECIDED
            if rows:
                middle = [result["middle"]["layers"][layer]["effect"] for layer, row in result["position0"]["layers"].items()
                          if row["sink_heads"]]
                few.append(f"{len(rows)} of {model_name(model)}'s, where patching position~0 changes their outputs by "
                           f"{span(row['effect'] for row in rows)} and patching the middle position by {span(middle)}")
        else:
            found[model] = NOT_SHOWN
    if names := [m for m, s in found.items() if s == CONTRADICTED]:
        reasons.append(f"position~0 is not a closed system in {models(names)}")
    if names := [m for m, s in found.items() if s == NOT_SHOWN]:
        reasons.append(f"patching position~0 changes the sink heads' outputs too little in {models(names)}")
    if names := [m for m, s in found.items() if s == UNDECIDED and measured[m]["position0"]["passed"]]:
        reasons.append(f"patching the middle position changes them as much in {models(names)}")
    none = [m for m, s in found.items() if s == UNDECIDED and not measured[m]["position0"]["passed"]
            and not any(row["sink_heads"] for row in measured[m]["position0"]["layers"].values())]
    if none:
        reasons.append(f"no head of {models(none)} is a sink head by the rule, so nothing there reads position~0")
    if few:
        reasons.append(f"sink heads sit in too few layers to test it: {listing(f'in {text}' for text in few)}")
    return _worst(found, reasons, passing)


def stances(claims: dict, settings: dict) -> dict[str, tuple[str, str, str]]:
    """Per claim (C6, C7, C8a, C8b, C9): ``(stance, reason, scope)``, the reason a short clause from the measured
    values, the scope the models the stance is for where it is not every model's ('for \\texttt{a}', or '').

    A claim that passes *supports* the reading's statement.  One that fails *contradicts* it only when the
    effect goes the other way beyond the noise (a sign flip instead of a cut, a growth instead of a fall) or
    its premise fails (position 0 not a closed system); it leaves it *not shown* when the effect is too weak
    or within the noise for the pre-registered check; and it leaves it *undecided* when a control passes the
    same check or the check cannot bind (a window that does not, too few sink heads to test).  Over several
    models the worst stance counts, and the models where the claim holds are named in the reason."""
    args = settings["claims"]
    found = {"C6": _c6_stance(claims["C6"], args["C6"]),
             "C7": _c7_stance(claims["C7"], _decisive_replacement(claims, settings)),
             "C8a": _c8a_stance(claims["C8a"], args["C8"]), "C8b": _c8b_stance(claims["C8b"], args["C8"]),
             "C9": _c9_stance(claims["C9"])}
    return {name: (*result, "") if len(result) == 2 else result for name, result in found.items()}


def models_holding(claims: dict) -> dict[str, list[str]]:
    """Per failing claim decided over several models: the models where it holds (C7 is decided by one model)."""
    return {name: [m for m, r in claims[name]["measured"].get("models", {}).items() if r.get("passed")]
            for name in STATEMENTS if not claims[name]["passed"] and "decided_by" not in claims[name]["measured"]}


def stance_sentences(found: dict[str, tuple[str, str, str]], holding: dict[str, list[str]] | None = None) -> str:
    """'Our models support the reading's statement that ... (C9). They contradict ... . They do not show ... .
    Our measures cannot decide ... .'  With none supported, ``holding`` names the models where a failing claim
    holds all the same."""
    def items(stance):
        return [f"{STATEMENTS[name]} ({CLAIM_TEX[name]}{', ' + scope if scope else ''})"
                for name, (s, _, scope) in found.items() if s == stance]

    def statements(names):
        return "statement" if len(names) == 1 else "statements"

    supported, contradicted, not_shown, undecided = (items(stance) for stance in STANCES)
    partly = [f"{CLAIM_TEX[name]} in {models(names)}" for name, names in (holding or {}).items() if names]
    sentences = [f"Our models support the reading's {statements(supported)} {listing(supported)}." if supported
                 else "Our models support none of the reading's statements in every model"
                 + (f"; some hold in single models: {listing(partly)}." if partly else ".")]
    if contradicted:
        sentences.append(f"They contradict the {statements(contradicted)} {listing(contradicted)}.")
    if not_shown:
        sentences.append(f"They do not show the {statements(not_shown)} {listing(not_shown)}.")
    if undecided:
        sentences.append(f"Our measures cannot decide the {statements(undecided)} {listing(undecided)}.")
    return " ".join(sentences)


def _decisive_replacement(claims: dict, settings: dict | None = None) -> str:
    """C7's replacement, the one the claim is decided by: the pre-registered one when the settings are given,
    else the one its threshold names ('... the bos_mean replacement leaves ...')."""
    if settings is not None:
        return settings["claims"]["C7"]["replacement"]
    return re.search(r"the (\S+) replacement", claims["C7"]["threshold"])[1]


# --- the values ------------------------------------------------------------------------------------


def _floor_rule(args: dict) -> str:
    """How a C6-C9 noise floor is drawn, in words: its quantile over its random splits of the groups of sequences."""
    from behind_rope.capture.scores import ScoreRecorder

    quantile = "median" if args["floor_quantile"] == 0.5 else f"{args['floor_quantile']:g} quantile"
    return (f"the {quantile} of the split-half difference over {args['floor_splits']} random splits of the "
            f"sequences' {ScoreRecorder.GROUPS} groups into halves")


def position_values(claims: dict, settings: dict) -> dict[str, str]:
    args = settings["claims"]
    c6_args, c7_args, c8_args, c9_args = (args[name] for name in ("C6", "C7", "C8", "C9"))
    variants = settings["llm"]["variants"]
    c6, c7, c8a, c8b, c9 = (claims[name]["measured"] for name in ("C6", "C7", "C8a", "C8b", "C9"))
    values: dict[str, str] = {}

    # C6: per-head slope of log Z against log(i + 1), against the parameter-free simulation's.
    layers6 = [str(layer) for layer in c6_args["layers"]]

    def rows6(result: dict, run: str = "probe") -> list[dict]:
        return [result[run]["layers"][layer] for layer in layers6]

    carrying = sum(row["heads_carrying"] for result in c6["models"].values() for row in rows6(result))
    carrying_no_mask = sum(row["heads_carrying"] for result in c6["models"].values() for row in rows6(result, "no_mask"))
    heads = sum(row["heads"] for result in c6["models"].values() for row in rows6(result))
    def median_ratio(result: dict) -> str:
        ratios = [x for row in rows6(result) for x in row["slope_ratio_to_simulation"] if _defined(x)]
        return number(float(np.median(ratios))) if ratios else "n/a"

    median_ratios = listing(f"{median_ratio(result)} in {model_name(model)}" for model, result in c6["models"].items())
    values |= {
        "c6.min_query": str(c6["min_query"]), "c6.slope_ratio": number(c6_args["min_slope_ratio"]),
        "c6.floor_multiple": f"{c6_args['floor_multiple']:g}", "c6.head_share": percent(c6_args["min_head_share"]),
        # C6-C9 share one floor rule; each claim's own splits and quantile are in claims.json
        "position.floor_rule": _floor_rule(c6_args),
        "c6.min_layers": str(c6_args["min_layers"]), "c6.layers": listing(c6_args["layers"]),
        "c6.models_passed": models([m for m, r in c6["models"].items() if r["passed"]]),
        "c6.models_failed": models([m for m, r in c6["models"].items() if r["outcome"] == "FAIL"]),
        "c6.sim_slopes": span(row["slope"] for row in c6["simulation"]["probe"]["layers"].values()),
        "c6.sim_no_mask_slopes": span(row["slope"] for row in c6["simulation"]["no_mask"]["layers"].values()),
        "c6.sim_outcome": _outcome(c6["simulation"]["probe"]["passed"], "meets", "misses")
        + " the check and without the mask it " + _outcome(c6["simulation"]["no_mask"]["passed"], "meets", "misses") + " it",
        "c6.median_ratios": median_ratios, "c6.heads_carrying": str(carrying), "c6.heads": str(heads),
        "c6.heads_carrying_no_mask": str(carrying_no_mask),
        "c6.no_mask_passing": models([m for m, r in c6["models"].items() if r["no_mask"]["passed"]]),
        "c6.no_mask_outcome": _no_mask_sentence(c6),
        "c6.power": _c6_power(c6["models"]),
        "c6.resolvable_ratio": number(c6_args["min_resolvable_slope_ratio"]),
        "c6.raw_median_slopes": listing(
            f"{number(float(np.median([b for row in rows6(result) for b in row['raw_slopes'] if _defined(b)])))} in "
            f"{model_name(model)}" for model, result in c6["models"].items()
            if any(_defined(b) for row in rows6(result) for b in row["raw_slopes"])) or "not defined",
        "c6.models_undecided": models([m for m, r in c6["models"].items() if r["outcome"] == "UNDECIDED"]),
    }

    # C7: key 0's positional signal at the early queries before and after the replacement, decided on one model.
    replacement = _decisive_replacement(claims, settings)
    decided = c7["decided_by"]
    deciding = c7["models"][decided]
    effect = deciding["replacements"][replacement]
    controls = list(c7_args["control_replacements"])
    later = [variants[name]["replace_embedding"]["position"] for name in controls
             if variants[name]["replace_embedding"]["position"] != 0]
    identity = [gap for result in c7["models"].values() for gap in result["largest_identity_change"].values()]
    exploratory = {m: r for m, r in c7["models"].items() if r["role"] != "decides"}
    random_bands = {group: band for group, band in deciding["bands"].items() if len(band["members"]) > 1}
    old_flips = [(m, sum(e["first_key_ratio"] < 0 for e in r["replacements"].values()
                         if _defined(e["first_key_ratio"])), len(r["replacements"]))
                 for m, r in c7["models"].items()]
    power = effect["preconditions"]["power"]
    values |= {
        "c7.layers": listing(c7_args["layers"]), "c7.decided_by": model_name(decided),
        "c7.replacement": _texttt(replacement), "c7.controls": listing(_texttt(c) for c in controls),
        "c7.late_position": listing(later) if later else "n/a",
        "c7.threshold": percent(c7_args["min_fraction_removed"]), "c7.floor_multiple": f"{c7_args['floor_multiple']:g}",
        "c7.resolvable": percent(c7_args["min_resolvable_fraction"]),
        "c7.reading": percent(c7["reading_fraction"]),
        "c7.original": number(deciding["key0_signal"]["size"], 3), "c7.after": number(effect["component"], 3),
        "c7.share_of_attention": listing(f"{signed_percent(r['key0_signal']['share_of_attention_signal'])} in "
                                         f"{model_name(m)}" for m, r in c7["models"].items()),
        "c7.floor": number(deciding["noise_floor"], 3), "c7.ratio": number(effect["ratio"]),
        "c7.ratio_halves": listing(number(r) for r in effect["ratio_halves"]),
        "c7.removed": _removed(effect),
        "c7.power": (f"{'met' if power['passed'] else 'not met'} ({c7_args['floor_multiple']:g} floors are "
                     f"{_small(c7_args['floor_multiple'] * effect['floor'])} at {power['sequences']} sequences"
                     + ("" if power["passed"] else f"; about {number(power['sequences_to_resolve'])} would resolve it")
                     + ")"),
        "c7.controls_outcome": _controls_sentence({name: claims["C7"]["controls"][name] for name in controls}),
        "c7.other_keys": f"$\\rho = {number(deciding['other_keys']['ratio'])}$, so it "
        + ("is cut as much, and the control passes" if deciding["other_keys"]["cut_alike"]
           else "is cut, but less than key~0's, so the control fails" if deciding["other_keys"]["removes"]
           else "is not cut, so the control fails"),
        "c7.exploratory": models(list(exploratory)),
        "c7.exploratory_ratios": listing(f"{model_name(m)} {number(r['replacements'][replacement]['ratio'])}"
                                         for m, r in exploratory.items()) if exploratory else "none",
        "c7.sign_flipped": models([m for m, r in c7["models"].items() if r["replacements"][replacement]["sign_flipped"]]),
        "c7.old_proxy_flips": listing(f"{flips} of the {total} replacements in {model_name(m)}"
                                      for m, flips, total in old_flips),
        "c7.identity_gap": scientific(max(identity)) if identity else "n/a",
        "c7.random_bands": listing(
            f"{len(band['members'])} {_texttt(group)} replacements leave $\\rho$ from {number(band['ratio_band'][0])} to "
            f"{number(band['ratio_band'][1])} ({band['sign_flips']} turned around)"
            for group, band in random_bands.items()) if random_bands else "no repeated replacement",
    }

    # C8a: NTK on key 0's positional signal, the other keys' signal as control.
    factors = _factors(claims["C8a"])
    values |= {
        "c8.factors": listing(factors), "c8.layers": listing(c8_args["layers"]),
        "c8.floor_multiple": f"{c8_args['floor_multiple']:g}", "c8.min_layer_share": percent(c8_args["min_layer_share"]),
        "c8a.models": models(list(c8a["models"])),
        "c8a.suppressed": listing(f"{model_name(m)} at {sum(row['key0']['suppressed'] for row in r['factors'].values())} "
                                  f"of {len(r['factors'])}" for m, r in c8a["models"].items()) if c8a["models"] else "none",
        "c8a.ratios": span(row["key0"]["value"] for r in c8a["models"].values() for row in r["factors"].values()),
        "c8a.other_ratios": span(row["other_keys"]["value"] for r in c8a["models"].values()
                                 for row in r["factors"].values()),
        "c8a.other_keys_passing": models([m for m, r in c8a["models"].items()
                                          if any(row["other_keys"]["cut_alike"] for row in r["factors"].values())]),
        "c8.min_resolvable_fall": percent(c8_args["min_resolvable_fall"]),
        "c8a.power": _c8a_power(c8a["models"]),
    }

    # C8b: the log-Z slope beyond the window, by depth.
    sliding, control = c8b["sliding"], c8b["no_window"]
    values |= {
        "c8b.model": model_name(sliding["model"]), "c8b.control_model": model_name(control["model"]),
        "c8b.min_query": number(c8b["min_query"]), "c8b.window": number(sliding["window"]) if sliding["window"] else "n/a",
        "c8b.seq_len": number(sliding["seq_len"]), "c8b.threshold": number(c8_args["min_depth_correlation"]),
        "c8b.checked": str(len(sliding["checked_layers"])), "c8b.checked_layers": listing(sliding["checked_layers"]),
        "c8b.correlation": number(sliding["depth_correlation"]), "c8b.above": str(sliding["layers_above_floor"]),
        "c8b.control_checked": str(len(control["checked_layers"])),
        "c8b.control_correlation": number(control["depth_correlation"]),
        "c8b.control_above": str(control["layers_above_floor"]),
        "c8b.control_outcome": _outcome(control["passed"], "passes it, so the control fails the claim",
                                        "fails it, as a control must"),
        "c8b.binds": "binds" if sliding["window_binds"] else "does not bind",
        "c8b.slopes": span(row["value"] for layer, row in sliding["layers"].items()
                           if int(layer) in sliding["checked_layers"]),
        "c8b.min_resolvable_slope": number(c8_args["min_resolvable_slope"]),
        "c8b.power": _c8b_power(sliding),
    }

    # C9: sink heads and the position-0 patch, the middle position as control.
    m9 = c9["models"]
    closed = [r["closed_system"] for r in m9.values()]
    effects = [row["effect"] for r in m9.values() for row in r["position0"]["layers"].values() if row["sink_heads"]]
    middle = [row["effect"] for r in m9.values() for row in r["middle"]["layers"].values() if row["sink_heads"]]
    floors = [row["floor"] for r in m9.values() for row in r["position0"]["layers"].values() if row["sink_heads"]]
    counts = claims["C9"]["sink_heads"]
    held_out = {m: r["held_out"] for m, r in m9.items()}
    supporting = {m: [layer for layer, row in r["position0"]["layers"].items() if row["supports"]] for m, r in m9.items()}
    values |= {
        "c9.from_layer": str(c9_args["from_layer"]), "c9.sink_from_query": str(c9_args["sink_from_query"]),
        "c9.min_layer_share": percent(c9_args["min_layer_share"]),
        "c9.supporting": listing(f"{len(layers)} of {model_name(m)}'s {m9[m]['position0']['layers_with_sink_heads']} "
                                 "layers with sink heads" for m, layers in supporting.items()),
        "c9.sink_min_attention": number(c9_args["sink_min_attention"]),
        "c9.min_change": number(c9_args["min_relative_change"]), "c9.floor_multiple": f"{c9_args['floor_multiple']:g}",
        "c9.min_layers": str(c9_args["min_layers"]), "c9.max_gap": scientific(c9_args["max_closed_system_gap"], 0),
        "c9.models_passed": models([m for m, r in m9.items() if r["passed"]]),
        "c9.models_failed": models([m for m, r in m9.items() if not r["passed"]]),
        "c9.sink_heads": listing(f"{model_name(m)} {sum(counts[m][str(layer)]['count'] for layer in m9[m]['layers'])} of "
                                 f"{sum(counts[m][str(layer)]['of'] for layer in m9[m]['layers'])}" for m in m9),
        "c9.effect": span(effects), "c9.middle_effect": span(middle),
        "c9.other_heads_effect": span(r["other_heads"]["layers"][layer]["effect"] for r in m9.values()
                                      for layer, row in r["position0"]["layers"].items() if row["sink_heads"]),
        "c9.other_heads_passing": models([m for m, r in m9.items() if r["other_heads"]["passed"]]),
        "c9.held_out_effect": span(row["effect"] for h in held_out.values() for row in h["layers"].values()
                                   if row["sink_heads"]),
        "c9.held_out": listing(f"{h['layers_meeting_rule']} for {model_name(m)}" for m, h in held_out.items()),
        "c9.floor": _scientific_span(floors),
        "c9.middle_passing": models([m for m, r in m9.items() if r["middle"]["passed"]]),
        "c9.middle_position": listing(sorted({str(r["middle_position"]) for r in m9.values()}, key=int)),
        "c9.queries_from": listing(sorted({str(r["queries_from"]) for r in m9.values()}, key=int)),
        "c9.closed_models": models([m for m, r in m9.items() if r["closed_system"]["passed"]]),
        "c9.closed_gap": scientific(max(c["largest_gap_same_first_token"] for c in closed)),
        "c9.open_gap": scientific(min(c["smallest_gap_different_first_tokens"] for c in closed)),
    }

    # The reading's statements, one stance each, and the summary sentences.
    found = stances(claims, settings)
    values |= {f"{name.lower()}.stance": stance for name, (stance, _, _) in found.items()}
    values |= {f"{name.lower()}.stance_reason": reason for name, (_, reason, _) in found.items()}
    values["position.stances"] = stance_sentences(found, models_holding(claims))
    return values


def _scientific_span(values) -> str:
    """'$1.0 \\times 10^{-7}$ to $3.1 \\times 10^{-6}$' over the defined values (one value when they agree as printed)."""
    values = [v for v in values if _defined(v)]
    if not values:
        return "n/a"
    low, high = scientific(min(values)), scientific(max(values))
    return low if low == high else f"{low} to {high}"


def _removed(effect: dict) -> str:
    """What a replacement removes of key 0's positional signal, in words: '35 %', '−69 % (the signal grows)',
    '150 % (more than all of it: the signal turns around)'."""
    fraction = effect["fraction_removed"]
    if effect["sign_flipped"]:
        return signed_percent(fraction) + " (more than all of it: the signal turns around)"
    return signed_percent(fraction) + (" (the signal grows)" if _defined(fraction) and fraction < 0 else "")


def _no_mask_sentence(c6: dict) -> str:
    """'every no-mask run fails the check, as a control must' / 'the no-mask runs of a and b pass it too'."""
    passing = [f"the no-mask run of {model_name(m)}" for m, r in c6["models"].items() if r["no_mask"]["passed"]]
    passing += ["the no-mask simulation"] if c6["simulation"]["no_mask"]["passed"] else []
    if not passing:
        return "every no-mask run fails the check, as a control must"
    return f"{listing(passing)} {'passes' if len(passing) == 1 else 'pass'} it too, so the control fails the claim"


def _outcome(passed: bool, yes: str, no: str) -> str:
    return yes if passed else no


def _controls_sentence(controls: dict) -> str:
    """'neither control removes it' / 'the control late_mean removes it too'."""
    passing = [name for name, control in controls.items() if control["passed"]]
    if not passing:
        return "neither control removes it" if len(controls) == 2 else "no control removes it"
    return f"the control{'s' * (len(passing) > 1)} {listing(_texttt(c) for c in passing)} remove{'s' * (len(passing) == 1)} it too"


# --- the table -------------------------------------------------------------------------------------


def _c8a_cells(result: dict | None, factors: list[str]) -> list[str]:
    """The remaining share rho of key 0's positional signal at each factor (bold where the factor suppresses it)."""
    if result is None:
        return ["" for _ in factors] + [""]
    cells = []
    for factor in factors:
        row = result["factors"][factor]["key0"]
        text = number(row["value"]) if _defined(row["value"]) else "n/a"
        cells.append(rf"\textbf{{{text}}}" if row["suppressed"] else text)
    return cells + [verdict(result["passed"])]


def position_table(claims: dict, settings: dict | None = None) -> str:
    """One row per model (and one for the parameter-free simulation): C6's heads carrying the mask's growth of
    log Z and the layers holding; C7's remaining share rho of key 0's positional signal and the fraction the
    deciding replacement removes, the model's role and how many replacements turn the signal around; C8a's remaining share
    rho of key 0's signal per NTK factor; C9's sink heads and the
    effect of patching position 0 against the middle position."""
    c6, c7, c8a = (claims[name]["measured"] for name in ("C6", "C7", "C8a"))
    c9, sinks = claims["C9"]["measured"]["models"], claims["C9"]["sink_heads"]
    replacement = _decisive_replacement(claims, settings)
    factors = _factors(claims["C8a"])
    layers6 = list(next(iter(c6["models"].values()))["probe"]["layers"])
    model_names = list(dict.fromkeys([*c6["models"], *c7["models"], *c8a["models"], *c9]))

    spec = "@{}l" + "rrc" + "rrlcc" + "r" * len(factors) + "c" + "rrrc" + "@{}"
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             r" & \multicolumn{3}{c}{\C6: mask's part} & \multicolumn{5}{c}{\C7: " + _texttt(replacement)
             + r", signed} & " + rf"\multicolumn{{{len(factors) + 1}}}{{c}}{{\C{{8a}}: $\rho$ of key~0's signal}}"
             r" & \multicolumn{4}{c}{\C9: patching} \\",
             r"\cmidrule(lr){2-4}\cmidrule(lr){5-9}" + rf"\cmidrule(lr){{10-{10 + len(factors)}}}"
             + rf"\cmidrule(lr){{{11 + len(factors)}-{14 + len(factors)}}}",
             r"model & heads & layers & & $\rho$ & removed & role & turned & & "
             + " & ".join(f"$s={f}$" for f in factors) + r" & & sink heads & pos.~0 & middle & \\", r"\midrule"]
    for model in model_names:
        cells = []
        r6 = c6["models"].get(model)
        if r6:
            rows = [r6["probe"]["layers"][layer] for layer in layers6]
            cells += [f"{sum(r['heads_carrying'] for r in rows)}/{sum(r['heads'] for r in rows)}",
                      f"{r6['probe']['layers_holding']}/{len(layers6)} ({r6['no_mask']['layers_holding']})",
                      verdict(r6["outcome"])]
        else:
            cells += ["", "", ""]
        r7 = c7["models"].get(model)
        if r7 and replacement in r7["replacements"]:
            e = r7["replacements"][replacement]
            flips = sum(x["sign_flipped"] for x in r7["replacements"].values())
            cells += [number(e["ratio"]), signed_percent(e["fraction_removed"]),
                      "decides" if r7["role"] == "decides" else "exploratory",
                      f"{flips}/{len(r7['replacements'])}",
                      verdict(r7["passed"]) if r7["role"] == "decides" else f"({verdict(r7['passed'])})"]
        else:
            cells += ["", "", "", "", ""]
        cells += _c8a_cells(c8a["models"].get(model), factors)
        r9 = c9.get(model)
        if r9:
            layers9 = list(r9["position0"]["layers"])
            count = sum(sinks[model][layer]["count"] for layer in layers9)
            total = sum(sinks[model][layer]["of"] for layer in layers9)
            effect = [r9["position0"]["layers"][layer]["effect"] for layer in layers9 if r9["position0"]["layers"][layer]["sink_heads"]]
            control = [r9["middle"]["layers"][layer]["effect"] for layer in layers9 if r9["middle"]["layers"][layer]["sink_heads"]]
            cells += [f"{count}/{total}", span(effect), span(control), verdict(r9["passed"])]
        else:
            cells += ["", "", "", ""]
        lines.append(f"{model_name(model)} & " + " & ".join(cells) + r" \\")
    # The parameter-free simulation: C6's reference (every checked layer above its floor).
    sim6 = c6["simulation"]["probe"]
    sim_row = ["", f"{sum(row['holds'] for row in sim6['layers'].values())}/{len(sim6['layers'])}", ""]
    sim_row += ["", "", "", "", ""] + ["" for _ in factors] + ["", "", "", "", ""]
    lines += [r"\midrule", "RoPE simulation & " + " & ".join(sim_row) + r" \\", r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
