"""Claims C6-C9: where absolute position comes from, tested per head; their decision, the paper's values and
table (LaTeX) and docs/results.md's tables (Markdown), in one place (behind_rope.position.heads,
behind_rope.maths.position_sources and behind_rope.position.patching have the measures).

They test the abstract of a follow-up reading (Ruscio, Nanni and Silvestri, 2026) with our own
measures; each may fail on our models, and a failure, honestly measured, is a result.  Every
threshold is in the pre-registration (config/claims.yaml, whose metric texts give the rules in
words), every claim records its controls with their verdicts (each must fail its check) and its
noise floor, and an effect counts only above ``floor_multiple`` noise floors.

- **C6, the mask's part:** the per-head slope of log Z against log(i + 1), against the
  parameter-free causal RoPE simulation's; the no-mask runs are the controls.
- **C7, BOS replacement:** the share of key 0's positional signal at the early queries (what its value path
  carries into them) that is left after the position-0 embedding is replaced, kept signed; decided on the
  model whose tokenizer adds BOS.
- **C8a, NTK on the components:** |R| must fall at every NTK factor; the NTK simulation is the control.
  **C8b, where the window binds:** the per-head log-Z slope at queries beyond the window grows with
  depth over the sliding-window layers; a model without a window is the control.
- **C9, position 0 as a closed system that sink heads read:** patching position 0's residual state
  changes the sink heads' outputs; patching the middle position must not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from behind_rope.atomic import npz_metadata as _metadata
from behind_rope.claims import markdown as md
from behind_rope.claims.format import listing, model_name, models, number, percent, span, tex_escape, verdict
from behind_rope.claims.outcome import decided_by_parts, part_outcome, precondition
from behind_rope.position.heads import log_z_slopes, slopes_with_floor, spearman, visible_log_z

# ---- the decision --------------------------------------------------------------------------------


def _mean(values) -> float:
    values = [v for v in values if v is not None and v == v]
    return float(np.mean(values)) if values else float("nan")


def _layer_index(arrays: dict) -> dict[int, int]:
    """1-based layer -> index into a score file's per-layer arrays."""
    return {int(layer): k for k, layer in enumerate(arrays["layers"])}


def _floats(values) -> list[float]:
    return [float(v) for v in np.asarray(values).ravel()]


def sequences_to_resolve(sequences: int, floors, resolvable: float, floor_multiple: float) -> int:
    """The sequences at which ``floor_multiple`` x every one of ``floors`` would be at most ``resolvable``, a floor
    falling as one over the root of the sequences; never fewer than ``sequences``."""
    # rounded before the ceiling, so that a float's last bit does not add a sequence
    return math.ceil(round(max(sequences, *(sequences * (floor_multiple * f / resolvable) ** 2 for f in floors)), 6))


# --- C6 ---------------------------------------------------------------------------------------


def head_power(carrying: np.ndarray, slopes: np.ndarray, floors: np.ndarray, resolvable: float,
               floor_multiple: float, min_head_share: float) -> dict:
    """One layer of C6's check, with its power: a head that does not carry the mask's position is unresolved
    when ``floor_multiple`` floors exceed ``resolvable`` (its floors could hide a head at the bound).  The
    layer holds when at least ``min_head_share`` of its heads carry; it is decided when it holds, or when it
    would not even if every unresolved head carried."""
    unresolved = ~carrying & ~(floor_multiple * floors <= resolvable)  # a NaN floor resolves nothing
    bar = min_head_share * len(carrying)
    holds = bool(carrying.sum() >= bar)
    return {"slopes": _floats(slopes), "floors": _floats(floors), "heads_carrying": int(carrying.sum()),
            "heads_unresolved": int(unresolved.sum()), "heads": len(carrying), "share": float(carrying.mean()),
            "holds": holds, "decided": holds or bool(carrying.sum() + unresolved.sum() < bar),
            "unresolved_floors": _floats(floors[unresolved])}


def mask_part_check(arrays: dict, reference: np.ndarray, sequences: int, c6: dict) -> dict:
    """C6's check on one run of ``sequences`` sequences: per head, the slope of log Z - a(i) against log(i + 1)
    (queries >= ``c6["min_query"]``), against ``reference``, the simulation's slope per layer (index = layer - 1),
    each head's floor from ``c6["floor_splits"]`` splits of the run's groups of sequences; with its power
    precondition (``c6``: C6's entry of config/claims.yaml, its parts flattened).  The raw log Z's
    slopes, a(i) left in, are recorded beside, deciding nothing."""
    index = _layer_index(arrays)
    found = slopes_with_floor(visible_log_z(arrays), c6["min_query"], c6["floor_splits"], c6["floor_quantile"],
                              key="log_z_visible")
    raw = log_z_slopes(np.asarray(arrays["log_z"]), c6["min_query"])
    rows = {}
    for layer in c6["layers"]:
        slope, floor = found["slope"][index[layer]], found["floor"][index[layer]]
        bound = c6["min_slope_ratio"] * reference[layer - 1]
        carrying = (slope >= bound) & (slope > c6["floor_multiple"] * floor)
        rows[str(layer)] = head_power(carrying, slope, floor, c6["min_resolvable_slope_ratio"] * reference[layer - 1],
                                      c6["floor_multiple"], c6["min_head_share"])
        rows[str(layer)] |= {"slope_ratio_to_simulation": _floats(slope / reference[layer - 1]),
                             "raw_slopes": _floats(raw[index[layer]])}
    holding = sum(row["holds"] for row in rows.values())
    undecided = [layer for layer, row in rows.items() if not row["decided"]]
    passed = holding >= c6["min_layers"]
    resolvable = {layer: c6["min_resolvable_slope_ratio"] * reference[int(layer) - 1] for layer in undecided}
    needed = (max(sequences_to_resolve(sequences, rows[layer]["unresolved_floors"], resolvable[layer],
                                       c6["floor_multiple"])
                  for layer in undecided) if undecided and min(resolvable.values()) > 0 else None)
    power = precondition(
        passed or holding + len(undecided) < c6["min_layers"],
        f"{holding} of {len(rows)} layers hold and {len(undecided)} could still change (heads whose "
        f"{c6['floor_multiple']:g} floors exceed {c6['min_resolvable_slope_ratio']:g} x b_sim), against "
        f"{c6['min_layers']} needed, at {sequences} sequences",
        f"about {needed:,} sequences of the first inputs (llm.inputs.first.sequences), at which every unresolved "
        f"head's floors resolve {c6['min_resolvable_slope_ratio']:g} x b_sim" if needed
        else "a simulation slope b_sim above zero in every checked layer" if undecided else "nothing: it is decided",
        sequences=sequences, sequences_to_resolve=needed, layers_undecided=[int(layer) for layer in undecided])
    return {"passed": passed, "layers_holding": holding, "layers": rows, "preconditions": {"power": power},
            "noise_floor_median": float(np.median([f for row in rows.values() for f in row["floors"]])),
            "floor_groups": found["groups"]}


def positional_leakage_record(arrays: dict) -> dict:
    """Ruscio et al.'s positional leakage of a score file, recorded and deciding nothing: per layer, each head's delta
    R^2 over the causal pairs, as their code measures it and with each head's query offsets a(i) removed (which its i
    term takes up and the softmax cannot see; behind_rope.maths.decompose.positional_leakage), and their means."""
    if "leakage" not in arrays:
        return {}
    return {str(layer): {"heads": _floats(arrays["leakage"][k]),
                         "heads_without_offset": _floats(arrays["leakage_without_offset"][k]),
                         "mean": _mean(_floats(arrays["leakage"][k])),
                         "mean_without_offset": _mean(_floats(arrays["leakage_without_offset"][k]))}
            for layer, k in _layer_index(arrays).items()}


