"""Turn derivation, Monte-Carlo and metric files into claims, each with an outcome: PASS, FAIL or UNDECIDED.

A claim about the causal mask passes only when its runs pass *and* its no-mask controls fail
the very same check: that is what makes each threshold able to fail.  A claim whose pre-registered
preconditions do not hold is UNDECIDED (behind_rope.claims.outcome).
"""

from __future__ import annotations

import math
from typing import Callable

from behind_rope.claims import llm as llm_claims
from behind_rope.claims.outcome import precondition, settle
from behind_rope.maths.metrics import split_half_floor

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


def _layer(metrics: dict, layer: int) -> dict:
    return next(row for row in metrics["layers"] if row["layer"] == layer)


def sanity(validation_loss: float, unigram: float, min_gain: float) -> dict:
    """A twin is sane when it beats the unigram model by ``min_gain`` nats; one that learned nothing cannot."""
    gain = unigram - validation_loss
    return {"min_gain_over_unigram": min_gain, "gain_over_unigram": gain, "passed": gain >= min_gain}


def _sanity(training: dict, min_gain: float) -> dict:
    return sanity(training["validation_loss"], training["unigram_loss"], min_gain) | {
        "validation_loss": training["validation_loss"], "unigram_loss": training["unigram_loss"]}


def uses_order(training: dict, min_order_gap: float, confidence: float) -> dict:
    """Whether a twin uses the order of its context: the lower end of the two-sided ``confidence`` normal interval
    of its order gap (over held-out sequences; behind_rope.twins.competence) clears ``min_order_gap``."""
    from statistics import NormalDist

    gap = training["order_gap"]
    low = gap["mean_gap"] - NormalDist().inv_cdf(0.5 + confidence / 2) * gap["standard_error"]
    return {"order_gap": gap["mean_gap"], "standard_error": gap["standard_error"], "interval_low": low,
            "confidence": confidence, "min_order_gap": min_order_gap, "passed": bool(low >= min_order_gap)}


def competence(training: dict, rope_loss: float, min_order_gap: float, confidence: float,
               max_loss_above_rope: float) -> dict:
    """One NoPE seed's competence on its own: it uses word order, and its held-out loss is within
    ``max_loss_above_rope`` nats of ``rope_loss``, the mean of the RoPE twin's seeds trained the same way."""
    above = training["validation_loss"] - rope_loss
    order = uses_order(training, min_order_gap, confidence)
    return {"uses_order": order, "loss_above_rope": above, "max_loss_above_rope": max_loss_above_rope,
            "close_to_rope": bool(above <= max_loss_above_rope),
            "passed": bool(order["passed"] and above <= max_loss_above_rope)}


def loss_gap(nope_losses: dict[str, float], rope_losses: dict[str, float], bound: float, confidence: float,
             min_passing: int) -> dict:
    """Whether the NoPE recipe comes within ``bound`` nats of the RoPE recipe's held-out loss, over seeds.

    The difference of the two means over seeds, with its two-sided ``confidence`` t-interval; the seeds' spread is
    pooled over both twins (one recipe, one spread between seeds: the RoPE twin has fewer seeds than the NoPE twin,
    too few to measure its own).  It holds when the interval's upper end is within ``bound`` and at least
    ``min_passing`` NoPE seeds are within it of the RoPE mean on their own; with one seed of each, when their
    difference is.  ``seeds_to_resolve``: the seeds of each twin at which an interval of this spread would put
    this difference's upper end within the bound (None where the difference itself is not within it)."""
    import math

    from behind_rope.claims.seeds import t_quantile

    nope, rope = list(nope_losses.values()), list(rope_losses.values())
    nope_mean, rope_mean = sum(nope) / len(nope), sum(rope) / len(rope)
    difference = nope_mean - rope_mean
    dof = len(nope) + len(rope) - 2
    if dof >= 1:
        spread = sum((x - nope_mean) ** 2 for x in nope) + sum((y - rope_mean) ** 2 for y in rope)
        sd = math.sqrt(spread / dof)
        half = t_quantile(0.5 + confidence / 2, dof) * sd * math.sqrt(1 / len(nope) + 1 / len(rope))
    else:
        sd, half = float("nan"), 0.0
    within = sorted(name for name, loss in nope_losses.items() if loss - rope_mean <= bound)
    def resolves(k: int) -> bool:  # the upper end shrinks as k grows, so the smallest k is found by bisection
        return difference + t_quantile(0.5 + confidence / 2, 2 * k - 2) * sd * math.sqrt(2 / k) <= bound

    resolve, low_k, high_k = None, 2, 1000
    if difference < bound and not math.isnan(sd) and resolves(high_k):
        while low_k < high_k:
            middle = (low_k + high_k) // 2
            low_k, high_k = (low_k, middle) if resolves(middle) else (middle + 1, high_k)
        resolve = low_k
    return {"nope_mean": nope_mean, "rope_mean": rope_mean, "difference": difference, "pooled_sd": sd,
            "interval": [difference - half, difference + half], "confidence": confidence, "bound": bound,
            "nope_seeds": len(nope), "rope_seeds": len(rope), "seeds_within": len(within), "min_passing": min_passing,
            "seeds_to_resolve": resolve,
            "passed": bool(difference + half <= bound and len(within) >= min_passing)}


