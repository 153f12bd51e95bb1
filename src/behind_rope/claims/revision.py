"""Claims R0-R5, version 2's, decided on the recency probability of its parameter-free stack
(behind_rope.revision.stack), with their write-up: the console lines and the table of our RP against the
authors' published values.

Every bound is an interval: a two-sided normal interval at the claim's ``confidence`` from the sequences'
frequencies (a setting's sequences are independent draws; two settings' draws are independent of each
other; two layers of one setting share their sequences, so their difference uses the covariance).  A claim's
power precondition asks every deciding interval's standard error to be at most
``min_effect / (z_(1+confidence)/2 + z_power)``; where one is larger the claim is UNDECIDED, with the B that
would decide it.  A claim passes when its runs pass its check and its no-mask controls fail the same check.
"""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

from behind_rope.claims import markdown as md
from behind_rope.claims.format import listing, number, tex_escape, verdict
from behind_rope.claims.outcome import outcome, precondition, settle
from behind_rope.experiments.runs import REVISION_CLAIMS

# ---- the decision --------------------------------------------------------------------------------


CHANCE = 0.5


def z_value(confidence: float) -> float:
    return NormalDist().inv_cdf((1 + confidence) / 2)


def largest_error(min_effect: float, power: float, confidence: float) -> float:
    """The largest standard error with which an effect of ``min_effect`` is seen with probability ``power``."""
    return min_effect / (z_value(confidence) + NormalDist().inv_cdf(power))


def by_layer(files: dict, names) -> dict:
    """{setting: {layer (1-based, as text): RP}} for the record."""
    return {name: {str(layer): value for layer, value in enumerate(files[name]["rp"], 1)} for name in names}


class Recency:
    """Every setting's RP file (behind_rope.revision.stack.recency), read by setting name and 1-based layer."""

    def __init__(self, files: dict[str, dict], confidence: float):
        self.files, self.z = files, z_value(confidence)

    def _test(self, what: str, estimate: float, error: float, against: float) -> dict:
        low, high = estimate - self.z * error, estimate + self.z * error
        return {"what": what, "estimate": estimate, "standard_error": error, "interval": [low, high],
                "against": against, "above": low > against, "below": high < against}

    def rp(self, name: str, layer: int) -> dict:
        run = self.files[name]
        return self._test(f"RP {name} layer {layer}", run["rp"][layer - 1], run["standard_error"][layer - 1], CHANCE)

    def layer_step(self, name: str, layer: int) -> dict:
        """RP of ``layer`` minus that of the layer before, on the same sequences."""
        run, a, b = self.files[name], layer - 1, layer - 2
        variance = run["covariance"][a][a] + run["covariance"][b][b] - 2 * run["covariance"][a][b]
        return self._test(f"RP {name} layer {layer} - layer {layer - 1}", run["rp"][a] - run["rp"][b],
                          math.sqrt(max(variance, 0.0) / run["sequences"]), 0.0)

    def between(self, first: str, second: str, layer: int) -> dict:
        """RP of ``first`` minus RP of ``second`` in one layer: independent draws."""
        one, two = self.files[first], self.files[second]
        error = math.hypot(one["standard_error"][layer - 1], two["standard_error"][layer - 1])
        return self._test(f"RP {first} - {second} layer {layer}", one["rp"][layer - 1] - two["rp"][layer - 1],
                          error, 0.0)


def _power(tests: list[dict], min_effect: float, power: float, confidence: float, sequences: int) -> dict:
    limit = largest_error(min_effect, power, confidence)
    worst = max(test["standard_error"] for test in tests)
    needed = math.ceil(sequences * (worst / limit) ** 2)
    return precondition(worst <= limit, f"the largest standard error of a deciding interval is {worst:.5f} "
                        f"(at most {limit:.5f} sees an effect of {min_effect} in RP with probability {power})",
                        f"B = {needed:,} sequences per setting", largest_error=worst, limit=limit,
                        sequences_needed=needed)


def _mask_claim(check, runs: dict, controls: dict, statement: str, threshold: str, preconditions: dict,
                recency: Recency, sequences: int) -> dict:
    """``check(*args) -> list of (test, holds)``; each of ``runs`` and ``controls`` maps a label to its args."""
    def record(args):
        tests = check(*args)
        return {"shows_effect": all(holds for _, holds in tests),
                "tests": [test | {"holds": holds} for test, holds in tests]}

    measured = {"runs": {label: record(args) for label, args in runs.items()},
                "controls": {label: record(args) for label, args in controls.items()}}
    deciding = [test for run in measured["runs"].values() for test in run["tests"]]
    return {"statement": statement, "threshold": threshold,
            "preconditions": {"power": _power(deciding, **preconditions, sequences=sequences)},
            "measured": measured,
            "passed": all(run["shows_effect"] for run in measured["runs"].values())
            and not any(run["shows_effect"] for run in measured["controls"].values())}