def claim_c6(scores: Mapping, runs: dict, simulation_runs: dict, c6: dict) -> dict:
    """C6 from the score files of each model's probe and no-mask runs and the simulation's (``c6``: C6's entry of
    config/claims.yaml, its parts flattened)."""
    simulated = {role: slopes_with_floor(visible_log_z(scores[run]), c6["min_query"], c6["floor_splits"],
                                         c6["floor_quantile"], key="log_z_visible")
                 for role, run in simulation_runs.items()}
    reference = simulated["probe"]["slope"]  # b_sim per layer (index = layer - 1)
    models = {}
    for model, pair in runs.items():
        probe, no_mask = (mask_part_check(scores[run], reference, _metadata(scores[run])["sequences"], c6)
                          for run in (pair["probe"], pair["no_mask"]))
        for check in (probe, no_mask):
            check["outcome"] = part_outcome(check)
        models[model] = {"passed": probe["passed"] and not no_mask["passed"], "probe": probe, "no_mask": no_mask,
                         "preconditions": {"power": probe_and_control_decided(("probe", probe), ("no_mask", no_mask))}}
        models[model]["outcome"] = part_outcome(models[model])

    def simulation_check(role):
        found = simulated[role]
        slope, floor = found["slope"], found["floor"]
        rows = {str(layer): {"slope": float(slope[layer - 1]), "floor": float(floor[layer - 1]),
                             "holds": bool(slope[layer - 1] >= c6["min_slope_ratio"] * reference[layer - 1]
                                           and slope[layer - 1] > c6["floor_multiple"] * floor[layer - 1])}
                for layer in c6["layers"]}
        return {"passed": all(row["holds"] for row in rows.values()), "layers": rows}

    simulation = {"probe": simulation_check("probe"), "no_mask": simulation_check("no_mask")}
    controls = {f"{model} without the mask": {"passed": m["no_mask"]["passed"]} for model, m in models.items()}
    controls["simulation without the mask"] = {"passed": simulation["no_mask"]["passed"]}
    return {
        "statement": "The causal mask ties each query's softmax normaliser to its position: per head, log Z with the "
        "query offset a(i) removed grows with log(i + 1) as the parameter-free causal simulation's does.",
        "threshold": "a head carries the mask's position when its slope of log Z - a(i) (queries >= "
        f"{c6['min_query']}) is >= {c6['min_slope_ratio']} x the simulation's in the same layer and > "
        f"{c6['floor_multiple']:g} x its floor (the {c6['floor_quantile']:g} quantile of |b_A - b_B| over "
        f"{c6['floor_splits']} random splits of the sequences' groups); >= {c6['min_head_share']:.0%} of the heads in "
        f">= {c6['min_layers']} of layers {list(c6['layers'])}, in every LLM; the simulation "
        "is above its floor in every checked layer; every no-mask run fails the same check; decided where the floors "
        f"could see a head at {c6['min_resolvable_slope_ratio']:g} x the simulation's slope (else UNDECIDED)",
        "measured": {"models": models, "simulation": simulation, "min_query": c6["min_query"],
                     "min_slope_ratio": c6["min_slope_ratio"],  # the figure draws the threshold from it
                     # Recorded beside C6, deciding nothing: the follow-up line's own measure on the same runs.
                     "positional_leakage": {model: {role: positional_leakage_record(scores[run])
                                                    for role, run in (("mask", pair["probe"]),
                                                                      ("no_mask", pair["no_mask"]))}
                                            for model, pair in runs.items()}},
        "controls": controls,
        "noise_floor": {"what": f"the {c6['floor_quantile']:g} quantile of |b_A - b_B| of each head's slope over "
                        f"{c6['floor_splits']} "
                        "random splits of the sequences' groups into halves (median over the checked heads)",
                        "splits": c6["floor_splits"], "quantile": c6["floor_quantile"],
                        **{model: m["probe"]["noise_floor_median"] for model, m in models.items()}},
        "preconditions": {"models_decided": decided_by_parts(
            models, "model", fails_anyway=simulation["no_mask"]["passed"] or not simulation["probe"]["passed"])},
        "passed": all(m["passed"] for m in models.values()) and simulation["probe"]["passed"]
        and not simulation["no_mask"]["passed"],
    }


# --- C7 ---------------------------------------------------------------------------------------


def _signed_component(metrics: dict, run: str, layers, name: str = "first_key") -> dict:
    """The signed mean over ``layers`` of an early-query component, with its two halves."""
    rows = [r for r in metrics[run]["layers"] if r["layer"] in layers]
    return {"mean": _mean([r[f"{name}_early"] for r in rows]),
            "halves": [_mean([r[f"{name}_early_halves"][h] for r in rows]) for h in (0, 1)]}


HALVES = ("", "_half_a", "_half_b")  # a score file's arrays over all sequences, and over each half


def key0_signal(arrays: dict, layers, half: str = "", name: str = "key0_path") -> np.ndarray:
    """Key 0's positional signal at the early queries: per checked layer, what key 0's value path adds to each
    early query's attention output (its mean over the sequences), less its mean over the early queries 1 .. S/10;
    (layers, queries, width).  ``half`` is ``""``, ``"_half_a"`` or ``"_half_b"``; ``"_groups"`` gives each group
    of sequences' own, (groups, layers, queries, width)."""
    index = _layer_index(arrays)
    path = np.asarray(arrays[f"{name}{half}"], dtype=float)[..., [index[layer] for layer in layers], 1:, :]
    return path - path.mean(axis=-2, keepdims=True)


def share_floor(original: np.ndarray, changed: np.ndarray, sizes, floor_splits: int, floor_quantile: float) -> float:
    """The noise floor of a remaining share: the ``floor_quantile`` of |rho_A - rho_B| over ``floor_splits`` random
    splits of the groups of sequences into halves, both runs read on the same groups (``original`` and ``changed``:
    each group's signal, (groups, ...)).

    A half's rho = <w C, w O> / <w O, w O> for its weights w over the groups, so the groups' inner products (two
    groups x groups matrices) give every split's rho without forming a half's signal."""
    from behind_rope.maths.splits import half_weights

    if len(original) < 2:
        return float("nan")
    groups_o, groups_c = (np.asarray(x, dtype=float).reshape(len(original), -1) for x in (original, changed))
    cross, own = groups_o @ groups_c.T, groups_o @ groups_o.T

    def shares(weights):
        return (np.einsum("sg,gh,sh->s", weights, cross, weights, optimize=True)
                / np.einsum("sg,gh,sh->s", weights, own, weights, optimize=True))

    weights_a, weights_b = half_weights(sizes, floor_splits)
    return float(np.quantile(np.abs(shares(weights_a) - shares(weights_b)), floor_quantile))


def _size(signal: np.ndarray) -> float:
    """The root mean square over the layers and early queries of a signal's norm."""
    return float(np.sqrt(np.mean(np.sum(signal ** 2, axis=-1))))