def _what_makes_competent(seeds: dict, rope_orders: dict, gap: dict) -> str:
    """What would decide C3 when its competence precondition fails, by which of its parts fail."""
    competence = [seed["competence"] for seed in seeds.values()]
    needs = []
    if not all(order["passed"] for order in rope_orders.values()) or not all(entry["uses_order"]["passed"]
                                                                          for entry in competence):
        needs.append("whose every NoPE seed uses word order")
    if not gap["passed"]:
        needs.append(f"whose NoPE seeds come within {gap['bound']} nats of the RoPE twin's held-out loss")
    if not needs:
        return "nothing: it is met"
    recipe = (f"a twin recipe {' and '.join(needs)} (training.model, training.steps; benchmarks/twin_pilot.py), or "
              "config/paper.yaml's run on the authors' NoPE model")
    if not gap["passed"] and gap["seeds_to_resolve"] and len(needs) == 1:
        return (f"about {gap['seeds_to_resolve']} seeds of each twin (training.twins), were the seeds' spread and "
                f"the mean difference as here, or {recipe}")
    return recipe


def c3_preconditions(seeds: dict, rope_orders: dict, gap: dict, min_order_gap: float, order_confidence: float,
                     min_power: float, order_sequences: int) -> dict:
    """C3's preconditions, decided before its statistics are read: the NoPE twin is competent (every seed uses word
    order, as every seed of the RoPE twin, the order test's positive case, does; and over seeds its held-out loss is
    within the bound of the RoPE twin's), and the probe has the power to see the bound."""
    no_order = [name for name, seed in seeds.items() if not seed["competence"]["uses_order"]["passed"]]
    weak = {name: seed["power"] for name, seed in seeds.items() if seed["power"]["power"] < min_power}
    gaps = ", ".join(f"{seed['competence']['uses_order']['order_gap']:+.3f}" for seed in seeds.values())
    above = ", ".join(f"{seed['competence']['loss_above_rope']:+.3f}" for seed in seeds.values())
    rope_gaps = ", ".join(f"{order['order_gap']:+.3f}" for order in rope_orders.values())
    low, high = gap["interval"]
    needed = [entry["sequences_for_power"] for entry in weak.values()]
    if not weak:
        size = "nothing: it is met"
    elif None in needed:
        size = "no probe size (a seed's bound slope is not positive)"
    else:
        size = (f"a probe of about {max(needed):,} i.i.d. sequences (twin_analysis.sequences), were its noise to "
                "fall as one over the root of the sequences")
    interval = ("" if gap["nope_seeds"] + gap["rope_seeds"] < 3 else
                f", {gap['confidence']:.0%} interval [{low:+.3f}, {high:+.3f}] over {gap['nope_seeds']} NoPE and "
                f"{gap['rope_seeds']} RoPE seeds, spread pooled")
    return {
        "competence": precondition(
            not no_order and all(order["passed"] for order in rope_orders.values()) and gap["passed"],
            f"every NoPE seed's order gap (in held-out nats, over {order_sequences} sequences; lower "
            f"{order_confidence:.0%} end >= {min_order_gap}): {gaps}; the RoPE seeds' {rope_gaps}; the NoPE seeds' "
            f"held-out loss above the RoPE seeds' mean (the interval's upper end and >= {gap['min_passing']} seeds "
            f"<= {gap['bound']}): {above}; the mean difference {gap['difference']:+.3f}{interval}"
            + (f"; not using order: {', '.join(no_order)}" if no_order else ""),
            _what_makes_competent(seeds, rope_orders, gap),
            incompetent=[name for name, seed in seeds.items() if not seed["competence"]["passed"]],
            rope_twins=list(rope_orders)),
        "power": precondition(
            not weak,
            "the probability that a twin whose layer-2 key slope equals the bound in every row passes the locality "
            f"check, by each seed's probe noise row by row (>= {min_power}): "
            + ", ".join(f"{seed['power']['power']:.2f}" for seed in seeds.values()),
            size, underpowered=sorted(weak)),
    }