def closed_form_gaps(files: dict, settings) -> dict:
    """The closed form h(j) beside each setting's simulated layer-1 rescaling, and their largest gap."""
    from behind_rope.revision.closed_form import derive, rescaling

    result = {"derivation_matches_notebook": bool(derive()["matches_notebook"])}
    for name in settings:
        spec, simulated = files[name]["settings"]["setting"], files[name]["layer1_rescaling"]
        closed = rescaling(spec["alpha"], spec["dim"], len(simulated)).tolist()
        result[name] = {"closed_form": closed, "simulated": simulated,
                        "largest_gap": max(abs(a - b) for a, b in zip(closed, simulated, strict=True))}
    return result


def claim_r0(recency: Recency, published: dict, published_noise: float, closed_form_settings=()) -> dict:
    rows = []
    for name, layers in published.items():
        for layer, theirs in sorted((int(layer), value) for layer, value in layers.items()):
            ours = recency.rp(name, layer)
            tolerance = recency.z * math.hypot(ours["standard_error"], published_noise)
            rows.append({"setting": name, "layer": layer, "published": theirs, "ours": ours["estimate"],
                         "standard_error": ours["standard_error"], "difference": ours["estimate"] - theirs,
                         "tolerance": tolerance, "agrees": abs(ours["estimate"] - theirs) <= tolerance})
    first_layer = {name: recency.rp(name, 1) for name in recency.files}
    return {"statement": "Our implementation of version 2's stack gives the recency probabilities the authors publish.",
            "threshold": f"every published value within z x sqrt(our standard error^2 + {published_noise}^2) of ours",
            "measured": {"published": rows, "agreeing": sum(row["agrees"] for row in rows),
                         "layer1_rp": {name: test["estimate"] for name, test in first_layer.items()},
                         "layer1_at_chance": all(not (t["above"] or t["below"]) for t in first_layer.values()),
                         "closed_form_rescaling": closed_form_gaps(recency.files, closed_form_settings)},
            "passed": all(row["agrees"] for row in rows)}


def claim_r1(recency: Recency, settings, no_mask_settings, deciding_layer: int, preconditions: dict,
             sequences: int, layers: int) -> dict:
    def check(name):
        test = recency.rp(name, deciding_layer)
        return [(test, test["below"])]

    def first_layer_below(name):
        below = [recency.rp(name, layer)["below"] for layer in range(1, layers + 1)]
        return next((layer for layer in range(1, layers + 1) if all(below[layer - 1:])), None)

    claim = _mask_claim(check, {name: (name,) for name in settings}, {name: (name,) for name in no_mask_settings},
                        "Without normalisation, stacked causal attention layers bias the scores toward earlier tokens.",
                        f"layer {deciding_layer}'s RP interval below 0.5 in every run; the no-mask control fails it",
                        preconditions, recency, sequences)
    claim["measured"]["first_layer_below"] = {name: first_layer_below(name) for name in settings}
    claim["measured"]["rp_by_layer"] = by_layer(recency.files, (*settings, *no_mask_settings))
    return claim


def _grows_with_depth(recency: Recency, from_layer: int, layers: int):
    def check(name):
        tests = [(test, test["above"]) for test in (recency.rp(name, layer) for layer in range(from_layer, layers + 1))]
        return tests + [(test, test["above"]) for test in
                        (recency.layer_step(name, layer) for layer in range(from_layer + 1, layers + 1))]
    return check


def claim_r2(recency: Recency, settings, no_mask_settings, from_layer: int, preconditions: dict, sequences: int,
             layers: int, layernorm_without_anisotropy=()) -> dict:
    check = _grows_with_depth(recency, from_layer, layers)
    claim = _mask_claim(check, {name: (name,) for name in settings}, {name: (name,) for name in no_mask_settings},
                        "With LayerNorm and anisotropic inputs, stacked causal layers favour later keys (recency), "
                        "more so with depth.",
                        f"in every run, RP above 0.5 in every layer >= {from_layer} and rising layer by layer; the "
                        "no-mask control fails it", preconditions, recency, sequences)
    claim["measured"]["rp_by_layer"] = by_layer(recency.files, (*settings, *no_mask_settings))
    claim["measured"]["layernorm_without_anisotropy"] = by_layer(recency.files, layernorm_without_anisotropy)
    return claim


