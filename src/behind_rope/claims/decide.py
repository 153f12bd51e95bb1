"""Turn derivation, Monte-Carlo and metric files into claims, each with an outcome: PASS, FAIL or UNDECIDED.

Here are the simulations' claims C1, C2 and C4 (their decision, and C4's line of docs/results.md) and
``decide``, which gathers every claim into results/claims.json; each other claim group has its own module
(behind_rope.claims: c3, c5, position, revision).

A claim about the causal mask passes only when its runs pass *and* its no-mask controls fail
the very same check: that is what makes each threshold able to fail.  A claim whose pre-registered
preconditions do not hold is UNDECIDED (behind_rope.claims.outcome).
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Callable

from behind_rope.claims import c3, c5
from behind_rope.claims import markdown as md
from behind_rope.claims.format import listing, number, tex_escape
from behind_rope.claims.outcome import precondition, settle
from behind_rope.maths.metrics import split_half_floor
from behind_rope.registration import claim_data

LayerCheck = Callable[[dict], bool]


def claim_c1(derivation: dict, monte_carlo: list[dict], monte_carlo_dim: int, min_samples: int, tolerance: float) -> dict:
    dim = monte_carlo_dim
    at_dim = [row for row in monte_carlo if row["dim"] == dim]
    worst = max((row["max_abs_error"] for row in at_dim), default=float("inf"))
    enough = bool(at_dim) and min(row["samples"] for row in at_dim) >= min_samples
    by_dim = {}
    for row in monte_carlo:
        by_dim[row["dim"]] = max(by_dim.get(row["dim"], 0.0), row["max_abs_error"])
    return {
        "statement": "A parameter-free causal layer with no positional encoding (version 1's: L2-normalised inputs, "
        "unscaled scores, a residual) makes layer-2 scores position dependent (g(i)/(h(i)h(j)), h strictly "
        "decreasing), so they favour nearby keys.",
        "threshold": f"all derivation checks pass; theory matches a Monte-Carlo run (E={dim}, "
        f">= {min_samples} samples) to within {tolerance}",
        "measured": {
            "derivation_checks": {c["name"]: c["passed"] for c in derivation["checks"]},
            "figure1_layer2_scores": derivation["figure1"]["layer2_scores"],
            "monte_carlo_max_abs_error": worst,
            "monte_carlo_samples": min((row["samples"] for row in at_dim), default=0),
            "max_abs_error_by_dim": {str(k): v for k, v in sorted(by_dim.items())},
        },
        "passed": bool(derivation["passed"] and enough and worst <= tolerance),
    }


def _layers_from(metrics: dict, from_layer: int) -> list[dict]:
    return [row for row in metrics["layers"] if row["layer"] >= from_layer]


def _mask_claim(metrics_by_variant: dict, variants, controls, from_layer: int, check: LayerCheck, keys) -> dict:
    def summarise(name):
        rows = _layers_from(metrics_by_variant[name], from_layer)
        return {
            "shows_effect": bool(rows) and all(check(row) for row in rows),
            "layers": {str(row["layer"]): {k: row[k] for k in keys} for row in rows},
        }

    runs = {name: summarise(name) for name in variants}
    control_runs = {name: summarise(name) for name in controls}
    passed = all(r["shows_effect"] for r in runs.values()) and not any(r["shows_effect"] for r in control_runs.values())
    return {"measured": {"runs": runs, "controls": control_runs}, "passed": passed}


def claim_c2(metrics_by_variant: dict, variants, no_mask_variants, from_layer: int, min_locality: float,
             without_normalisation=()) -> dict:
    claim = _mask_claim(
        metrics_by_variant, variants, no_mask_variants, from_layer,
        lambda row: row["locality"] >= min_locality, ["locality", "nonrelative_index", "split_half_reliability"],
    )
    # Recorded, deciding nothing: version 2 says the direction comes from normalisation.
    claim["measured"]["without_normalisation"] = {
        name: {str(row["layer"]): row["locality"] for row in metrics_by_variant[name]["layers"]} for name in without_normalisation}
    return {
        "statement": "Stacked parameter-free causal layers (version 1's: L2-normalised inputs, unscaled scores, a "
        "residual) favour nearby keys from layer 2 on, for every alpha.",
        "threshold": f"locality >= {min_locality} in every layer >= {from_layer} of every run; "
        "every no-mask control fails that check",
        **claim,
    }


DECOMPOSITION = ("relative_share", "query_offset_share", "visible_share", "sink", "start_deficit_visible")


def claim_c4(metrics_by_variant: dict, variants, no_mask_variants, from_layer: int, min_reliability: float,
             max_start_deficit: float, floor_splits: int, floor_quantile: float) -> dict:
    """C4 on the RoPE simulation: reliable structure and a start deficit below the bound by more than its floor, in
    every layer from ``from_layer`` of every causal run, where every no-mask control fails the same check.

    A layer's floor is the sampling noise of its start deficit: the ``floor_quantile`` of the split-half gap over
    ``floor_splits`` random splits of the simulation's chunks (behind_rope.maths.metrics.split_half_floor).  A
    causal layer whose deficit lies within its floor of the bound cannot say on which side it lies: C4 is then
    UNDECIDED, with the B that would resolve it, unless a resolved layer already fails it."""
    def floor(row):
        return split_half_floor(row["start_deficit_replicates"], row["replicate_sizes"], floor_splits, floor_quantile)

    def check(row):
        return (row["split_half_reliability"] >= min_reliability
                and row["start_deficit"] < max_start_deficit - row["start_deficit_floor"])

    metrics_by_variant = {name: {**metrics_by_variant[name],  # a copy with each layer's floor; the input stays as read
                                 "layers": [{**row, "start_deficit_floor": floor(row)}
                                            for row in metrics_by_variant[name]["layers"]]}
                          for name in [*variants, *no_mask_variants]}
    keys = ["split_half_reliability", "start_deficit", "start_deficit_floor", "nonrelative_index"]
    claim = _mask_claim(metrics_by_variant, variants, no_mask_variants, from_layer, check, keys)
    claim["preconditions"] = {"deficits_resolved": _c4_resolution(metrics_by_variant, variants, claim, from_layer,
                                                                  min_reliability, max_start_deficit)}
    # Recorded: the RoPE base each causal run was simulated with, as its score file says (the paper quotes it).
    claim["measured"]["rope_theta"] = {name: metrics_by_variant[name].get("metadata", {}).get("variant", {})
                                       .get("rope_theta") for name in variants}
    claim["measured"]["floor"] = {"splits": floor_splits, "quantile": floor_quantile,
                                  "replicates": {name: len(metrics_by_variant[name]["layers"][0]["replicate_sizes"])
                                                 for name in [*variants, *no_mask_variants]}}
    # Recorded, not decided: what the softmax can see of each run's non-relative part, every layer.
    claim["measured"]["decomposition"] = {name: {str(row["layer"]): {key: row[key] for key in DECOMPOSITION}
                                                 for row in metrics_by_variant[name]["layers"]}
                                          for name in [*variants, *no_mask_variants]}
    return {
        "statement": "With the causal mask, RoPE's relative score pattern becomes non-relative, with lower "
        "scores at keys near the start; without the mask it stays relative.",
        "threshold": f"split-half reliability >= {min_reliability} and start deficit < {max_start_deficit:g} by more "
        f"than its floor (the {floor_quantile:g} quantile of the split-half gap over {floor_splits} splits of the "
        f"simulation's chunks) in every layer >= {from_layer} of every causal run; every no-mask control fails that "
        "check; UNDECIDED where a causal layer's deficit lies within its floor of the bound",
        **claim,
    }


def _c4_resolution(metrics_by_variant: dict, variants, claim: dict, from_layer: int, min_reliability: float,
                   bound: float) -> dict:
    """C4's power precondition: every causal layer's start deficit lies farther from the bound than its floor, or
    a resolved layer (or a control that shows the effect) fails C4 already.  The floor falls as one over the root
    of B, so the B that would resolve a layer is B x (floor / |deficit - bound|)^2."""
    unresolved, failing, needed = [], [], 0
    for name in variants:
        batch = metrics_by_variant[name].get("metadata", {}).get("size", {}).get("batch_size")
        for row in _layers_from(metrics_by_variant[name], from_layer):
            gap, floor = abs(row["start_deficit"] - bound), row["start_deficit_floor"]
            if row["split_half_reliability"] < min_reliability or (gap > floor and row["start_deficit"] > bound):
                failing.append(f"{name} layer {row['layer']}")
            elif not gap > floor:  # a NaN floor (one chunk) leaves the layer unresolved too
                unresolved.append(f"{name} layer {row['layer']}")
                if batch and gap > 0 and not math.isnan(floor):
                    needed = max(needed, math.ceil(batch * (floor / gap) ** 2))
    control_passes = any(run["shows_effect"] for run in claim["measured"]["controls"].values())
    decided = not unresolved or bool(failing) or control_passes
    reason = ("every causal layer's start deficit is farther from the bound than its floor" if not unresolved else
              f"within the floor: {', '.join(unresolved)}"
              + ("; decided anyway: " + (", ".join(failing) + " fails it" if failing else "a control passes")
                 if decided else ""))
    would_decide = (f"simulation.batch_size of at least {needed:,} (the floor falls as one over the root of B)"
                    if needed else "more chunks of the simulation (simulation.batch_size / simulation.chunk_size)")
    return precondition(decided, reason, would_decide if unresolved else "nothing: it is decided",
                        unresolved=unresolved, failing=failing)


def rope_twin_evidence(metrics: dict, runs: dict, from_layer: int, min_reliability: float,
                       max_start_deficit: float) -> dict:
    """The C4 check on the trained RoPE twin (``runs``: label -> ``<twin>/<run>``): recorded next to C4 as
    evidence, not part of its pass."""
    def summary(run):
        rows = _layers_from(metrics[run], from_layer)
        return {
            "meets_c4_check": all(r["split_half_reliability"] >= min_reliability and r["start_deficit"] < max_start_deficit
                                  for r in rows),
            "layers": {str(r["layer"]): {k: r[k] for k in ("split_half_reliability", "nonrelative_index", "start_deficit")}
                       for r in metrics[run]["layers"]},
        }

    return {label: summary(run) for label, run in runs.items()}


def decide(derivation: dict, monte_carlo: list[dict], metrics: dict, training: dict, panel_statistics: dict,
           settings: dict, position_claims: dict, revision_claims: dict) -> dict:
    """Every claim: C1-C5 from the metrics files keyed ``<source>/<run>`` (experiments.steps.claims_settings names
    the runs), then C6-C9 and version 2's R0-R5 as their own steps decided them; each with the commit that last
    changed its criterion."""
    claims, twin_runs, llm_runs = settings["claims"], settings["twin_runs"], settings["llm_runs"]
    simulation = {key.split("/", 1)[1]: value for key, value in metrics.items() if key.startswith("simulation/")}
    result = {
        "C1": claim_c1(derivation, monte_carlo, **claims["C1"]),
        "C2": claim_c2(simulation, **claims["C2"]),
        "C3": c3.claim_c3(metrics, simulation, training, panel_statistics, twin_runs, claims["C3"]),
        "C4": claim_c4(simulation, **claims["C4"]),
        **c5.claims_c5(metrics, llm_runs, {name: claims[name] for name in ("C5a", "C5b", "C5c", "C5d")}),
    }
    c4 = claims["C4"]
    result["C4"]["measured"]["trained_rope_twin"] = rope_twin_evidence(
        metrics, twin_runs["rope_twin"], c4["from_layer"], c4["min_reliability"], c4["max_start_deficit"])
    result |= position_claims | revision_claims
    commits = settings.get("criterion_commits", {})
    for name, claim in result.items():
        entry = "C8" if name.startswith("C8") else name
        claim["criterion_commit"] = commits.get(entry, "unknown")
        registration = settings["registration"]
        claim["registration"] = {key: value for key, value in registration.items() if key != "data"}
        claim["data"] = claim_data(registration.get("data", {}), name)
        claim["paper"] = settings["entries"][entry]["paper"]
        settle(claim)
    return result


# ---- the paper's values ------------------------------------------------------------------------


def _mask_claim_extremes(measured: dict, key: str) -> tuple[float, float]:
    """(worst value over the causal runs, best value over the no-mask controls) of one metric."""
    runs = [layer[key] for run in measured["runs"].values() for layer in run["layers"].values()]
    controls = [layer[key] for run in measured["controls"].values() for layer in run["layers"].values()]
    return min(runs), max(controls)


def simulation_values(claims: dict, arguments: dict) -> dict[str, str]:
    """The paper's values of C1, C2 and C4 (LaTeX strings by key), from their claims and criteria."""
    values = {}
    c1, c1_args = claims["C1"]["measured"], arguments["C1"]
    scores = c1["figure1_layer2_scores"]
    values |= {"fig1.s21": number(scores[1][0], 3), "fig1.s31": number(scores[2][0], 3),
               "fig1.s32": number(scores[2][1], 3)}
    checks = c1["derivation_checks"]
    errors = {int(dim): error for dim, error in c1["max_abs_error_by_dim"].items()}
    small, large = min(errors), max(errors)
    values |= {
        "c1.checks": str(sum(checks.values())), "c1.checks_total": str(len(checks)),
        "c1.dim": str(c1_args["monte_carlo_dim"]), "c1.tolerance": number(c1_args["tolerance"]),
        "c1.min_samples": number(c1_args["min_samples"]),
        "c1.error": number(c1["monte_carlo_max_abs_error"], 3), "c1.samples": number(c1["monte_carlo_samples"]),
        "c1.small_dim": str(small), "c1.error_small_dim": number(errors[small], 3),
        "c1.large_dim": str(large), "c1.error_large_dim": number(errors[large], 3),
        # Sentences whose direction is a result: written from it, so that they cannot go stale.
        "c1.h_decreasing": "it holds" if checks["h_strictly_decreasing_symbolic"] else "it does not hold",
        "c1.error_trend": "it shrinks with $E$" if all(a > b for a, b in pairwise(errors[dim] for dim in sorted(errors)))
        else "it does not shrink with $E$ at every step",
        "fig1.nearer": "the nearer key scores higher" if scores[2][1] > scores[2][0] else "the nearer key does not score higher",
    }

    c2_args = arguments["C2"]
    c2_min, c2_control = _mask_claim_extremes(claims["C2"]["measured"], "locality")
    values |= {"c2.from_layer": str(c2_args["from_layer"]), "c2.threshold": number(c2_args["min_locality"]),
               "c2.min_locality": number(c2_min), "c2.control_max_locality": number(c2_control)}
    return values | _c4_values(claims["C4"], arguments["C4"])


