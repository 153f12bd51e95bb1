"""Claims C6-C9: where absolute position comes from, tested per head (behind_rope.position.heads,
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

import numpy as np

from behind_rope.claims.outcome import decided_by_parts, part_outcome, precondition
from behind_rope.position.heads import log_z_slopes, slopes_with_floor, spearman, visible_log_z


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


def mask_part_check(arrays: dict, reference: np.ndarray, layers, min_query: int, min_slope_ratio: float,
                    floor_multiple: float, min_head_share: float, min_layers: int,
                    min_resolvable_slope_ratio: float, sequences: int, floor_splits: int, floor_quantile: float) -> dict:
    """C6's check on one run: per head, the slope of log Z - a(i) against log(i + 1) (queries >= ``min_query``),
    against ``reference``, the simulation's slope per layer (index = layer - 1), each head's floor from
    ``floor_splits`` splits of the run's groups of sequences; with its power precondition.  The raw log Z's
    slopes, a(i) left in, are recorded beside, deciding nothing."""
    index = _layer_index(arrays)
    found = slopes_with_floor(visible_log_z(arrays), min_query, floor_splits, floor_quantile, key="log_z_visible")
    raw = log_z_slopes(np.asarray(arrays["log_z"]), min_query)
    rows = {}
    for layer in layers:
        slope, floor, bound = found["slope"][index[layer]], found["floor"][index[layer]], min_slope_ratio * reference[layer - 1]
        carrying = (slope >= bound) & (slope > floor_multiple * floor)
        rows[str(layer)] = head_power(carrying, slope, floor, min_resolvable_slope_ratio * reference[layer - 1],
                                      floor_multiple, min_head_share)
        rows[str(layer)] |= {"slope_ratio_to_simulation": _floats(slope / reference[layer - 1]),
                             "raw_slopes": _floats(raw[index[layer]])}
    holding = sum(row["holds"] for row in rows.values())
    undecided = [layer for layer, row in rows.items() if not row["decided"]]
    passed = holding >= min_layers
    resolvable = {layer: min_resolvable_slope_ratio * reference[int(layer) - 1] for layer in undecided}
    needed = (max(sequences_to_resolve(sequences, rows[layer]["unresolved_floors"], resolvable[layer], floor_multiple)
                  for layer in undecided) if undecided and min(resolvable.values()) > 0 else None)
    power = precondition(
        passed or holding + len(undecided) < min_layers,
        f"{holding} of {len(rows)} layers hold and {len(undecided)} could still change (heads whose "
        f"{floor_multiple:g} floors exceed {min_resolvable_slope_ratio:g} x b_sim), against {min_layers} needed, at "
        f"{sequences} sequences",
        f"about {needed:,} sequences of the first inputs (llm.inputs.first.sequences), at which every unresolved "
        f"head's floors resolve {min_resolvable_slope_ratio:g} x b_sim" if needed
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


def claim_c6(scores, metadata, runs: dict, simulation_runs: dict, layers, min_query: int, min_slope_ratio: float,
             floor_multiple: float, min_head_share: float, min_layers: int, min_resolvable_slope_ratio: float,
             floor_splits: int, floor_quantile: float, **_) -> dict:
    simulated = {role: slopes_with_floor(visible_log_z(scores(run)), min_query, floor_splits, floor_quantile,
                                         key="log_z_visible")
                 for role, run in simulation_runs.items()}
    reference = simulated["probe"]["slope"]  # b_sim per layer (index = layer - 1)
    settings = {"reference": reference, "layers": layers, "min_query": min_query, "min_slope_ratio": min_slope_ratio,
                "floor_multiple": floor_multiple, "min_head_share": min_head_share, "min_layers": min_layers,
                "min_resolvable_slope_ratio": min_resolvable_slope_ratio, "floor_splits": floor_splits,
                "floor_quantile": floor_quantile}

    models = {}
    for model, pair in runs.items():
        probe, no_mask = (mask_part_check(scores(run), sequences=metadata(run)["sequences"], **settings)
                          for run in (pair["probe"], pair["no_mask"]))
        for check in (probe, no_mask):
            check["outcome"] = part_outcome(check)
        models[model] = {"passed": probe["passed"] and not no_mask["passed"], "probe": probe, "no_mask": no_mask,
                         "preconditions": {"power": probe_and_control_decided(("probe", probe), ("no_mask", no_mask))}}
        models[model]["outcome"] = part_outcome(models[model])

    def simulation_check(role):
        found = simulated[role]
        rows = {str(layer): {"slope": float(found["slope"][layer - 1]), "floor": float(found["floor"][layer - 1]),
                             "holds": bool(found["slope"][layer - 1] >= min_slope_ratio * reference[layer - 1]
                                           and found["slope"][layer - 1] > floor_multiple * found["floor"][layer - 1])}
                for layer in layers}
        return {"passed": all(row["holds"] for row in rows.values()), "layers": rows}

    simulation = {"probe": simulation_check("probe"), "no_mask": simulation_check("no_mask")}
    controls = {f"{model} without the mask": {"passed": m["no_mask"]["passed"]} for model, m in models.items()}
    controls["simulation without the mask"] = {"passed": simulation["no_mask"]["passed"]}
    return {
        "statement": "The causal mask ties each query's softmax normaliser to its position: per head, log Z with the "
        "query offset a(i) removed grows with log(i + 1) as the parameter-free causal simulation's does.",
        "threshold": f"a head carries the mask's position when its slope of log Z - a(i) (queries >= {min_query}) is >= "
        f"{min_slope_ratio} x the simulation's in the same layer and > {floor_multiple:g} x its floor (the "
        f"{floor_quantile:g} quantile of |b_A - b_B| over {floor_splits} random splits of the sequences' groups); "
        f">= {min_head_share:.0%} of the heads in >= {min_layers} of layers {list(layers)}, in every LLM; the simulation "
        "is above its floor in every checked layer; every no-mask run fails the same check; decided where the floors "
        f"could see a head at {min_resolvable_slope_ratio:g} x the simulation's slope (else UNDECIDED)",
        "measured": {"models": models, "simulation": simulation, "min_query": min_query,
                     "min_slope_ratio": min_slope_ratio,  # the figure draws the threshold from it
                     # Recorded beside C6, deciding nothing: the follow-up line's own measure on the same runs.
                     "positional_leakage": {model: {role: positional_leakage_record(scores(run))
                                                    for role, run in (("mask", pair["probe"]),
                                                                      ("no_mask", pair["no_mask"]))}
                                            for model, pair in runs.items()}},
        "controls": controls,
        "noise_floor": {"what": f"the {floor_quantile:g} quantile of |b_A - b_B| of each head's slope over {floor_splits} "
                        "random splits of the sequences' groups into halves (median over the checked heads)",
                        "splits": floor_splits, "quantile": floor_quantile,
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


def claim_c7(scores, metadata, metrics: dict, runs: dict, identity_gaps: dict, layers, replacement: str,
             decided_by: str, control_replacements, recorded_replacements, min_fraction_removed: float,
             floor_multiple: float, min_resolvable_fraction: float, reading_fraction: float, floor_splits: int,
             floor_quantile: float, **_) -> dict:
    models = {}
    for model, named in runs.items():
        arrays = scores(named["original"])
        original = signals(arrays, layers)
        attention = key0_signal(arrays, layers, name="attention_path")
        sequences = metadata(named["original"])["sequences"]
        effects = {name: replacement_effect(original, signals(scores(run), layers), min_fraction_removed, floor_multiple,
                                            min_resolvable_fraction, sequences, floor_splits, floor_quantile)
                   | {"first_key_ratio": _first_key_ratio(metrics, named["original"], run, layers)}
                   for name, run in named.items() if name != "original"}
        deciding = effects[replacement]
        # The control that reaches position 0: the same replacement, read on what the other keys carry.  Were the
        # cut a disruption of the whole pass rather than of position 0's part, their signal would be cut as much.
        other_keys = replacement_effect(signals(arrays, layers, other_keys=True),
                                        signals(scores(named[replacement]), layers, other_keys=True),
                                        min_fraction_removed, floor_multiple, min_resolvable_fraction, sequences,
                                        floor_splits, floor_quantile)
        other_keys["cut_alike"] = other_keys["removes"] and cut_alike(
            deciding["fraction_removed"], other_keys["fraction_removed"], (deciding["floor"], other_keys["floor"]),
            floor_multiple)
        models[model] = {
            "passed": deciding["removes"] and not any(effects[c]["removes"] for c in control_replacements)
            and not other_keys["cut_alike"],
            "other_keys": other_keys,
            "role": "decides" if model == decided_by else "exploratory",
            "key0_signal": {"size": _size(original[""]), "halves": [_size(original[h]) for h in HALVES[1:]],
                            "halves_cosine": _cosine(original["_half_a"], original["_half_b"]),
                            "share_of_attention_signal": remaining_share(attention, original[""])},
            "noise_floor": deciding["floor"], "replacements": effects, "bands": _bands(effects),
            "first_key_early": _signed_component(metrics, named["original"], layers),
            "largest_identity_change": identity_gaps[model],
            "preconditions": {"power": deciding["preconditions"]["power"]},
        }
        models[model]["outcome"] = part_outcome(models[model])
    deciding = models[decided_by]
    return {
        "statement": "Replacing the BOS embedding before the forward pass cuts the residual-stream part of absolute "
        "position at early queries: the positional signal that key 0's value carries into them; the reading reports "
        "about 40%.",
        "threshold": f"on {decided_by} (its tokenizer adds BOS), the {replacement} replacement removes >= "
        f"{min_fraction_removed:.0%} of key 0's positional signal at the early queries (layers {list(layers)}: the "
        f"remaining share rho <= {1 - min_fraction_removed:g}) in the mean and both halves, by > {floor_multiple:g} "
        f"floors (the {floor_quantile:g} quantile of |rho_A - rho_B| over {floor_splits} random splits of the sequences' "
        f"groups); the controls ({', '.join(control_replacements)}) do not, nor does the same replacement cut the "
        f"signal the other keys carry as much (a removal by the same rule, within {floor_multiple:g} floors of key 0's); "
        f"decided where "
        f"{floor_multiple:g} floors are at most {min_resolvable_fraction:.0%} (else UNDECIDED)",
        "measured": {"models": models, "decided_by": decided_by, "signed": True, "reading_fraction": reading_fraction,
                     "fraction_removed": deciding["replacements"][replacement]["fraction_removed"]},
        "decided_by": decided_by,
        "controls": {**{name: {"passed": deciding["replacements"][name]["removes"]} for name in control_replacements},
                     f"{replacement}, the other keys' signal": {"passed": deciding["other_keys"]["cut_alike"]}},
        "noise_floor": {"what": f"the {floor_quantile:g} quantile of |rho_A - rho_B| of the {replacement} replacement's "
                        f"remaining share over {floor_splits} random splits of the sequences' groups into halves",
                        "splits": floor_splits, "quantile": floor_quantile,
                        **{model: m["noise_floor"] for model, m in models.items()}},
        "preconditions": {"power": deciding["preconditions"]["power"]},
        "passed": deciding["passed"],
    }


def score_gap(path_a, path_b) -> float:
    """The largest absolute difference between the mean scores of two score files (NaN where masked)."""
    from behind_rope.atomic import read_npz

    a, b = read_npz(path_a)["mean_scores"], read_npz(path_b)["mean_scores"]
    return float(np.nanmax(np.abs(a - b)))


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


def claim_c8a(scores, metadata, metrics: dict, runs: dict, simulation_runs: dict, layers, floor_multiple: float,
              min_resolvable_fall: float, floor_splits: int, floor_quantile: float, **_) -> dict:
    models = {}
    for model, named in runs.items():
        base = scores(named["1"])
        sequences = metadata(named["1"])["sequences"]
        factors = {}
        for factor, run in named.items():
            if factor == "1":
                continue
            row = {part: ntk_effect(signals(base, layers, other_keys=part == "other_keys"),
                                    signals(scores(run), layers, other_keys=part == "other_keys"), min_resolvable_fall,
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


def claim_c8b(scores, metadata, runs: dict, simulation_runs: dict, min_query: int, min_depth_correlation: float,
              floor_multiple: float, min_layer_share: float, min_resolvable_slope: float, floor_splits: int,
              floor_quantile: float, **_) -> dict:
    checks = {role: {"model": run.split("/")[0], **window_depth(scores(run), metadata(run), min_query, min_depth_correlation,
                                                                floor_multiple, min_layer_share, floor_splits,
                                                                floor_quantile, min_resolvable_slope)}
              for role, run in runs.items()}
    for check in checks.values():
        check["outcome"] = part_outcome(check)
    simulation = {}
    for name, run in simulation_runs.items():  # recorded: the simulation's log Z past its window of 16 keys
        arrays = scores(run)
        slopes = slopes_with_floor(visible_log_z(arrays), min(16, arrays["log_z"].shape[-1] - 2), floor_splits,
                                   floor_quantile, key="log_z_visible")
        simulation[name] = {"slope_by_layer": _floats(slopes["slope"]), "floor_by_layer": _floats(slopes["floor"])}
    sliding, control = checks["sliding"], checks["no_window"]
    return {
        "statement": "Where a sliding window binds, the residual stream's part of absolute position grows with depth "
        "over the sliding-window layers, and not in a model without a window.",
        "threshold": f"at queries >= {min_query} (beyond the window), the mean |slope| over heads of log Z - a(i) "
        f"against log(i + 1) has a rank correlation with depth >= {min_depth_correlation} over the sliding-window layers "
        f"and exceeds {floor_multiple:g} floors (the {floor_quantile:g} quantile of |b_A - b_B| over {floor_splits} random "
        f"splits of the sequences' groups, mean over heads) in more than {min_layer_share:.0%} of them; the model without a window fails the same check "
        f"(over its layers); decided where the layers whose {floor_multiple:g} floors exceed a slope of "
        f"{min_resolvable_slope:g} cannot change the outcome (else UNDECIDED)",
        "measured": {"sliding": sliding, "no_window": control, "min_query": min_query, "simulation": simulation},
        "min_query": min_query,
        "controls": {f"{control['model']} (no sliding window)": {"passed": control["passed"]}},
        "noise_floor": {"what": f"the {floor_quantile:g} quantile of |b_A - b_B| over {floor_splits} random splits of the "
                        "sequences' groups, mean over heads, per layer", "splits": floor_splits, "quantile": floor_quantile,
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


def claim_c9(patching: dict, runs: dict, sink_from_query: int, sink_min_attention: float, min_relative_change: float,
             floor_multiple: float, min_layers: int, min_layer_share: float, max_closed_system_gap: float,
             floor_splits: int, floor_quantile: float, **_) -> dict:
    rule = dict(min_relative_change=min_relative_change, floor_multiple=floor_multiple, min_layers=min_layers,
                min_layer_share=min_layer_share, floor_splits=floor_splits, floor_quantile=floor_quantile)
    models, sink_tables = {}, {}
    for model in runs:
        attention = patching[model]["sink_attention"]
        sink_tables[model] = sink_head_table(attention["all"], sink_min_attention)
        check = {patch: patch_check(patching[model], sink_tables[model], patch, **rule) for patch in ("position0", "middle")}
        # The control that reaches position 0: the same patch read on the layers' other heads.  If they change as
        # much, the patch changes every head alike, and the sink heads are no readers of position 0 in particular.
        others = {layer: {"heads": [h for h in range(row["of"]) if h not in row["heads"]]}
                  for layer, row in sink_tables[model].items()}
        check["other_heads"] = other_heads_alike(check["position0"], patch_check(patching[model], others, "position0", **rule),
                                                 floor_multiple, min_layers, min_layer_share)
        closed = _closed(patching[model]["closed_system"], max_closed_system_gap)
        # Recorded, deciding nothing: the sink heads chosen on half A of the sequences and the patch measured on
        # half B, so that the heads are not chosen on the sequences they are tested on.
        chosen_on_a = sink_head_table(attention["half_a"], sink_min_attention)
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
        "threshold": f"sink heads: mean attention to key 0 >= {sink_min_attention} over queries >= {sink_from_query}; "
        f"patching position 0 at a layer's input changes that layer's sink-head outputs by >= {min_relative_change} "
        f"(relative) and > {floor_multiple:g} floors (the {floor_quantile:g} quantile of |effect_A - effect_B| over "
        f"{floor_splits} random splits of the sequences' groups), in >= {min_layers} of the layers patched (every one "
        f"from the first checked on) and in >= {min_layer_share:.0%} of those with sink heads; position 0's state is "
        f"the same across sequences with the same first token (gap <= {max_closed_system_gap:g}); patching the middle "
        "position fails the same check, and the other heads of the layers with sink heads do not change alike under the "
        f"position-0 patch (by the same rule, within {floor_multiple:g} floors of the sink heads' change or above it, in "
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
        "noise_floor": {"what": f"the {floor_quantile:g} quantile of |effect_A - effect_B| of the patch's effect on the "
                        f"sink heads over {floor_splits} random splits of the sequences' groups, per layer",
                        "splits": floor_splits, "quantile": floor_quantile,
                        **{model: {layer: row["floor"] for layer, row in m["position0"]["layers"].items()}
                           for model, m in models.items()}},
        "passed": all(m["passed"] for m in models.values()),
    }


def decide(metrics: dict, settings: dict, patching: dict, scores, metadata, score_gap) -> dict:
    """C6-C9 from the metrics files keyed ``<source>/<run>`` (experiments.steps.position_claims_settings names the
    runs), claim C9's patching results by model, ``scores(run)`` and ``metadata(run)`` of a score file, and
    ``score_gap(run_a, run_b)`` between two score files."""
    claims, runs = settings["claims"], settings["position_runs"]
    identity_gaps = {model: {name: score_gap(*pair) for name, pair in pairs.items()}
                     for model, pairs in runs["identity"].items()}
    return {
        "C6": claim_c6(scores, metadata, runs["C6"], runs["C6_simulation"], **claims["C6"]),
        "C7": claim_c7(scores, metadata, metrics, runs["C7"], identity_gaps, **claims["C7"]),
        "C8a": claim_c8a(scores, metadata, metrics, runs["ntk"], runs["simulation_ntk"], **claims["C8"]),
        "C8b": claim_c8b(scores, metadata, runs["window"], runs["simulation_window"], **claims["C8"]),
        "C9": claim_c9(patching, runs["C9"], **claims["C9"]),
    }