def claim_r3(recency: Recency, settings, without_residual, no_mask_settings, from_layer: int, preconditions: dict,
             sequences: int, layers: int) -> dict:
    def check(name, without=None):
        tests = [(test, test["above"]) for test in (recency.rp(name, layer) for layer in range(from_layer, layers + 1))]
        if without is not None:
            tests += [(test, test["above"]) for test in
                      (recency.between(without, name, layer) for layer in range(from_layer, layers + 1))]
        return tests

    claim = _mask_claim(check, dict(zip(settings, zip(settings, without_residual, strict=True), strict=True)),
                        {name: (name,) for name in no_mask_settings},
                        "The residual connection weakens the LayerNorm recency without removing it.",
                        f"every residual run's RP above 0.5 in every layer >= {from_layer}, and below the same setting's "
                        "RP without the residual; the residual stack without the mask fails the first", preconditions,
                        recency, sequences)
    claim["measured"]["rp_by_layer"] = by_layer(recency.files, (*settings, *without_residual, *no_mask_settings))
    return claim


def _sweep_check(recency: Recency, layer: int, rises: bool):
    """RP along a sweep: its end points differ in the claimed direction (resolved), and no step between
    neighbours goes the other way (resolved)."""
    def check(*sweep):
        first, last = (sweep[-1], sweep[0]) if rises else (sweep[0], sweep[-1])
        overall = recency.between(first, last, layer)
        steps = [recency.between(after, before, layer) for before, after in itertools.pairwise(sweep)]
        return [(overall, overall["above"])] + [(step, not (step["below"] if rises else step["above"])) for step in steps]
    return check


def claim_r4(recency: Recency, sweeps: dict, no_mask_sweep, deciding_layer: int, preconditions: dict,
             sequences: int) -> dict:
    claim = _mask_claim(_sweep_check(recency, deciding_layer, rises=True), {label: tuple(s) for label, s in sweeps.items()},
                        {"no_mask": tuple(no_mask_sweep)},
                        "More anisotropic inputs (larger alpha) strengthen the LayerNorm recency.",
                        f"in each alpha sweep, layer {deciding_layer}'s RP higher at the largest alpha than at the "
                        "smallest, and no step to a larger alpha lowers it; the no-mask sweep fails it",
                        preconditions, recency, sequences)
    claim["measured"]["rp_by_layer"] = by_layer(recency.files, [name for sweep in (*sweeps.values(), no_mask_sweep)
                                                                for name in sweep])
    return claim


def claim_r5(recency: Recency, sweep, no_mask_sweep, deciding_layer: int, preconditions: dict, sequences: int) -> dict:
    claim = _mask_claim(_sweep_check(recency, deciding_layer, rises=False), {"d": tuple(sweep)},
                        {"no_mask": tuple(no_mask_sweep)},
                        "A larger width d weakens the LayerNorm recency.",
                        f"layer {deciding_layer}'s RP lower at the largest d than at the smallest, and no step to a "
                        "larger d raises it; the no-mask sweep fails it", preconditions, recency, sequences)
    claim["measured"]["rp_by_layer"] = by_layer(recency.files, (*sweep, *no_mask_sweep))
    return claim


def decide(files: dict[str, dict], claims: dict, sequences: int, layers: int) -> dict:
    """Claims R0-R5 from every setting's RP file (keyed by setting), with their pre-registered arguments."""
    def arguments(name):
        args = dict(claims[name])
        confidence = args.pop("confidence")
        if "min_effect" in args:
            args["preconditions"] = {"min_effect": args.pop("min_effect"), "power": args.pop("power"),
                                     "confidence": confidence}
        return Recency(files, confidence), args

    result = {}
    recency, args = arguments("R0")
    result["R0"] = claim_r0(recency, **args)
    for name, decide_one, extra in (("R1", claim_r1, {"layers": layers}), ("R2", claim_r2, {"layers": layers}),
                                    ("R3", claim_r3, {"layers": layers}), ("R4", claim_r4, {}), ("R5", claim_r5, {})):
        recency, args = arguments(name)
        result[name] = decide_one(recency, **args, sequences=sequences, **extra)
    return {name: settle(claim) for name, claim in result.items()}