def remaining_share(original: np.ndarray, changed: np.ndarray) -> float:
    """The share of ``original`` that ``changed`` keeps in its direction: sum <changed, original> / sum |original|^2.
    1 keeps it all, 0 removes it, a negative share turns it around."""
    return float(np.sum(changed * original) / np.sum(original ** 2))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    """How far two signals point the same way (1: alike, 0: unrelated), over all their entries."""
    return float(np.sum(a * b) / np.sqrt(np.sum(a ** 2) * np.sum(b ** 2)))


def replacement_effect(original: dict, changed: dict, min_fraction_removed: float, floor_multiple: float,
                       min_resolvable_fraction: float, sequences: int, floor_splits: int, floor_quantile: float) -> dict:
    """How much of key 0's positional signal a replacement leaves: the remaining share rho in the mean run and
    in each half (the replaced run read on the same sequences), and its floor (:func:`share_floor`, from the
    signals' ``_groups`` and ``group_sizes``).  The replacement removes the signal when 1 - rho >=
    ``min_fraction_removed`` in the mean and both halves and exceeds ``floor_multiple`` floors; a negative rho
    removes more than all of it (``sign_flipped``).  Its power: the floors must resolve a removal of
    ``min_resolvable_fraction``."""
    ratios = [remaining_share(original[half], changed[half]) for half in HALVES]
    floor = share_floor(original["_groups"], changed["_groups"], original["group_sizes"], floor_splits, floor_quantile)
    # Recorded, deciding nothing: each layer's share and its halves (a single split's difference can be small by chance).
    by_layer = [[remaining_share(original[half][k], changed[half][k]) for half in HALVES] for k in range(len(original[""]))]
    removed = 1 - ratios[0]
    above = bool(abs(removed) > floor_multiple * floor)
    needed = sequences_to_resolve(sequences, [floor], min_resolvable_fraction, floor_multiple)
    power = precondition(
        floor_multiple * floor <= min_resolvable_fraction,
        f"{floor_multiple:g} floors = {floor_multiple * floor:.3g} against a removal of {min_resolvable_fraction:.0%}, "
        f"at {sequences} sequences", f"about {needed:,} sequences of the first inputs (llm.inputs.first.sequences)",
        sequences=sequences, sequences_to_resolve=needed)
    return {"ratio": ratios[0], "ratio_halves": ratios[1:], "fraction_removed": removed,
            "fraction_removed_band": [1 - max(ratios), 1 - min(ratios)], "sign_flipped": ratios[0] < 0,
            "floor": floor, "change": abs(removed), "above_floor": above, "component": _size(changed[""]),
            "component_halves": [_size(changed[h]) for h in HALVES[1:]],
            "removes": bool(all(1 - r >= min_fraction_removed for r in ratios) and above),
            "ratio_by_layer": [{"ratio": mean, "ratio_halves": [a, b]} for mean, a, b in by_layer],
            "preconditions": {"power": power}}


def _bands(effects: dict) -> dict:
    """Replacements that differ only in a trailing seed (bos_random0, bos_random1, ...) as one band."""
    groups: dict[str, list] = {}
    for name, effect in effects.items():
        groups.setdefault(re.sub(r"\d+$", "", name), []).append((name, effect))
    bands = {}
    for group, members in groups.items():
        ratios = [e["ratio"] for _, e in members]
        bands[group] = {"members": [n for n, _ in members], "ratio_band": [min(ratios), max(ratios)],
                        "fraction_removed_band": [1 - max(ratios), 1 - min(ratios)],
                        "sign_flips": sum(e["sign_flipped"] for _, e in members),
                        "removes": sum(e["removes"] for _, e in members)}
    return bands


def _first_key_ratio(metrics: dict, original: str, run: str, layers) -> float:
    """The old proxy, recorded: the signed ratio R'/R of key 0's score residual at the early queries."""
    return _signed_component(metrics, run, layers)["mean"] / _signed_component(metrics, original, layers)["mean"]


def cut_alike(claimed: float, other: float, floors, floor_multiple: float) -> bool:
    """Whether a change cuts another part at least as much as the part a claim credits (``claimed`` and ``other``,
    each a fraction removed or a relative change), within ``floor_multiple`` of the larger of their ``floors``: what a
    control that reaches the same place asks, since were the change hitting everything alike, the claim's part would
    not stand out."""
    return bool(other >= claimed - floor_multiple * max(floors))


def signals(arrays: dict, layers, other_keys: bool = False) -> dict:
    """Key 0's positional signal of a run over all sequences, each half and each group, with the groups' sizes;
    with ``other_keys``, the positional signal that every other key carries into the early queries instead (the
    attention output less key 0's part)."""
    def signal(part):
        key0 = key0_signal(arrays, layers, part)
        return key0_signal(arrays, layers, part, name="attention_path") - key0 if other_keys else key0

    return {part: signal(part) for part in (*HALVES, "_groups")} | {"group_sizes": arrays["group_sizes"]}


def claim_c7(scores: Mapping, metrics: dict, runs: dict, identity_gaps: dict, c7: dict) -> dict:
    """C7 from the score and metrics files of each model's original and replaced runs (``c7``: C7's entry of
    config/claims.yaml, its parts flattened)."""
    models = {}
    for model, named in runs.items():
        arrays = scores[named["original"]]
        original = signals(arrays, c7["layers"])
        attention = key0_signal(arrays, c7["layers"], name="attention_path")
        sequences = _metadata(arrays)["sequences"]
        effects = {name: replacement_effect(original, signals(scores[run], c7["layers"]), c7["min_fraction_removed"],
                                            c7["floor_multiple"], c7["min_resolvable_fraction"], sequences,
                                            c7["floor_splits"], c7["floor_quantile"])
                   | {"first_key_ratio": _first_key_ratio(metrics, named["original"], run, c7["layers"])}
                   for name, run in named.items() if name != "original"}
        deciding = effects[c7["replacement"]]
        # The control that reaches position 0: the same replacement, read on what the other keys carry.  Were the
        # cut a disruption of the whole pass rather than of position 0's part, their signal would be cut as much.
        other_keys = replacement_effect(signals(arrays, c7["layers"], other_keys=True),
                                        signals(scores[named[c7["replacement"]]], c7["layers"], other_keys=True),
                                        c7["min_fraction_removed"], c7["floor_multiple"], c7["min_resolvable_fraction"],
                                        sequences, c7["floor_splits"], c7["floor_quantile"])
        other_keys["cut_alike"] = other_keys["removes"] and cut_alike(
            deciding["fraction_removed"], other_keys["fraction_removed"], (deciding["floor"], other_keys["floor"]),
            c7["floor_multiple"])
        models[model] = {
            "passed": deciding["removes"] and not any(effects[c]["removes"] for c in c7["control_replacements"])
            and not other_keys["cut_alike"],
            "other_keys": other_keys,
            "role": "decides" if model == c7["decided_by"] else "exploratory",
            "key0_signal": {"size": _size(original[""]), "halves": [_size(original[h]) for h in HALVES[1:]],
                            "halves_cosine": _cosine(original["_half_a"], original["_half_b"]),
                            "share_of_attention_signal": remaining_share(attention, original[""])},
            "noise_floor": deciding["floor"], "replacements": effects, "bands": _bands(effects),
            "first_key_early": _signed_component(metrics, named["original"], c7["layers"]),
            "largest_identity_change": identity_gaps[model],
            "preconditions": {"power": deciding["preconditions"]["power"]},
        }
        models[model]["outcome"] = part_outcome(models[model])
    deciding = models[c7["decided_by"]]
    return {
        "statement": "Replacing the BOS embedding before the forward pass cuts the residual-stream part of absolute "
        "position at early queries: the positional signal that key 0's value carries into them; the reading reports "
        "about 40%.",
        "threshold": f"on {c7['decided_by']} (its tokenizer adds BOS), the {c7['replacement']} replacement removes >= "
        f"{c7['min_fraction_removed']:.0%} of key 0's positional signal at the early queries (layers "
        f"{list(c7['layers'])}: the remaining share rho <= {1 - c7['min_fraction_removed']:g}) in the mean and both "
        f"halves, by > {c7['floor_multiple']:g} floors (the {c7['floor_quantile']:g} quantile of |rho_A - rho_B| over "
        f"{c7['floor_splits']} random splits of the sequences' groups); the controls "
        f"({', '.join(c7['control_replacements'])}) do not, nor does the same replacement cut the signal the other "
        f"keys carry as much (a removal by the same rule, within {c7['floor_multiple']:g} floors of key 0's); decided "
        f"where {c7['floor_multiple']:g} floors are at most {c7['min_resolvable_fraction']:.0%} (else UNDECIDED)",
        "measured": {"models": models, "decided_by": c7["decided_by"], "signed": True,
                     "reading_fraction": c7["reading_fraction"],
                     "fraction_removed": deciding["replacements"][c7["replacement"]]["fraction_removed"]},
        "decided_by": c7["decided_by"],
        "controls": {**{name: {"passed": deciding["replacements"][name]["removes"]}
                        for name in c7["control_replacements"]},
                     f"{c7['replacement']}, the other keys' signal": {"passed": deciding["other_keys"]["cut_alike"]}},
        "noise_floor": {"what": f"the {c7['floor_quantile']:g} quantile of |rho_A - rho_B| of the {c7['replacement']} "
                        f"replacement's remaining share over {c7['floor_splits']} random splits of the sequences' "
                        "groups into halves",
                        "splits": c7["floor_splits"], "quantile": c7["floor_quantile"],
                        **{model: m["noise_floor"] for model, m in models.items()}},
        "preconditions": {"power": deciding["preconditions"]["power"]},
        "passed": deciding["passed"],
    }


