"""Claim C3, the trained NoPE twin over its seeds, in one place: its decision (the preconditions, then each
statistic over the seeds by the seed rule, on the i.i.d. probe and its controls), the paper's values and
tables (LaTeX, from results/claims.json, never typed in) and docs/results.md's table (Markdown).  Every
phrase whose meaning depends on a verdict is made here."""

from __future__ import annotations

import json
import math
from pathlib import Path

from behind_rope.claims import markdown as md
from behind_rope.claims.format import bound, interval, listing, models, number, percent, span, tex_escape, verdict
from behind_rope.claims.outcome import precondition

# ---- the decision --------------------------------------------------------------------------------


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


class _ProbeRule:
    """C3's statistics of one score run and the seed rule over them, with the amplification bound in units the twin
    and the simulation share: the key slope relative to each row's score spread (behind_rope.maths.metrics.key_slopes),
    which no common scale of the scores moves.  A trained twin's logits and the simulation's scores of unit vectors
    come on different scales, and so does an untrained twin's."""

    def __init__(self, metrics: dict, simulation_metrics: dict, c3: dict):
        self.metrics, self.c3 = metrics, c3
        layer = c3["amplification_layer"]
        self.simulated = {name: _layer(simulation_metrics[name], layer)["key_trend"]
                          for name in c3["simulation_variants"]}
        self.reference = max(self.simulated.values())
        self.thresholds = ({f"locality_layer_{layer}": c3["min_locality"] for layer in c3["locality_layers"]}
                           | {"amplification": c3["min_amplification"]})
        # Recorded, decides nothing: the locality a probe run would show were every query's slope the one the
        # amplification bound asks for, given that run's sampling noise (can locality reach its bound at this size?).
        self.bound_slope = c3["min_amplification"] * self.reference

    def statistics(self, run: str) -> dict:
        values = {f"locality_layer_{layer}": _layer(self.metrics[run], layer)["locality"]
                  for layer in self.c3["locality_layers"]}
        layer = _layer(self.metrics[run], self.c3["amplification_layer"])
        return values | {"amplification": layer["key_trend"] / self.reference, "key_trend": layer["key_trend"],
                         "key_slope": layer["key_slope"]}

    def decide(self, values_by_seed: dict[str, dict]) -> dict:
        from behind_rope.claims.seeds import seed_rule

        c3 = self.c3
        rules = {name: seed_rule({seed: values[name] for seed, values in values_by_seed.items()}, threshold,
                                 "at_least", c3["confidence"], c3["min_seeds_passing"], c3["min_seeds"])
                 for name, threshold in self.thresholds.items()}
        return {"statistics": rules, "passed": all(rule["passed"] for rule in rules.values())}

    def on_its_own(self, values: dict) -> bool:
        from behind_rope.claims.seeds import clears

        return all(clears(values[name], threshold, "at_least") for name, threshold in self.thresholds.items())

    def _noises(self, run: str) -> list[float]:
        from behind_rope.claims.power import row_noises

        layer = _layer(self.metrics[run], self.c3["amplification_layer"])
        return row_noises(layer["key_trend_half_differences"], self.c3["row_noise_window"])

    def locality_at_bound(self, run: str) -> float:
        from behind_rope.claims.power import positive_shares

        shares = positive_shares(self.bound_slope, self._noises(run))
        return sum(shares) / len(shares)

    def power(self, run: str) -> dict:
        from behind_rope.claims.power import locality_power, sequences_for_power

        c3, rows = self.c3, self._noises(run)
        ordered = sorted(rows)
        return {"power": locality_power(self.bound_slope, rows, c3["min_locality"]), "rows": len(rows),
                "median_row_noise": ordered[len(ordered) // 2], "largest_row_noise": ordered[-1],
                "sequences": c3["probe_sequences"],
                "sequences_for_power": sequences_for_power(c3["probe_sequences"], self.bound_slope, rows,
                                                           c3["min_locality"], c3["min_power"])}


def _seed_record(rule: _ProbeRule, training: dict, roles: dict, rope_loss: float, c3: dict) -> dict:
    """One NoPE seed: its statistics in every role, whether it passes on its own, its sanity, competence and power."""
    stats = {role: rule.statistics(run) for role, run in roles.items()}
    return {"seed": training.get("seed"), **stats, "passes_on_its_own": rule.on_its_own(stats["probe"]),
            "sanity": _sanity(training, c3["min_gain_over_unigram"]),
            "steps": training["steps"], "stopped_early": training.get("stopped_early"),
            "cpu_capability": training.get("cpu_capability"), "dtype": training.get("dtype"),
            "locality_at_bound": rule.locality_at_bound(roles["probe"]),
            "competence": competence(training, rope_loss, c3["min_order_gap"], c3["order_confidence"],
                                     c3["max_loss_above_rope"]),
            "power": rule.power(roles["probe"])}


def _panel_rules(panel_statistics: dict, c3: dict) -> dict:
    """Figure 3, panel by panel: each statistic the paper states of a panel, over the seeds by the seed rule."""
    from behind_rope.claims.seeds import seed_rule

    panel_rules = {}
    for letter, bounds in c3["panels"].items():
        rules = {}
        for stat, stated in bounds.items():
            ((direction, limit),) = stated.items()
            values = {seed: panel_statistics[seed][letter][stat] for seed in panel_statistics}
            rules[stat] = seed_rule(values, limit, direction, c3["confidence"], c3["min_seeds_passing"],
                                    c3["min_seeds"])
        panel_rules[letter] = {"statistics": rules, "passed": all(rule["passed"] for rule in rules.values())}
    return panel_rules


def _c3_threshold(c3: dict) -> str:
    layers = ", ".join(map(str, c3["locality_layers"]))
    min_seeds = c3["min_seeds"]
    return (f"{'on one seed' if min_seeds == 1 else f'over >= {min_seeds} seeds'} of the NoPE twin on i.i.d. "
            f"tokens, each of locality (layers {layers}) >= {c3['min_locality']} and layer-{c3['amplification_layer']} "
            f"key slope relative to each row's score spread >= {c3['min_amplification']} x the largest simulated one: "
            + ("the seed clears it" if min_seeds == 1 else
               f"the lower end of the {c3['confidence']:.0%} t-interval of the mean clears it and >= "
               f"{c3['min_seeds_passing']} seeds clear it on their own")
            + f"; every seed and the RoPE twin beat a unigram model by {c3['min_gain_over_unigram']} nats; the same "
            "weights without the mask, and the untrained twin's seeds, fail the same rule")


def _every_layer(metrics: dict, runs: dict) -> dict:
    """Recorded: every layer of every seed on the probe, the deciding layers and the others alike (a layer that
    reverses on some seeds is a result, not a reason to pick the layers), and every layer of the first seed's runs
    (the twin Figure 3 shows) and of its untrained twin."""
    first_seed, first_untrained = next(iter(runs["seeds"])), next(iter(runs["untrained"]))
    shown = {**runs["seeds"][first_seed],
             **{f"untrained_{role}": run for role, run in runs["untrained"][first_untrained].items()}}
    probe_layers = {str(row["layer"]): {
        statistic: {name: _layer(metrics[roles["probe"]], row["layer"])[statistic]
                    for name, roles in runs["seeds"].items()}
        for statistic in ("locality", "key_slope")}
        for row in metrics[runs["seeds"][first_seed]["probe"]]["layers"]}
    return {"probe_layers": probe_layers,
            "all_layers": {run.replace("/", "_"): metrics[run]["layers"] for run in shown.values()}}


def claim_c3(metrics: dict, simulation_metrics: dict, training: dict, panel_statistics: dict, runs: dict,
             c3: dict) -> dict:
    """Trained NoPE twin, over its seeds: the mask makes it favour nearby keys, more strongly than the
    parameter-free simulation does (behind_rope.claims.seeds has the rule; config/claims.yaml the constants).

    ``metrics`` maps ``<twin>/<run>`` to metrics files, ``training`` a twin to its training metrics and
    ``panel_statistics`` a seed of the twin to its Figure 3 statistics (behind_rope.claims.panels); ``runs`` is
    experiments.runs.c3_twin_runs; ``c3`` is C3's entry of config/claims.yaml, its parts flattened
    (behind_rope.config.claim_arguments).  The statistics are decided on the i.i.d. probe; the same statistics of
    the same weights without the mask, and of every seed of the untrained twin, are controls that must fail
    the same rule.  Held-out text is recorded, and so is Figure 3, panel by panel.
    """
    rule = _ProbeRule(metrics, simulation_metrics, c3)
    rope_twins = runs.get("rope_seeds", [c3["rope_twin"]])
    rope_loss = sum(training[name]["validation_loss"] for name in rope_twins) / len(rope_twins)
    seeds = {name: _seed_record(rule, training[name], roles, rope_loss, c3) for name, roles in runs["seeds"].items()}
    untrained_seeds = {name: {role: rule.statistics(run) for role, run in roles.items()}
                       for name, roles in runs["untrained"].items()}
    for name, stats in untrained_seeds.items():
        stats["passes_on_its_own"] = rule.on_its_own(stats["probe"])
        stats["sanity"] = _sanity(training[name], c3["min_gain_over_unigram"])

    probe_rule = rule.decide({name: seed["probe"] for name, seed in seeds.items()})
    controls = {
        "no_mask_probe": {"run": c3["no_mask_probe"],
                          **rule.decide({name: seed["probe_no_mask"] for name, seed in seeds.items()})},
        "untrained": {"twin": c3["untrained"],
                      **rule.decide({name: seed["probe"] for name, seed in untrained_seeds.items()}),
                      "seeds": untrained_seeds},
    }
    sanity = {name: seed["sanity"] for name, seed in seeds.items()} | {
        name: _sanity(training[name], c3["min_gain_over_unigram"]) for name in rope_twins}
    checks = {
        "enough_seeds": len(seeds) >= c3["min_seeds"],
        "training_sanity": all(entry["passed"] for entry in sanity.values()),
        **{f"{name}_on_iid_tokens": entry["passed"] for name, entry in probe_rule["statistics"].items()},
        "no_mask_probe_fails": not controls["no_mask_probe"]["passed"],
        "untrained_twin_fails": not controls["untrained"]["passed"],
    }
    rope_orders = {name: uses_order(training[name], c3["min_order_gap"], c3["order_confidence"]) for name in rope_twins}
    gap = loss_gap({name: training[name]["validation_loss"] for name in seeds},
                   {name: training[name]["validation_loss"] for name in rope_twins}, c3["max_loss_above_rope"],
                   c3["confidence"], min(c3["min_seeds_passing"], len(seeds)))
    preconditions = c3_preconditions(seeds, rope_orders, gap, c3["min_order_gap"], c3["order_confidence"],
                                     c3["min_power"], c3["order_sequences"])
    return {
        "statement": "A decoder trained without positional encoding favours nearby keys because of the causal mask, "
        "and its learned weights make that position dependence stronger than the parameter-free simulation's.",
        "threshold": _c3_threshold(c3),
        "preconditions": preconditions,
        "measured": {
            "seeds": seeds,
            "rope_twin_order": rope_orders[rope_twins[0]],
            "rope_seeds_order": rope_orders,
            "loss_gap": gap,
            "probe": probe_rule,
            "controls": controls,
            "panels": _panel_rules(panel_statistics, c3),
            "sanity": sanity,
            "simulation_key_slopes": rule.simulated,
            "probe_power": {"layer": c3["amplification_layer"], "bound_slope": rule.bound_slope,
                            "row_noise_window": c3["row_noise_window"],
                            "locality_at_bound": {name: seed["locality_at_bound"] for name, seed in seeds.items()},
                            "power": {name: seed["power"] for name, seed in seeds.items()}},
            **_every_layer(metrics, runs),
            "checks": checks,
        },
        "passed": all(checks.values()),
    }


# ---- the paper's values and tables ---------------------------------------------------------------


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
CONTROLS = {"no_mask_probe": "the same weights without the mask",
            "untrained": "the untrained twin's seeds, each at its trained seed's weight scale"}


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
        return listing(number(md.mean(seed[role][name] for seed in seeds.values())) for name in localities)

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
                "is not, and the other scales decide over several seeds.")
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
                     + " & ".join(number(md.mean(seed[role][name] for seed in seeds.values())) for name in names) + r" & & \\")
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