def summary_lines(claims: dict) -> list[str]:
    """One line per claim for the console, with its deciding numbers."""
    lines = []
    for name in REVISION_CLAIMS:
        claim = claims[name]
        outcome = claim.get("outcome") or ("PASS" if claim["passed"] else "FAIL")
        if name == "R0":
            measured = claim["measured"]
            detail = f"{measured['agreeing']}/{len(measured['published'])} published values agree"
        else:
            runs = claim["measured"]["runs"]
            detail = f"{sum(run['shows_effect'] for run in runs.values())}/{len(runs)} runs show it; control " + ", ".join(
                f"{label} {'shows it' if run['shows_effect'] else 'fails, as it must'}"
                for label, run in claim["measured"]["controls"].items())
            power = claim["preconditions"]["power"]
            detail += f"; largest standard error {power['largest_error']:.5f} (limit {power['limit']:.5f})"
        lines.append(f"{name}: {outcome} ({detail})")
    return lines


def published_markdown(claim_r0_record: dict) -> str:
    """Markdown, one row per setting: each published value beside ours, with the difference (in bold where it
    exceeds R0's tolerance), and the largest tolerance of the row."""
    by_setting: dict[str, dict[int, dict]] = {}
    for row in claim_r0_record["measured"]["published"]:
        by_setting.setdefault(row["setting"], {})[row["layer"]] = row
    layers = sorted({layer for rows in by_setting.values() for layer in rows})
    lines = ["| setting | " + " | ".join(f"layer {layer}: published / ours (difference)" for layer in layers)
             + " | tolerance (99 %) |", "|---" * (len(layers) + 2) + "|"]
    for setting, rows in by_setting.items():
        cells = []
        for layer in layers:
            row = rows.get(layer)
            difference = f"{row['difference']:+.4f}" if row else ""
            cells.append(f"{row['published']:.4f} / {row['ours']:.4f} ("
                         + (difference if row["agrees"] else f"**{difference}**") + ")" if row else "")
        tolerance = max(row["tolerance"] for row in rows.values())
        lines.append(f"| {setting} | " + " | ".join(cells) + f" | {tolerance:.4f} |")
    return "\n".join(lines)


# ---- the paper's values and tables ---------------------------------------------------------------


# What version 2 does with each of version 1's claims (../shared/PAPER_V2.md, "What changed"): a fact about
# the two texts, not a measurement.  C6-C9 test a follow-up reading, C5d our own question: neither version's.
VERSION_2_STANCE = {
    "C1": ("reattributed", "version 1's layer L2-normalises its inputs; version 2 says the direction toward nearby "
           "keys comes from normalisation, and that without it the stack favours earlier tokens (R1, R2)"),
    "C2": ("reattributed", "as C1: the same normalised layer; our run of it without normalisation is recorded"),
    "C3": ("dropped", "version 2's repository drops the trained NoPE model"),
    "C4": ("dropped", "version 2's repository drops the RoPE simulation"),
    "C5a": ("dropped", "version 2 drops the LLM analysis"),
    "C5b": ("dropped", "version 2 drops the LLM analysis"),
    "C5c": ("dropped", "version 2 drops the LLM analysis"),
    "C5d": ("neither", "our own question"),
}
NEITHER = ("neither", "a follow-up reading's statement, in neither version")


def stance(name: str) -> tuple[str, str]:
    return VERSION_2_STANCE.get(name, NEITHER)


def revision_values(claims: dict) -> dict[str, str]:
    r0, r1 = claims["R0"]["measured"], claims["R1"]["measured"]
    first = sorted({layer for layer in r1["first_layer_below"].values() if layer is not None})
    c2 = claims["C2"]["measured"].get("without_normalisation", {})
    layers = sorted({int(layer) for values in c2.values() for layer in values})
    by_layer = [f"layer~{layer}: " + listing(number(values[str(layer)]) for values in c2.values()) for layer in layers]
    return {
        "r0.agreeing": str(r0["agreeing"]), "r0.published": str(len(r0["published"])),
        "r0.largest_gap": number(max(abs(row["difference"]) for row in r0["published"]), 4),
        "r1.first_layer": listing(first) if first else "no layer",
        "r.outcomes": listing(f"{name} {outcome(claims[name])}" for name in ("R0", "R1", "R2", "R3", "R4", "R5")),
        "r0.closed_form_gap": number(max(entry["largest_gap"] for entry in r0["closed_form_rescaling"].values()
                                         if isinstance(entry, dict)), 4),
        "r0.closed_form_derivation": ("is, symbolically," if r0["closed_form_rescaling"]["derivation_matches_notebook"]
                                      else "is not"),
        "c2.without_normalisation_locality": "; ".join(by_layer) or "n/a",
        "c2.without_normalisation_variants": listing(tex_escape(name) for name in c2) if c2 else "none",
    }