def score_gap(arrays_a: Mapping, arrays_b: Mapping) -> float:
    """The largest absolute difference between the mean scores of two score files (NaN where masked)."""
    return float(np.nanmax(np.abs(arrays_a["mean_scores"] - arrays_b["mean_scores"])))



# --- C8 ---------------------------------------------------------------------------------------


def ntk_suppression(by_factor: dict, floor_multiple: float) -> dict:
    """Recorded beside C8a, deciding nothing: per NTK factor (``"1"`` the trained base), does key 0's score residual
    |R| fall by more than ``floor_multiple`` floors (the larger split-half difference of the two runs)?  M, the
    mask's part, is compared the same way."""
    def floor(component):
        return abs(component["halves"][0] - component["halves"][1])

    base = by_factor["1"]
    factors = {}
    for factor, parts in by_factor.items():
        if factor == "1":
            continue
        row = {}
        for name in ("first_key", "mask"):
            before, after = base[name], parts[name]
            noise = max(floor(before), floor(after))
            fall = abs(before["mean"]) - abs(after["mean"])
            row[name] = {"value": after["mean"], "halves": after["halves"], "fall": fall, "floor": noise,
                         "suppressed": bool(fall > floor_multiple * noise),
                         "sign_flipped": bool(before["mean"] * after["mean"] < 0)}  # False when either is NaN
        row["passed"] = row["first_key"]["suppressed"]
        factors[factor] = row
    return {"passed": bool(factors) and all(row["passed"] for row in factors.values()),
            "base": base, "factors": factors, "floor_multiple": floor_multiple}


def ntk_effect(original: dict, changed: dict, min_resolvable_fall: float, floor_multiple: float, sequences: int,
               floor_splits: int, floor_quantile: float) -> dict:
    """One NTK factor against the trained base, read as C7 reads a replacement (:func:`replacement_effect`): the
    remaining share rho of a positional signal, with its floor from many splits; ``suppressed`` when at least
    ``min_resolvable_fall`` of it is removed in the mean and both halves, by more than ``floor_multiple`` floors."""
    effect = replacement_effect(original, changed, min_resolvable_fall, floor_multiple, min_resolvable_fall, sequences,
                                floor_splits, floor_quantile)
    return {"value": effect["ratio"], "halves": effect["ratio_halves"], "fall": effect["fraction_removed"],
            "floor": effect["floor"], "suppressed": effect["removes"], "sign_flipped": effect["sign_flipped"],
            "preconditions": effect["preconditions"]}


def claim_c8a(scores: Mapping, metrics: dict, runs: dict, simulation_runs: dict, layers, floor_multiple: float,
              min_resolvable_fall: float, floor_splits: int, floor_quantile: float, **_) -> dict:
    models = {}
    for model, named in runs.items():
        base = scores[named["1"]]
        sequences = _metadata(base)["sequences"]
        factors = {}
        for factor, run in named.items():
            if factor == "1":
                continue
            row = {part: ntk_effect(signals(base, layers, other_keys=part == "other_keys"),
                                    signals(scores[run], layers, other_keys=part == "other_keys"), min_resolvable_fall,
                                    floor_multiple, sequences, floor_splits, floor_quantile)
                   for part in ("key0", "other_keys")}
            # The control reaches what NTK changes: were the cut a change of every key's positional signal alike,
            # not of the residual-stream part that key 0 carries, the other keys' signal would be cut as well.
            row["other_keys"]["cut_alike"] = row["other_keys"]["suppressed"] and cut_alike(
                row["key0"]["fall"], row["other_keys"]["fall"], (row["key0"]["floor"], row["other_keys"]["floor"]),
                floor_multiple)
            row["passed"] = row["key0"]["suppressed"] and not row["other_keys"]["cut_alike"]
            row["preconditions"] = {"power": row["key0"]["preconditions"]["power"]}
            factors[factor] = row
        models[model] = {"passed": bool(factors) and all(row["passed"] for row in factors.values()),
                         "base_size": _size(key0_signal(base, layers)), "factors": factors,
                         "floor_multiple": floor_multiple,
                         "preconditions": {"power": decided_by_parts(factors, "NTK factor")}}
        models[model]["outcome"] = part_outcome(models[model])

    def components(named):  # recorded: the old measure, key 0's score residual R and the mask part M
        return {factor: {name: _signed_component(metrics, run, layers, name) for name in ("first_key", "mask")}
                for factor, run in named.items()}

    return {
        "statement": "NTK-scaled RoPE (the base raised at inference) suppresses the residual-stream component of "
        "absolute position at early queries: the positional signal that key 0's value carries into them.",
        "threshold": f"at every NTK factor, in every model scaled, the factor removes >= {min_resolvable_fall:.0%} of key "
        f"0's positional signal at the early queries (C7's measure, layers {list(layers)}: the remaining share rho <= "
        f"{1 - min_resolvable_fall:g} against the trained base) in the mean and both halves, by > {floor_multiple:g} "
        f"floors (the {floor_quantile:g} quantile of |rho_A - rho_B| over {floor_splits} random splits of the sequences' "
        "groups); the control, the same factor read on the positional signal the other keys carry, does not cut it as "
        f"much (a cut by the same rule, within {floor_multiple:g} floors of key 0's); decided "
        f"at a factor where {floor_multiple:g} floors are at most {min_resolvable_fall:.0%} (else UNDECIDED)",
        "measured": {"models": models, "floor_multiple": floor_multiple, "min_fall": min_resolvable_fall,
                     "recorded_score_components": {
                         "what": "recorded, deciding nothing: key 0's score residual R and the mask part M at early "
                         "queries (the measure C8a read before), in the models and the parameter-free simulation",
                         "models": {model: ntk_suppression(components(named), floor_multiple)
                                    for model, named in runs.items()},
                         "simulation": ntk_suppression(components(simulation_runs), floor_multiple)}},
        "controls": {f"{model}: NTK read on the other keys' signal": {
            "passed": any(row["other_keys"]["cut_alike"] for row in m["factors"].values())} for model, m in models.items()},
        "noise_floor": {"what": f"the {floor_quantile:g} quantile of |rho_A - rho_B| over {floor_splits} random splits of "
                        "the sequences' groups, per factor", "splits": floor_splits, "quantile": floor_quantile,
                        **{model: {f: row["key0"]["floor"] for f, row in m["factors"].items()}
                           for model, m in models.items()}},
        "preconditions": {"models_decided": decided_by_parts(models, "model")},
        "passed": bool(models) and all(m["passed"] for m in models.values()),
    }