# ---- docs/results.md -----------------------------------------------------------------------------


def _steps(twin: str, seed: dict, run: Path | None) -> str:
    """Steps trained, and why it stopped: the training-length rule before the cap, or the cap (read from the
    run's results/training/<twin>/metrics.json; the rule may also trigger at the cap itself)."""
    metrics = run / "results" / "training" / twin / "metrics.json" if run else None
    cap = json.loads(metrics.read_text())["max_steps"] if metrics and metrics.exists() else None
    if cap is None:
        return f"{seed['steps']} ({'rule' if seed['stopped_early'] else 'cap'})"
    return f"{seed['steps']} ({'rule' if seed['stopped_early'] and seed['steps'] < cap else 'cap'})"


def results_table(claims: dict, run: Path | None = None) -> str:
    """Claim C3 as the pipeline decided it: per seed, each statistic over the seeds (the probe and its
    controls), Figure 3 panel by panel, and the RoPE twin recorded beside C4.  ``run`` is the run's folder,
    for each twin's training cap."""
    c3 = claims["C3"]["measured"]
    names = list(c3["probe"]["statistics"])
    failed = [check for check, ok in c3["checks"].items() if not ok]
    rows = [md.claim_line(claims, "C3"), "",
            "Checks: " + ", ".join(f"{check} {'yes' if ok else 'no'}" for check, ok in c3["checks"].items())
            + (f" (failing: {', '.join(failed)})." if failed else " (all hold)."), "",
            "Per seed, on the i.i.d. probe with the mask (steps trained: stopped by the rule before the cap, or at the "
            "cap; each "
            "statistic; on its own: every bound cleared; the sanity check: held-out loss / unigram loss):", "",
            "| seed | twin | steps | " + " | ".join(names) + " | on its own | sanity | CPU capability, dtype |",
            "|---" * (len(names) + 6) + "|"]
    for twin, seed in c3["seeds"].items():
        sanity = seed["sanity"]
        steps = _steps(twin, seed, run)
        rows.append(f"| {seed['seed']} | {twin} | {steps} | " + " | ".join(md.value(seed["probe"][n], ".3f") for n in names)
                    + f" | {'PASS' if seed['passes_on_its_own'] else 'FAIL'} | {sanity['validation_loss']:.3f} / "
                    f"{sanity['unigram_loss']:.3f} ({'PASS' if sanity['passed'] else 'FAIL'}) | {seed['cpu_capability']}, {seed.get('dtype')} |")
    if "competence" in next(iter(c3["seeds"].values())):
        rows += ["", "Per seed, the preconditions (decided before the statistics are read): the order gap in held-out "
                 "nats (mean ± standard error; its lower 95 % end), the held-out loss above the RoPE twin's, and the "
                 "probe's power at the bound (the probe sequences that would give it the power asked):", "",
                 "| twin | order gap | lower end | loss above RoPE | competent | power | sequences for power |",
                 "|---|---|---|---|---|---|---|"]
        for twin, seed in c3["seeds"].items():
            order, competence, power = seed["competence"]["uses_order"], seed["competence"], seed["power"]
            rows.append(f"| {twin} | {order['order_gap']:+.3f} ± {order['standard_error']:.3f} | {order['interval_low']:+.3f} "
                        f"| {competence['loss_above_rope']:+.3f} | {'yes' if competence['passed'] else 'no'} "
                        f"| {power['power']:.2f} | {power['sequences_for_power'] or 'none'} |")
        for twin, rope in c3.get("rope_seeds_order", {"RoPE twin": c3["rope_twin_order"]}).items():
            rows.append(f"| {twin} (RoPE) | {rope['order_gap']:+.3f} ± {rope['standard_error']:.3f} | "
                        f"{rope['interval_low']:+.3f} | | {'uses order' if rope['passed'] else 'does not use order'} | | |")
    if "loss_gap" in c3:
        gap = c3["loss_gap"]
        low, high = gap["interval"]
        rows += ["", f"The loss bound over seeds: the NoPE seeds' mean held-out loss {gap['nope_mean']:.3f} ({gap['nope_seeds']} "
                 f"seeds) minus the RoPE seeds' {gap['rope_mean']:.3f} ({gap['rope_seeds']}) is {gap['difference']:+.3f} nats, "
                 f"{gap['confidence']:.0%} interval [{low:+.3f}, {high:+.3f}] with the seeds' spread pooled (sd "
                 f"{gap['pooled_sd']:.3f}); {gap['seeds_within']} of {gap['nope_seeds']} NoPE seeds within {gap['bound']} "
                 f"on their own: {'met' if gap['passed'] else 'not met'}"
                 + (f" (about {gap['seeds_to_resolve']} seeds of each twin would resolve it)."
                    if not gap["passed"] and gap["seeds_to_resolve"] else ".")]
    if "probe_layers" in c3:
        rows += ["", "Every layer on the probe, seed by seed (recorded; layer 2 decides): locality, and the key slope.",
                 "", "| layer | locality per seed | key slope per seed |", "|---|---|---|"]
        for layer, values in c3["probe_layers"].items():
            rows.append(f"| {layer} | " + ", ".join(f"{v:.2f}" for v in values["locality"].values()) + " | "
                        + ", ".join(f"{v:+.4f}" for v in values["key_slope"].values()) + " |")
    rows += ["", "Each statistic over the seeds by the seed rule (mean [95 % t-interval]; seeds clearing the bound; "
             "verdict). The probe decides; its controls must fail; held-out text is recorded (mean over the seeds):", "",
             "| run | " + " | ".join(names) + " | all |", "|---" * (len(names) + 2) + "|"]
    groups = [("i.i.d. probe, mask (decides)", c3["probe"]),
              (f"control: the same weights without the mask ({c3['controls']['no_mask_probe']['run']})",
               c3["controls"]["no_mask_probe"]),
              (f"control: the untrained twin's seeds ({c3['controls']['untrained']['twin']})", c3["controls"]["untrained"])]
    for label, result in groups:
        rows.append(f"| {label} | " + " | ".join(md.rule_cell(result["statistics"][n]) for n in names)
                    + f" | {'PASS' if result['passed'] else 'FAIL'} |")
    for role, label in (("text", "held-out text, mask (recorded)"), ("text_no_mask", "held-out text, no mask (recorded)")):
        means = [md.mean(seed[role][n] for seed in c3["seeds"].values()) for n in names]
        rows.append(f"| {label} | " + " | ".join(md.value(m, ".3f") for m in means) + " | |")
    rows += ["", "The untrained twin per seed (i.i.d. probe; sanity):", "",
             "| twin | " + " | ".join(names) + " | on its own | held-out loss |", "|---" * (len(names) + 3) + "|"]
    for twin, seed in c3["controls"]["untrained"]["seeds"].items():
        rows.append(f"| {twin} | " + " | ".join(md.value(seed["probe"][n], ".4f") for n in names)
                    + f" | {'PASS' if seed['passes_on_its_own'] else 'FAIL'} | {seed['sanity']['validation_loss']:.3f} |")
    rows += ["", "Figure 3 panel by panel (recorded, not part of C3's verdict), each statistic over the seeds' Gram matrices "
             "by the same seed rule: " + "; ".join(
                 f"({letter}) {md.pass_fail(panel['passed'])}: " + ", ".join(f"{name} {md.rule_cell(rule)}"
                                                                        for name, rule in panel["statistics"].items())
                 for letter, panel in c3["panels"].items()) + "."]
    rope = claims["C4"]["measured"]["trained_rope_twin"]
    rows += ["", "The RoPE twin, recorded beside C4 (`C4.measured.trained_rope_twin`, per layer), meets C4's check in "
             + (", ".join(run for run, evidence in rope.items() if evidence["meets_c4_check"]) or "none of its runs") + "."]
    return "\n".join(rows)