def measured_cells(claims: dict) -> dict[str, str]:
    """The claims table's "Measured" cell of R0-R5."""
    cells = {}
    r0 = claims["R0"]["measured"]
    cells["R0"] = f"{r0['agreeing']} of {len(r0['published'])} published values within the noise (Table~\\ref{{tab:revision_published}})"
    for name in ("R1", "R2", "R3", "R4", "R5"):
        measured = claims[name]["measured"]
        runs, controls = measured["runs"], measured["controls"]
        power = claims[name]["preconditions"]["power"]
        shown = sum(run["shows_effect"] for run in runs.values())
        failing = sum(not control["shows_effect"] for control in controls.values())
        cell = (f"{shown} of {len(runs)} runs show it; {failing} of {len(controls)} no-mask controls fail it; largest "
                f"standard error {number(power['largest_error'], 4)} (power needs $\\leq {number(power['limit'], 4)}$)")
        if name == "R1":
            cell += "; below 0.5 from layer " + listing(
                f"{layer} ({tex_escape(setting)})" for setting, layer in measured["first_layer_below"].items())
        cells[name] = cell
    return cells


def published_table(claims: dict) -> str:
    """Our RP beside each value the authors publish, with the difference and the tolerance of R0."""
    lines = [r"\begin{tabular}{llrrrrl}", r"\toprule",
             r"Setting & Layer & Published & Ours & Difference & Tolerance & Agrees \\", r"\midrule"]
    for row in claims["R0"]["measured"]["published"]:
        agrees = "yes" if row["agrees"] else r"\textbf{no}"
        lines.append(f"\\texttt{{{tex_escape(row['setting'])}}} & {row['layer']} & {row['published']:.4f} & "
                     f"{row['ours']:.4f} & {row['difference']:+.4f} & {row['tolerance']:.4f} & {agrees} \\\\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def versions_table(claims: dict) -> str:
    """Each claim of version 1 with what version 2 does with it and our outcome; then version 2's own."""
    lines = [r"{\footnotesize", r"\begin{longtable}{>{\raggedright\arraybackslash}p{0.45in}"
             r">{\raggedright\arraybackslash}p{0.8in}>{\raggedright\arraybackslash}p{3.6in}c}",
             r"\caption{\versionscaption}\label{tab:versions}\\", r"\toprule",
             r"Claim & Version 2 & Why & Ours \\", r"\midrule", r"\endfirsthead",
             r"\toprule", r"Claim & Version 2 & Why & Ours \\", r"\midrule", r"\endhead",
             r"\bottomrule", r"\endlastfoot"]
    for name, claim in claims.items():
        if name.startswith("R"):
            what, why = "new", tex_escape(claim["statement"])
        else:
            what, why = stance(name)
            why = tex_escape(why)
        lines.append(f"{name} & {what} & {why} & {verdict(outcome(claim))} \\\\")
    lines += [r"\end{longtable}", "}"]
    return "\n".join(lines) + "\n"


# ---- docs/results.md -----------------------------------------------------------------------------


def results_table(claims: dict) -> str:
    """Version 2's claims, each with its deciding numbers, and our RP against the authors' published values."""
    lines = [f"- {md.claim_line(claims, name)}" for name in REVISION_CLAIMS]
    first = claims["R1"]["measured"]["first_layer_below"]
    lines.append("- R1, the first layer from which RP stays below 0.5: "
                 + ", ".join(f"{setting} {layer}" for setting, layer in first.items()) + ".")
    closed = claims["R0"]["measured"]["closed_form_rescaling"]
    lines.append("- The authors' closed form h(j) (recorded with R0): the sympy derivation "
                 + ("is" if closed["derivation_matches_notebook"] else "is **not**") + " the notebook's expression; "
                 "largest gap to the simulated layer-1 rescaling: "
                 + ", ".join(f"{name} {entry['largest_gap']:.4f}" for name, entry in closed.items() if isinstance(entry, dict))
                 + ".")
    return "\n".join(lines) + "\n\n" + published_markdown(claims["R0"])