def window_depth(arrays: dict, metadata: dict, min_query: int, min_depth_correlation: float,
                 floor_multiple: float, min_layer_share: float, floor_splits: int, floor_quantile: float,
                 min_resolvable_slope: float | None = None) -> dict:
    """C8b's check on one run: the mean |slope| over heads of log Z - a(i) (the part of log Z the softmax sees, as
    C6 reads it) at queries >= ``min_query``, by layer, rising with depth over the sliding-window layers (every
    layer, for a model with none) and above its floor (the mean over heads of each head's floor from
    ``floor_splits`` splits of the groups of sequences) in more than ``min_layer_share`` of them.

    With ``min_resolvable_slope``, a power precondition: a layer's floors resolve a slope of that size when
    ``floor_multiple`` floors are at most it.  The check is decided when the correlation or the window already
    fails it, or when the layers above their floors are enough whatever the unresolved ones would show, or too
    few even if every unresolved one rose above; else it is undecided, with the sequences at which every
    checked layer would be resolved."""
    found = slopes_with_floor(visible_log_z(arrays), min_query, floor_splits, floor_quantile, key="log_z_visible")
    raw = log_z_slopes(np.asarray(arrays["log_z"]), min_query)  # recorded: a(i) left in, as C8b read it before
    types = metadata.get("layer_types") or ["full_attention"] * len(arrays["layers"])
    rows = {}
    for k, layer in enumerate(arrays["layers"]):
        rows[str(int(layer))] = {"type": types[k], "value": float(np.mean(np.abs(found["slope"][k]))),
                                 "floor": float(np.mean(found["floor"][k])), "slopes": _floats(found["slope"][k]),
                                 "raw_value": float(np.mean(np.abs(raw[k])))}
    sliding = [layer for layer, row in rows.items() if row["type"] == "sliding_attention"]
    checked = sliding or list(rows)
    values = [rows[layer]["value"] for layer in checked]
    above = sum(rows[layer]["value"] > floor_multiple * rows[layer]["floor"] for layer in checked)
    correlation = spearman([int(layer) for layer in checked], values)
    window = metadata.get("sliding_window") if sliding else None
    binds = window is None or min_query >= window
    # Recorded, deciding nothing: the sliding-window layers against the global ones at the same queries.
    by_type = {}
    for kind in dict.fromkeys(row["type"] for row in rows.values()):
        members = [layer for layer, row in rows.items() if row["type"] == kind]
        by_type[kind] = {"layers": [int(layer) for layer in members], "mean_value": _mean([rows[m]["value"] for m in members]),
                         "mean_floor": _mean([rows[m]["floor"] for m in members])}
    trend = binds and correlation >= min_depth_correlation
    result = {"passed": bool(trend and above > min_layer_share * len(checked)),
              "checked_layers": [int(layer) for layer in checked], "checked": "sliding-window layers" if sliding else "every layer",
              "depth_correlation": correlation, "layers_above_floor": int(above), "window": window, "window_binds": binds,
              "min_query": min_query, "seq_len": int(np.asarray(arrays["log_z"]).shape[-1]), "by_type": by_type,
              "floor_multiple": floor_multiple, "layers": rows}
    if min_resolvable_slope is not None:
        result["preconditions"] = {"power": slope_power([rows[layer] for layer in checked], above, trend, floor_multiple,
                                                        min_layer_share, min_resolvable_slope, metadata["sequences"])}
    return result


def slope_power(rows: list[dict], above: int, trend_holds: bool, floor_multiple: float, min_layer_share: float,
                min_resolvable_slope: float, sequences: int) -> dict:
    """C8b's power precondition over the checked layers' rows (``value``, ``floor``), ``above`` of them above
    their floors: see :func:`window_depth`."""
    unresolved = sum(not row["value"] > floor_multiple * row["floor"] and floor_multiple * row["floor"] > min_resolvable_slope
                     for row in rows)
    floors = [row["floor"] for row in rows if row["floor"] == row["floor"]]  # an undefined slope has no floor
    needed = sequences_to_resolve(sequences, floors, min_resolvable_slope, floor_multiple) if floors else None
    bar = min_layer_share * len(rows)
    decided = not trend_holds or above > bar or above + unresolved <= bar
    return precondition(
        decided,
        f"{above} of {len(rows)} layers above {floor_multiple:g} floors and {unresolved} whose floors could hide a slope "
        f"of {min_resolvable_slope:g}, against more than {bar:g} needed, at {sequences} sequences",
        f"about {needed:,} sequences of the long inputs (llm.inputs.long.sequences), at which every checked layer's "
        f"floors resolve a slope of {min_resolvable_slope:g}" if needed else "sequences long enough to define the slopes",
        sequences=sequences, sequences_to_resolve=needed, layers_unresolved=unresolved)