def _c4_values(claim: dict, args: dict) -> dict[str, str]:
    measured = claim["measured"]
    c4_min, c4_control = _mask_claim_extremes(measured, "split_half_reliability")
    deficits = [layer["start_deficit"] for run in measured["runs"].values() for layer in run["layers"].values()]
    twin_on_text = [run for name, run in measured.get("trained_rope_twin", {}).items() if name.endswith("_text_causal")]
    first = str(args["from_layer"])
    at_first = {name: run["layers"][first] for name, run in measured["runs"].items() if first in run["layers"]}
    failing = [name for name, row in at_first.items()
               if not (row["split_half_reliability"] >= args["min_reliability"]
                       and row["start_deficit"] < args["max_start_deficit"] - row["start_deficit_floor"])]
    controls_pass = [name for name, run in measured["controls"].items() if run["shows_effect"]]
    if claim["passed"]:
        reason = "every causal run meets the check in every layer of the range and the no-mask control does not"
    else:
        reasons = [rf"at layer~{first}, \texttt{{{tex_escape(name)}}} has a reliability of "
                   f"{number(at_first[name]['split_half_reliability'])} and a start deficit of "
                   f"{number(at_first[name]['start_deficit'], 4)} (floor {number(at_first[name]['start_deficit_floor'], 4)})"
                   for name in failing]
        reasons += [rf"the no-mask control \texttt{{{tex_escape(name)}}} meets it" for name in controls_pass]
        reason = "; ".join(reasons) or "a layer after it does not meet it"
    floors = [layer["start_deficit_floor"] for run in measured["runs"].values() for layer in run["layers"].values()]
    resolution = claim["preconditions"]["deficits_resolved"]
    return {
        "c4.from_layer": first, "c4.reason": reason,
        "c4.threshold": number(args["min_reliability"]), "c4.deficit_bound": f"{args['max_start_deficit']:g}",
        "c4.min_reliability": number(c4_min, 3), "c4.max_start_deficit": number(max(deficits), 3),
        "c4.control_max_reliability": number(c4_control),
        "c4.layer2_deficits": listing(number(row["start_deficit"], 4) for row in at_first.values()),
        "c4.floor_range": f"{number(min(floors), 4)} to {number(max(floors), 4)}",
        "c4.floor_rule": f"the {args['floor_quantile']:g} quantile of the split-half gap over {args['floor_splits']} "
                         f"random splits of the simulation's {listing(sorted(set(measured['floor']['replicates'].values())))} chunks",
        "c4.resolution": tex_escape(resolution["reason"] + ("" if resolution["passed"] else
                                                            f"; what would decide it: {resolution['would_decide']}")),
        "c4.twin_meets": "meets" if twin_on_text and twin_on_text[0]["meets_c4_check"] else "does not meet",
        # the base the runs were simulated with, from their score files (through C4's record), not the config
        "sim.theta": listing(number(int(theta)) for theta in sorted(set(claim["measured"]["rope_theta"].values()))),
    }


# ---- docs/results.md -----------------------------------------------------------------------------


def c4_line(claims: dict) -> str:
    """C4's verdict, and each causal layer's start deficit against its floor (the simulation's chunks split many
    times), so that a reader sees how far from the bound each lies."""
    measured = claims["C4"]["measured"]
    layers = "; ".join(f"{run} " + ", ".join(f"L{layer} {md.value(row['start_deficit'], '+.4f')} "
                                              f"({md.value(row['start_deficit_floor'], '.5f')})"
                                              for layer, row in result["layers"].items())
                       for run, result in {**measured["runs"], **measured["controls"]}.items())
    return (f"{md.claim_line(claims, 'C4')}. Start deficit (its floor) by layer: {layers}; the floor from "
            f"{measured['floor']['splits']} splits of each run's {max(measured['floor']['replicates'].values())} chunks.")