def claim_c3(metrics: dict, simulation_metrics: dict, training: dict, panel_statistics: dict, runs: dict, *, twin: str,
             probe: str, simulation_variants, rope_twin: str, no_mask_probe: str, untrained: str, min_seeds: int,
             confidence: float, min_seeds_passing: int, min_gain_over_unigram: float, locality_layers,
             min_locality: float, amplification_layer: int, min_amplification: float, panels: dict,
             order_positions, order_sequences: int, min_order_gap: float, order_confidence: float,
             max_loss_above_rope: float, min_power: float, row_noise_window: int, probe_sequences: int,
             **recorded) -> dict:
    """Trained NoPE twin, over its seeds: the mask makes it favour nearby keys, more strongly than the
    parameter-free simulation does (behind_rope.claims.seeds has the rule; config/claims.yaml the constants).

    ``metrics`` maps ``<twin>/<run>`` to metrics files, ``training`` a twin to its training metrics and
    ``panel_statistics`` a seed of the twin to its Figure 3 statistics (behind_rope.claims.panels); ``runs`` is
    experiments.runs.c3_twin_runs.  The statistics are decided on the i.i.d. probe; the same statistics of the
    same weights without the mask, and of every seed of the untrained twin, are controls that must fail
    the same rule.  Held-out text is recorded, and so is Figure 3, panel by panel.
    """
    from behind_rope.claims.power import locality_power, positive_shares, row_noises, sequences_for_power
    from behind_rope.claims.seeds import clears, seed_rule

    # Amplification in units the twin and the simulation share: the key slope relative to each row's score spread
    # (behind_rope.maths.metrics.key_slopes), which no common scale of the scores moves.  A trained twin's logits and
    # the simulation's scores of unit vectors come on different scales, and so does an untrained twin's.
    simulated = {name: _layer(simulation_metrics[name], amplification_layer)["key_trend"] for name in simulation_variants}
    reference = max(simulated.values())
    thresholds = {f"locality_layer_{layer}": min_locality for layer in locality_layers} | {"amplification": min_amplification}

    def statistics(run: str) -> dict:
        values = {f"locality_layer_{layer}": _layer(metrics[run], layer)["locality"] for layer in locality_layers}
        layer = _layer(metrics[run], amplification_layer)
        return values | {"amplification": layer["key_trend"] / reference, "key_trend": layer["key_trend"],
                         "key_slope": layer["key_slope"]}

    def decide(values_by_seed: dict[str, dict]) -> dict:
        rules = {name: seed_rule({seed: values[name] for seed, values in values_by_seed.items()}, threshold, "at_least",
                                 confidence, min_seeds_passing, min_seeds) for name, threshold in thresholds.items()}
        return {"statistics": rules, "passed": all(rule["passed"] for rule in rules.values())}

    def on_its_own(values: dict) -> bool:
        return all(clears(values[name], threshold, "at_least") for name, threshold in thresholds.items())

    # Recorded, decides nothing: the locality a probe run would show were every query's slope the one the
    # amplification bound asks for, given that run's sampling noise (can locality reach its bound at this size?).
    bound_slope = min_amplification * reference

    def noises(run: str) -> list[float]:
        return row_noises(_layer(metrics[run], amplification_layer)["key_trend_half_differences"], row_noise_window)

    def locality_at_bound(run: str) -> float:
        shares = positive_shares(bound_slope, noises(run))
        return sum(shares) / len(shares)

    def power(run: str) -> dict:
        rows = noises(run)
        ordered = sorted(rows)
        return {"power": locality_power(bound_slope, rows, min_locality), "rows": len(rows),
                "median_row_noise": ordered[len(ordered) // 2], "largest_row_noise": ordered[-1],
                "sequences": probe_sequences,
                "sequences_for_power": sequences_for_power(probe_sequences, bound_slope, rows, min_locality, min_power)}

    rope_twins = runs.get("rope_seeds", [rope_twin])
    rope_loss = sum(training[name]["validation_loss"] for name in rope_twins) / len(rope_twins)
    seeds = {}
    for name, roles in runs["seeds"].items():
        stats = {role: statistics(run) for role, run in roles.items()}
        seeds[name] = {"seed": training[name].get("seed"), **stats, "passes_on_its_own": on_its_own(stats["probe"]),
                       "sanity": _sanity(training[name], min_gain_over_unigram),
                       "steps": training[name]["steps"], "stopped_early": training[name].get("stopped_early"),
                       "cpu_capability": training[name].get("cpu_capability"), "dtype": training[name].get("dtype"),
                       "locality_at_bound": locality_at_bound(roles["probe"]),
                       "competence": competence(training[name], rope_loss, min_order_gap, order_confidence,
                                                max_loss_above_rope),
                       "power": power(roles["probe"])}
    untrained_seeds = {name: {role: statistics(run) for role, run in roles.items()} for name, roles in runs["untrained"].items()}
    for name, stats in untrained_seeds.items():
        stats["passes_on_its_own"] = on_its_own(stats["probe"])
        stats["sanity"] = _sanity(training[name], min_gain_over_unigram)

    probe_rule = decide({name: seed["probe"] for name, seed in seeds.items()})
    controls = {
        "no_mask_probe": {"run": no_mask_probe, **decide({name: seed["probe_no_mask"] for name, seed in seeds.items()})},
        "untrained": {"twin": untrained, **decide({name: seed["probe"] for name, seed in untrained_seeds.items()}),
                      "seeds": untrained_seeds},
    }
    panel_rules = {}
    for letter, bounds in panels.items():
        rules = {}
        for stat, bound in bounds.items():
            ((direction, limit),) = bound.items()
            values = {seed: panel_statistics[seed][letter][stat] for seed in panel_statistics}
            rules[stat] = seed_rule(values, limit, direction, confidence, min_seeds_passing, min_seeds)
        panel_rules[letter] = {"statistics": rules, "passed": all(rule["passed"] for rule in rules.values())}
    sanity = {name: seed["sanity"] for name, seed in seeds.items()} | {
        name: _sanity(training[name], min_gain_over_unigram) for name in rope_twins}
    checks = {
        "enough_seeds": len(seeds) >= min_seeds,
        "training_sanity": all(entry["passed"] for entry in sanity.values()),
        **{f"{name}_on_iid_tokens": rule["passed"] for name, rule in probe_rule["statistics"].items()},
        "no_mask_probe_fails": not controls["no_mask_probe"]["passed"],
        "untrained_twin_fails": not controls["untrained"]["passed"],
    }
    rope_orders = {name: uses_order(training[name], min_order_gap, order_confidence) for name in rope_twins}
    gap = loss_gap({name: training[name]["validation_loss"] for name in seeds},
                   {name: training[name]["validation_loss"] for name in rope_twins}, max_loss_above_rope, confidence,
                   min(min_seeds_passing, len(seeds)))
    preconditions = c3_preconditions(seeds, rope_orders, gap, min_order_gap, order_confidence, min_power,
                                     order_sequences)
    layers = ", ".join(map(str, locality_layers))
    first_seed, first_untrained = next(iter(runs["seeds"])), next(iter(runs["untrained"]))
    shown = {**runs["seeds"][first_seed], **{f"untrained_{role}": run for role, run in runs["untrained"][first_untrained].items()}}
    return {
        "statement": "A decoder trained without positional encoding favours nearby keys because of the causal mask, "
        "and its learned weights make that position dependence stronger than the parameter-free simulation's.",
        "threshold": f"{'on one seed' if min_seeds == 1 else f'over >= {min_seeds} seeds'} of the NoPE twin on i.i.d. "
        f"tokens, each of locality (layers {layers}) >= {min_locality} and layer-{amplification_layer} key slope "
        f"relative to each row's score spread >= {min_amplification} x the largest simulated one: "
        + ("the seed clears it" if min_seeds == 1 else
           f"the lower end of the {confidence:.0%} t-interval of the mean clears it and >= {min_seeds_passing} seeds "
           "clear it on their own")
        + f"; every seed and the RoPE twin beat a unigram model by {min_gain_over_unigram} nats; the same "
        "weights without the mask, and the untrained twin's seeds, fail the same rule",
        "preconditions": preconditions,
        "measured": {
            "seeds": seeds,
            "rope_twin_order": rope_orders[rope_twins[0]],
            "rope_seeds_order": rope_orders,
            "loss_gap": gap,
            "probe": probe_rule,
            "controls": controls,
            "panels": panel_rules,
            "sanity": sanity,
            "simulation_key_slopes": simulated,
            "probe_power": {"layer": amplification_layer, "bound_slope": bound_slope, "row_noise_window": row_noise_window,
                            "locality_at_bound": {name: seed["locality_at_bound"] for name, seed in seeds.items()},
                            "power": {name: seed["power"] for name, seed in seeds.items()}},
            # Every layer of every seed on the probe, the deciding layers and the others alike: a layer that
            # reverses on some seeds is a result, not a reason to pick the layers.
            "probe_layers": {str(row["layer"]): {
                "locality": {name: _layer(metrics[roles["probe"]], row["layer"])["locality"]
                             for name, roles in runs["seeds"].items()},
                "key_slope": {name: _layer(metrics[roles["probe"]], row["layer"])["key_slope"]
                              for name, roles in runs["seeds"].items()}}
                for row in metrics[runs["seeds"][first_seed]["probe"]]["layers"]},
            # Every layer of the first seed's runs (the twin Figure 3 shows) and of its untrained twin.
            "all_layers": {run.replace("/", "_"): metrics[run]["layers"] for run in shown.values()},
            "checks": checks,
        },
        "passed": all(checks.values()),
    }


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
        "C3": claim_c3(metrics, simulation, training, panel_statistics, twin_runs, **claims["C3"]),
        "C4": claim_c4(simulation, **claims["C4"]),
        **llm_claims.claims_c5(metrics, llm_runs, {name: claims[name] for name in ("C5a", "C5b", "C5c", "C5d")}),
    }
    c4 = claims["C4"]
    result["C4"]["measured"]["trained_rope_twin"] = rope_twin_evidence(
        metrics, twin_runs["rope_twin"], c4["from_layer"], c4["min_reliability"], c4["max_start_deficit"])
    result |= position_claims | revision_claims
    commits = settings.get("criterion_commits", {})
    for name, claim in result.items():
        entry = "C8" if name.startswith("C8") else name
        claim["criterion_commit"] = commits.get(entry, "unknown")
        claim["paper"] = settings["entries"][entry]["paper"]
        settle(claim)
    return result