def claim_c8b(scores: Mapping, runs: dict, simulation_runs: dict, c8: dict) -> dict:
    """C8b from the score files of the sliding-window model's and the control's runs (``c8``: C8's entry of
    config/claims.yaml, its parts flattened)."""
    checks = {role: {"model": run.split("/")[0],
                     **window_depth(scores[run], _metadata(scores[run]), c8["min_query"], c8["min_depth_correlation"],
                                    c8["floor_multiple"], c8["min_layer_share"], c8["floor_splits"],
                                    c8["floor_quantile"], c8["min_resolvable_slope"])}
              for role, run in runs.items()}
    for check in checks.values():
        check["outcome"] = part_outcome(check)
    simulation = {}
    for name, run in simulation_runs.items():  # recorded: the simulation's log Z past its window of 16 keys
        arrays = scores[run]
        slopes = slopes_with_floor(visible_log_z(arrays), min(16, arrays["log_z"].shape[-1] - 2), c8["floor_splits"],
                                   c8["floor_quantile"], key="log_z_visible")
        simulation[name] = {"slope_by_layer": _floats(slopes["slope"]), "floor_by_layer": _floats(slopes["floor"])}
    sliding, control = checks["sliding"], checks["no_window"]
    return {
        "statement": "Where a sliding window binds, the residual stream's part of absolute position grows with depth "
        "over the sliding-window layers, and not in a model without a window.",
        "threshold": f"at queries >= {c8['min_query']} (beyond the window), the mean |slope| over heads of log Z - "
        f"a(i) against log(i + 1) has a rank correlation with depth >= {c8['min_depth_correlation']} over the "
        f"sliding-window layers and exceeds {c8['floor_multiple']:g} floors (the {c8['floor_quantile']:g} quantile of "
        f"|b_A - b_B| over {c8['floor_splits']} random splits of the sequences' groups, mean over heads) in more than "
        f"{c8['min_layer_share']:.0%} of them; the model without a window fails the same check (over its layers); "
        f"decided where the layers whose {c8['floor_multiple']:g} floors exceed a slope of "
        f"{c8['min_resolvable_slope']:g} cannot change the outcome (else UNDECIDED)",
        "measured": {"sliding": sliding, "no_window": control, "min_query": c8["min_query"], "simulation": simulation},
        "min_query": c8["min_query"],
        "controls": {f"{control['model']} (no sliding window)": {"passed": control["passed"]}},
        "noise_floor": {"what": f"the {c8['floor_quantile']:g} quantile of |b_A - b_B| over {c8['floor_splits']} "
                        "random splits of the "
                        "sequences' groups, mean over heads, per layer",
                        "splits": c8["floor_splits"], "quantile": c8["floor_quantile"],
                        **{check["model"]: {layer: row["floor"] for layer, row in check["layers"].items()}
                           for check in checks.values()}},
        # C8b passes when the sliding-window model passes its check and the control fails the same.
        "preconditions": {"decided": probe_and_control_decided((sliding["model"], sliding), (control["model"], control))},
        "passed": sliding["passed"] and not control["passed"],
    }


def probe_and_control_decided(probe: tuple[str, dict], control: tuple[str, dict]) -> dict:
    """The precondition of a verdict that needs its probe to pass and its control to fail, each ``(name, check)``
    with the check's ``outcome``: decided when both checks are, or when either already fails it (the probe
    decided to fail, the control decided to pass)."""
    undecided = [(name, check) for name, check in (probe, control) if check["outcome"] == "UNDECIDED"]
    fails = probe[1]["outcome"] == "FAIL" or control[1]["outcome"] == "PASS"
    would = "; ".join(f"{name}: {check['preconditions']['power']['would_decide']}" for name, check in undecided)
    names = [name for name, _ in undecided]
    return precondition(not undecided or fails,
                        f"undecided: {', '.join(names)}" + ("; decided anyway, as the other check fails the claim"
                                                            if undecided and fails else "")
                        if undecided else "both checks are decided", would or "nothing: it is decided",
                        undecided=names)


# --- C9 ---------------------------------------------------------------------------------------


def _closed(gaps: dict, tolerance: float) -> dict:
    same, different = max(gaps["same_first_token"]), min(gaps["different_first_tokens"][1:])
    return {"passed": same <= tolerance < different, "largest_gap_same_first_token": same,
            "smallest_gap_different_first_tokens": different, "first_token": gaps["first_token"],
            "tolerance": tolerance}


def sink_head_table(attention: dict, min_attention: float) -> dict:
    """Per layer: the sink heads (indices), their count, and every head's mean attention to key 0 (``attention``:
    layer -> per-head means over the queries the rule reads)."""
    return {layer: {"heads": [h for h, value in enumerate(values) if value >= min_attention],
                    "count": sum(value >= min_attention for value in values), "of": len(values),
                    "attention_to_key_0": [float(v) for v in values]}
            for layer, values in attention.items()}


def patch_floor(changes: dict, heads: list[int], floor_splits: int, floor_quantile: float) -> float:
    """The sampling noise of a patch's effect on ``heads``: the ``floor_quantile`` of |effect_A - effect_B| over
    ``floor_splits`` random splits of the groups of sequences into halves, each half's effect its heads' mean
    relative change sqrt(sum |o' - o|^2 / sum |o|^2) over the half's own sums."""
    from behind_rope.maths.splits import split_floor

    squares = np.stack([changes["change_squares_by_group"], changes["norm_squares_by_group"]], axis=1)[..., heads]

    def effect(sums):  # the groups' squares are sums, so each group weighs one
        return float(np.mean(np.sqrt(sums[0] / np.maximum(sums[1], 1e-30))))

    return split_floor(squares, np.ones(len(squares)), floor_splits, floor_quantile, statistic=effect)


def patch_check(patching: dict, sinks: dict, patch: str, min_relative_change: float, floor_multiple: float,
                min_layers: int, min_layer_share: float, floor_splits: int, floor_quantile: float,
                half: int | None = None) -> dict:
    """Does patching ``patch`` change the sink heads' outputs in at least ``min_layers`` of the patched layers, and in
    at least ``min_layer_share`` of those with sink heads?

    The floor is sampling noise, from many splits of the sequences' groups (:func:`patch_floor`).  With ``half``
    (0 or 1), the effect is that half's only.
    """
    def mean_over(heads, row, half=half):
        values = row["head_output_change"] if half is None else row["head_output_change_halves"][half]
        return _mean([values[h] for h in heads])

    rows = {}
    for layer in map(str, patching["layers"]):
        heads = sinks[layer]["heads"]
        changes = patching["patches"][patch]["layers"][layer]
        effect, halves = mean_over(heads, changes), [mean_over(heads, changes, half=part) for part in (0, 1)]
        floor = patch_floor(changes, heads, floor_splits, floor_quantile) if heads else None
        rows[layer] = {"sink_heads": heads, "effect": effect, "floor": floor, "effect_halves": halves,
                       "log_z_change_sink_heads": _mean([changes["log_z_change"][h] for h in heads]),
                       "log_z_change_all_heads": _mean(changes["log_z_change"]),
                       "supports": bool(heads) and effect >= min_relative_change and effect > floor_multiple * floor}
    supporting = sum(row["supports"] for row in rows.values())
    with_sinks = sum(bool(row["sink_heads"]) for row in rows.values())
    return {"passed": supporting >= min_layers and supporting >= min_layer_share * with_sinks,
            "layers_supporting": supporting, "layers_with_sink_heads": with_sinks, "layers": rows}


def other_heads_alike(sinks: dict, others: dict, floor_multiple: float, min_layers: int, min_layer_share: float) -> dict:
    """C9's control that reaches position 0, from the same patch read on the sink heads (``sinks``) and on the layers'
    other heads (``others``), each a :func:`patch_check`: in a layer with sink heads, the other heads change alike
    when their change counts by the same rule and is within ``floor_multiple`` floors of the sink heads' or above
    it.  The control passes where that holds in as many layers as the claim asks of the sink heads."""
    alike = {layer: bool(row["sink_heads"]) and others["layers"][layer]["supports"] and cut_alike(
                 row["effect"], others["layers"][layer]["effect"], (row["floor"], others["layers"][layer]["floor"] or 0.0),
                 floor_multiple)
             for layer, row in sinks["layers"].items()}
    count, with_sinks = sum(alike.values()), sinks["layers_with_sink_heads"]
    return others | {"passed": count >= min_layers and count >= min_layer_share * with_sinks, "layers_alike": count,
                     "layers": {layer: row | {"alike": alike[layer]} for layer, row in others["layers"].items()}}


def claim_c9(patching: dict, runs: dict, c9: dict) -> dict:
    """C9 from each model's patching results (``c9``: C9's entry of config/claims.yaml, its parts flattened)."""
    rule = {key: c9[key] for key in ("min_relative_change", "floor_multiple", "min_layers", "min_layer_share",
                                     "floor_splits", "floor_quantile")}
    models, sink_tables = {}, {}
    for model in runs:
        attention = patching[model]["sink_attention"]
        sink_tables[model] = sink_head_table(attention["all"], c9["sink_min_attention"])
        check = {patch: patch_check(patching[model], sink_tables[model], patch, **rule) for patch in ("position0", "middle")}
        # The control that reaches position 0: the same patch read on the layers' other heads.  If they change as
        # much, the patch changes every head alike, and the sink heads are no readers of position 0 in particular.
        others = {layer: {"heads": [h for h in range(row["of"]) if h not in row["heads"]]}
                  for layer, row in sink_tables[model].items()}
        check["other_heads"] = other_heads_alike(check["position0"], patch_check(patching[model], others, "position0", **rule),
                                                 c9["floor_multiple"], c9["min_layers"], c9["min_layer_share"])
        closed = _closed(patching[model]["closed_system"], c9["max_closed_system_gap"])
        # Recorded, deciding nothing: the sink heads chosen on half A of the sequences and the patch measured on
        # half B, so that the heads are not chosen on the sequences they are tested on.
        chosen_on_a = sink_head_table(attention["half_a"], c9["sink_min_attention"])
        held_out = patch_check(patching[model], chosen_on_a, "position0", **rule, half=1)
        models[model] = {"passed": check["position0"]["passed"] and closed["passed"] and not check["middle"]["passed"]
                         and not check["other_heads"]["passed"],
                         "position0": check["position0"], "middle": check["middle"], "other_heads": check["other_heads"],
                         "closed_system": closed,
                         "layers": patching[model]["layers"], "queries_from": patching[model]["queries_from"],
                         "middle_position": patching[model]["patches"]["middle"]["position"],
                         "held_out": {"what": "recorded, deciding nothing: sink heads chosen on half A (even sequences), "
                                      "the patch measured on half B (odd), by the same rule",
                                      "rule_met": held_out["passed"], "layers_meeting_rule": held_out["layers_supporting"],
                                      "layers": {layer: {key: row[key] for key in ("sink_heads", "effect", "floor")}
                                                 for layer, row in held_out["layers"].items()}}}
    return {
        "statement": "Position 0 evolves as a closed system, and attention-sink heads read it: patching its residual "
        "state changes the sink heads' outputs at later queries; patching a mid-sequence position does not.",
        "threshold": f"sink heads: mean attention to key 0 >= {c9['sink_min_attention']} over queries >= "
        f"{c9['sink_from_query']}; patching position 0 at a layer's input changes that layer's sink-head outputs by "
        f">= {c9['min_relative_change']} (relative) and > {c9['floor_multiple']:g} floors (the "
        f"{c9['floor_quantile']:g} quantile of |effect_A - effect_B| over {c9['floor_splits']} random splits of the "
        f"sequences' groups), in >= {c9['min_layers']} of the layers patched (every one from the first checked on) "
        f"and in >= {c9['min_layer_share']:.0%} of those with sink heads; position 0's state is the same across "
        f"sequences with the same first token (gap <= {c9['max_closed_system_gap']:g}); patching the middle "
        "position fails the same check, and the other heads of the layers with sink heads do not change alike under "
        "the "
        f"position-0 patch (by the same rule, within {c9['floor_multiple']:g} floors of the sink heads' change or "
        "above it, in "
        "as many layers); in every model",
        "measured": {"models": models},
        "sink_heads": sink_tables,
        "sink_head_counts": {model: {layer: row["count"] for layer, row in table.items()}
                             for model, table in sink_tables.items()},
        # Without sink heads in the patched layers the control has nothing to change: it fails, but tests nothing.
        "controls": {**{f"{model}: middle position patched": {
            "passed": m["middle"]["passed"],
            "testable": any(row["sink_heads"] for row in m["middle"]["layers"].values())} for model, m in models.items()},
            **{f"{model}: the other heads, position 0 patched": {
                "passed": m["other_heads"]["passed"],
                "testable": m["position0"]["layers_with_sink_heads"] > 0}
               for model, m in models.items()}},
        "noise_floor": {"what": f"the {c9['floor_quantile']:g} quantile of |effect_A - effect_B| of the patch's "
                        f"effect on the sink heads over {c9['floor_splits']} random splits of the sequences' groups, "
                        "per layer",
                        "splits": c9["floor_splits"], "quantile": c9["floor_quantile"],
                        **{model: {layer: row["floor"] for layer, row in m["position0"]["layers"].items()}
                           for model, m in models.items()}},
        "passed": all(m["passed"] for m in models.values()),
    }


def decide(metrics: dict, settings: dict, patching: dict, scores: Mapping) -> dict:
    """C6-C9 from the metrics files keyed ``<source>/<run>`` (experiments.steps.position_claims_settings names the
    runs), claim C9's patching results by model, and the arrays of the score files the claims read, keyed the same
    way (a file's arrays are read when a claim first asks for them)."""
    claims, runs = settings["claims"], settings["position_runs"]
    identity_gaps = {model: {name: score_gap(scores[a], scores[b]) for name, (a, b) in pairs.items()}
                     for model, pairs in runs["identity"].items()}
    return {
        "C6": claim_c6(scores, runs["C6"], runs["C6_simulation"], claims["C6"]),
        "C7": claim_c7(scores, metrics, runs["C7"], identity_gaps, claims["C7"]),
        "C8a": claim_c8a(scores, metrics, runs["ntk"], runs["simulation_ntk"], **claims["C8"]),
        "C8b": claim_c8b(scores, runs["window"], runs["simulation_window"], claims["C8"]),
        "C9": claim_c9(patching, runs["C9"], claims["C9"]),
    }


# ---- the paper's values and table ----------------------------------------------------------------


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


def _c6_values(claims: dict, settings: dict) -> dict[str, str]:
    """C6's values: per-head slopes of log Z against log(i + 1), against the simulation's."""
    c6_args, c6 = settings["claims"]["C6"], claims["C6"]["measured"]
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
    return {
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


def _c7_values(claims: dict, settings: dict) -> dict[str, str]:
    """C7's values: key 0's positional signal at the early queries, before and after the replacement, decided on
    one model."""
    c7_args, c7, variants = settings["claims"]["C7"], claims["C7"]["measured"], settings["llm"]["variants"]
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
    return {
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


def _c8a_values(claims: dict, settings: dict) -> dict[str, str]:
    """C8a's values: NTK on key 0's positional signal, the other keys' signal as control."""
    c8_args, c8a = settings["claims"]["C8"], claims["C8a"]["measured"]
    factors = _factors(claims["C8a"])
    return {
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


def _c8b_values(claims: dict, settings: dict) -> dict[str, str]:
    """C8b's values: the log-Z slope beyond the window, by depth."""
    c8_args, c8b = settings["claims"]["C8"], claims["C8b"]["measured"]
    sliding, control = c8b["sliding"], c8b["no_window"]
    return {
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


def _c9_values(claims: dict, settings: dict) -> dict[str, str]:
    """C9's values: sink heads and the position-0 patch, the middle position as control."""
    c9_args, c9 = settings["claims"]["C9"], claims["C9"]["measured"]
    m9 = c9["models"]
    closed = [r["closed_system"] for r in m9.values()]
    effects = [row["effect"] for r in m9.values() for row in r["position0"]["layers"].values() if row["sink_heads"]]
    middle = [row["effect"] for r in m9.values() for row in r["middle"]["layers"].values() if row["sink_heads"]]
    floors = [row["floor"] for r in m9.values() for row in r["position0"]["layers"].values() if row["sink_heads"]]
    counts = claims["C9"]["sink_heads"]
    held_out = {m: r["held_out"] for m, r in m9.items()}
    supporting = {m: [layer for layer, row in r["position0"]["layers"].items() if row["supports"]] for m, r in m9.items()}
    return {
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


def position_values(claims: dict, settings: dict) -> dict[str, str]:
    """The paper's values of C6-C9, claim by claim, and the reading's stances."""
    values = {key: value for part in (_c6_values, _c7_values, _c8a_values, _c8b_values, _c9_values)
              for key, value in part(claims, settings).items()}

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


# ---- docs/results.md -----------------------------------------------------------------------------


def results_table(claims: dict) -> str:
    """Claims C6-C9: per model, the numbers that decide them, with their controls and noise floors."""
    c6, c7, c8a, c8b, c9 = (claims[name]["measured"] for name in ("C6", "C7", "C8a", "C8b", "C9"))
    sinks = claims["C9"]["sink_head_counts"]
    rows = ["| model | C6: heads carrying the mask's position, layers 2-4 (no mask) | C7: key 0's signal size; rho "
            "(remaining share, signed) by replacement, the deciding one's floor; R'/R of the old proxy | C8a: rho of key 0's signal / "
            "of the other keys' (control), floor, by NTK factor | C9: sink heads by layer (from layer 1); in each "
            "layer with sink heads, patch effect position 0 / middle / floor |", "|---|---|---|---|---|"]
    for model, c7_result in c7["models"].items():
        c6_result = c6["models"][model]
        carrying = " ".join(f"{row['heads_carrying']}/{row['heads']}" for row in c6_result["probe"]["layers"].values())
        no_mask = " ".join(f"{row['heads_carrying']}/{row['heads']}" for row in c6_result["no_mask"]["layers"].values())
        ratios = ", ".join(f"{name} {md.value(effect['ratio'], '+.2f')}" for name, effect in c7_result["replacements"].items())
        old_proxy = ", ".join(f"{md.value(effect['first_key_ratio'], '+.2f')}" for effect in c7_result["replacements"].values())
        ntk = c8a["models"].get(model)
        falls = ", ".join(f"s={f}: {md.value(row['key0']['value'], '+.2f')} / {md.value(row['other_keys']['value'], '+.2f')}, "
                          f"floor {md.value(row['key0']['floor'], '.2f')}"
                          for f, row in ntk["factors"].items()) + f" ({md.pass_fail(ntk['passed'])})" if ntk else ""
        c9_result = c9["models"][model]
        effects = "; ".join(
            f"L{layer}: {md.value(row['effect'], '.3f')} / {md.value(c9_result['middle']['layers'][layer]['effect'], '.3f')}"
            f" / {md.value(row['floor'], '.1e')}" for layer, row in c9_result["position0"]["layers"].items()
            if row["sink_heads"]) or "no sink heads"
        counts = " ".join(str(count) for count in sinks[model].values())
        rows.append(f"| {model} | {carrying}; {no_mask} ({md.pass_fail(c6_result['passed'])}) | "
                    f"{md.value(c7_result['key0_signal']['size'], '.3g')}; {ratios} "
                    f"({md.value(c7_result['noise_floor'], '.3f')}; {c7_result['role']}, "
                    f"{c7_result.get('outcome', md.pass_fail(c7_result['passed']))}); R'/R {old_proxy} | "
                    f"{falls} | {counts}; {effects} ({md.pass_fail(c9_result['passed'])}) |")
    simulation = c6["simulation"]
    rows += ["", "C6, simulation: log-Z slope by layer " + ", ".join(
        f"{layer}: {md.value(row['slope'], '.2f')}" for layer, row in simulation["probe"]["layers"].items())
        + "; without the mask " + ", ".join(f"{layer}: {md.value(row['slope'], '.2f')}"
                                             for layer, row in simulation["no_mask"]["layers"].items())]
    for role in ("sliding", "no_window"):
        check = c8b[role]
        rows += ["", f"C8b, {check['model']} (queries >= {check['min_query']} of {check['seq_len']}; {check['checked']}): "
                 f"rank correlation with depth {md.value(check['depth_correlation'], '.2f')}, "
                 f"{check['layers_above_floor']} of {len(check['checked_layers'])} layers above the floors; mean abs(slope) "
                 + ", ".join(f"{layer}{'s' if row['type'] == 'sliding_attention' else ''}: {md.value(row['value'], '.3f')}"
                             for layer, row in check["layers"].items()) + f" ({md.pass_fail(check['passed'])}); by type "
                 "(recorded): " + ", ".join(f"{kind} layers {md.value(row['mean_value'], '.3f')} against a floor of "
                                            f"{md.value(row['mean_floor'], '.3f')} ({len(row['layers'])} layers)"
                                            for kind, row in check["by_type"].items())]
    rows += ["", "C9, recorded and deciding nothing, per model, in the layers with sink heads: the effect on the even / "
             "odd sequences; and with the sink heads chosen on the even sequences, the effect on the odd ones (their "
             "floor): " + "; ".join(
                 f"{model} " + (", ".join(
                     f"L{layer}: {md.value(row['effect_halves'][0], '.3f')} / {md.value(row['effect_halves'][1], '.3f')}"
                     for layer, row in result["position0"]["layers"].items() if row["sink_heads"]) or "none") + " | held out "
                 + (", ".join(f"L{layer} ({len(row['sink_heads'])} heads): {md.value(row['effect'], '.3f')} "
                              f"({md.value(row['floor'], '.1e')})" for layer, row in result["held_out"]["layers"].items()
                              if row["sink_heads"]) or "none")
                 + f", the rule met in {result['held_out']['layers_meeting_rule']} layers"
                 for model, result in c9["models"].items())]
    rows += ["", leakage_table(c6["positional_leakage"])]
    rows += [line for name in ("C6", "C7", "C8a", "C8b", "C9") for line in ("", md.claim_line(claims, name))]
    return "\n".join(rows)


def leakage_table(leakage: dict) -> str:
    """Ruscio et al.'s positional leakage (recorded beside C6, deciding nothing): per model and layer, the mean
    delta R^2 over the heads, with the mask and without it, each as measured and with the query offsets removed."""
    layers = sorted({layer for record in leakage.values() for layer in record["mask"]}, key=int)
    rows = ["Positional leakage, recorded beside C6 and deciding nothing: the mean over the heads of delta R^2 "
            "(R^2 on [i-j, i, j, 1] minus on [i-j, 1], causal pairs), with the mask / with a(i) removed / without the "
            "mask / without the mask, a(i) removed (figures/figS_positional_leakage):", "",
            "| model | " + " | ".join(f"layer {layer}" for layer in layers) + " |", "|---|" + "---|" * len(layers)]
    for model, record in leakage.items():
        cells = [" / ".join(md.value(record[role][layer][key], ".2f") for role in ("mask", "no_mask")
                            for key in ("mean", "mean_without_offset")) if layer in record["mask"] else ""
                 for layer in layers]
        rows.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
