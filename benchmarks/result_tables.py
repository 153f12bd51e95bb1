"""The tables that come from a run's results/claims.json: docs/results.md's (claims C3 to C9) and the README's
claims table; and docs/criteria.md's criteria history (config/criteria_history.yaml).

    python benchmarks/result_tables.py results/claims.json      # rewrite them from this run
    python benchmarks/result_tables.py DIR/results/claims.json --source "a default-scale run of commit abc1234 (an AVX2 host)"
    python benchmarks/result_tables.py results/claims.json --extended results/extended/claims.json   # the ladder too

Every sentence in them that states a verdict is written here from the claims file, never by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "src"))
from behind_rope.claims.outcome import part_outcome  # noqa: E402
from behind_rope.claims.preregistration import before_and_after, history_markdown, load_history  # noqa: E402
from behind_rope.experiments.runs import REVISION_CLAIMS  # noqa: E402
from behind_rope.paper.revision import stance  # noqa: E402
from behind_rope.revision.claims import published_table  # noqa: E402
from results_doc import CRITERIA, README, RESULTS, update  # noqa: E402


def _verdict(passed: bool) -> str:
    return "**PASS**" if passed else "**FAIL**"


def _number(value, form: str) -> str:
    return "n/a" if value is None or value != value else format(value, form)


def _rule(rule: dict, form: str = ".3f") -> str:
    """A seed rule as one cell: mean [interval], seeds clearing the bound, verdict."""
    low, high = rule["interval"]
    sign = ">=" if rule["direction"] == "at_least" else "<="
    return (f"{_number(rule['mean'], form)} [{_number(low, form)}, {_number(high, form)}]; "
            f"{rule['seeds_passing']}/{rule['seeds']} seeds {sign} {rule['threshold']:g}; "
            f"{'PASS' if rule['passed'] else 'FAIL'}")


def _claim_line(claims: dict, name: str) -> str:
    """The verdict, the criterion and its commit; for a claim decided per model, which models pass."""
    claim = claims[name]
    said = claim.get("outcome") or ("PASS" if claim["passed"] else "FAIL")
    line = f"**{name}: {said}** ({claim['threshold']}; criterion {claim.get('criterion_commit', 'unknown')})"
    for precondition, entry in claim.get("preconditions", {}).items():
        line += f". Precondition {precondition}: {'met' if entry['passed'] else 'NOT MET'} ({entry['reason']})"
    if "undecided" in claim:
        line += f". What would decide it: {claim['undecided']['would_decide']}"
    models = claim["measured"].get("models") if isinstance(claim["measured"], dict) else None
    if models and all(isinstance(result, dict) and "passed" in result for result in models.values()):
        said = {model: part_outcome(result) for model, result in models.items()}
        passing, failing = ([model for model, s in said.items() if s == outcome] for outcome in ("PASS", "FAIL"))
        undecided = [model for model, s in said.items() if s == "UNDECIDED"]
        line += (f". Passes for {', '.join(passing) or 'no model'}; "
                 + (f"undecided for {', '.join(undecided)}; " if undecided else "")
                 + f"fails for {', '.join(failing) or 'no model'}.")
    controls = claim.get("controls") if name != "C3" else None
    if controls:
        line += " Controls (each must fail): " + "; ".join(
            f"{control} {'FAIL' if not result['passed'] else 'PASS, so the claim fails'}"
            + (" (nothing to test here)" if result.get("testable") is False else "") for control, result in controls.items()) + "."
    return line


def _steps(twin: str, seed: dict, run: Path | None) -> str:
    """Steps trained, and why it stopped: the training-length rule before the cap, or the cap (read from the
    run's results/training/<twin>/metrics.json; the rule may also trigger at the cap itself)."""
    metrics = run / "results" / "training" / twin / "metrics.json" if run else None
    cap = json.loads(metrics.read_text())["max_steps"] if metrics and metrics.exists() else None
    if cap is None:
        return f"{seed['steps']} ({'rule' if seed['stopped_early'] else 'cap'})"
    return f"{seed['steps']} ({'rule' if seed['stopped_early'] and seed['steps'] < cap else 'cap'})"


def twins_table(claims: dict, run: Path | None = None) -> str:
    """Claim C3 as the pipeline decided it: per seed, each statistic over the seeds (the probe and its
    controls), Figure 3 panel by panel, and the RoPE twin recorded beside C4.  ``run`` is the run's folder,
    for each twin's training cap."""
    c3 = claims["C3"]["measured"]
    names = list(c3["probe"]["statistics"])
    failed = [check for check, ok in c3["checks"].items() if not ok]
    rows = [_claim_line(claims, "C3"), "",
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
        rows.append(f"| {seed['seed']} | {twin} | {steps} | " + " | ".join(_number(seed["probe"][n], ".3f") for n in names)
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
        rows.append(f"| {label} | " + " | ".join(_rule(result["statistics"][n]) for n in names)
                    + f" | {'PASS' if result['passed'] else 'FAIL'} |")
    for role, label in (("text", "held-out text, mask (recorded)"), ("text_no_mask", "held-out text, no mask (recorded)")):
        means = [_mean(seed[role][n] for seed in c3["seeds"].values()) for n in names]
        rows.append(f"| {label} | " + " | ".join(_number(m, ".3f") for m in means) + " | |")
    rows += ["", "The untrained twin per seed (i.i.d. probe; sanity):", "",
             "| twin | " + " | ".join(names) + " | on its own | held-out loss |", "|---" * (len(names) + 3) + "|"]
    for twin, seed in c3["controls"]["untrained"]["seeds"].items():
        rows.append(f"| {twin} | " + " | ".join(_number(seed["probe"][n], ".4f") for n in names)
                    + f" | {'PASS' if seed['passes_on_its_own'] else 'FAIL'} | {seed['sanity']['validation_loss']:.3f} |")
    rows += ["", "Figure 3 panel by panel (recorded, not part of C3's verdict), each statistic over the seeds' Gram matrices "
             "by the same seed rule: " + "; ".join(
                 f"({letter}) {_verdict(panel['passed'])}: " + ", ".join(f"{name} {_rule(rule)}"
                                                                        for name, rule in panel["statistics"].items())
                 for letter, panel in c3["panels"].items()) + "."]
    rope = claims["C4"]["measured"]["trained_rope_twin"]
    rows += ["", "The RoPE twin, recorded beside C4 (`C4.measured.trained_rope_twin`, per layer), meets C4's check in "
             + (", ".join(run for run, evidence in rope.items() if evidence["meets_c4_check"]) or "none of its runs") + "."]
    return "\n".join(rows)


def _mean(values) -> float:
    values = [v for v in values if v is not None and v == v]
    return sum(values) / len(values) if values else float("nan")


def llm_table(claims: dict) -> str:
    """Claims C5a-C5d per model: the structure (C5a), its size (C5b), the first keys (C5c) and the direction
    (C5d, our own question), then every layer on text and the layer types."""
    c5a, c5b, c5c, c5d = (claims[name]["measured"]["models"] for name in ("C5a", "C5b", "C5c", "C5d"))
    rows = [_claim_line(claims, "C5a"), "",
            "C5a: block reliability / non-relative index / start deficit (the old measure, key 0 included), layers 1-4:", "",
            "| model | run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for run, label in (("text", "text, mask"), ("iid_tokens", "i.i.d. tokens, mask"),
                           ("iid_tokens_no_mask", "i.i.d. tokens, no mask")):
            cells = [f"{_number(v['block_reliability'], '.2f')} / {_number(v['nonrelative_index'], '.2f')} / "
                     f"{_number(v['start_deficit'], '+.2f')}" for v in result[run].values()]
            rows.append(f"| {model} | {label} | " + " | ".join(cells) + " |")
        checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in result["checks"].items())
        rows.append(f"| {model} | C5a {_verdict(result['passed'])} | {checks} | | | |")

    rows += ["", _claim_line(claims, "C5b"), "",
             "C5b, per layer of the Figure 5 run (as drawn): raw width / pattern width / spread ratio / noise ratio "
             "(a layer counts when the ratio and its margin over the noise are both reached):", "",
             "| model | layer 1 (recorded) | layer 2 | layer 3 | layer 4 | C5b |", "|---|---|---|---|---|---|"]
    for model, result in c5b.items():
        first = result["layer_1"]
        cells = [f"ratio {_number(first['spread_ratio'], '.3f')}, noise {_number(first['noise_spread_ratio'], '.3f')}"]
        cells += [f"{_number(v['raw_spread'], '.1f')} / {_number(v['pattern_spread'], '.2f')} / "
                  f"{_number(v['spread_ratio'], '.3f')} / {_number(v['noise_spread_ratio'], '.3f')}"
                  f"{' (counts)' if v['large'] else ''}" for v in result["layers"].values()]
        rows.append(f"| {model} | " + " | ".join(cells) + f" | **{part_outcome(result)}** |")
    rows.append("")
    for model, result in c5b.items():  # why each model passes or fails: the layers that count, and the control
        counting = [layer for layer, v in result["layers"].items() if v["large"]]
        noise = result["control_split_half_noise"]
        rows.append(f"- {model}: {len(counting)} layer(s) count ({', '.join(counting) or 'none'}); the noise reaches the "
                    f"bound in layer(s) {', '.join(map(str, noise['layers_at_or_above_threshold'])) or 'none'}"
                    + (" (the control passes: noise alone would reach the bound, so the model is UNDECIDED)."
                       if noise["passed"] else " (the control fails, as it must)."))

    rows += ["", _claim_line(claims, "C5c"), "",
             "C5c, per layer of the text run: the first keys' contrast against mid-context keys, mean (halves), in "
             "noise floors; key 0 (the sink) the same way; the same text without the mask (the control), first keys in "
             "noise floors:", "",
             "| model | layer | first keys | floors | stands apart | key 0 | floors | no mask, floors | C5c |",
             "|---|---|---|---|---|---|---|---|---|"]
    for model, result in c5c.items():
        control = result["control_text_no_mask"]["layers"]
        for k, (layer, v) in enumerate(result["text"].items()):
            halves = ", ".join(_number(h, "+.3f") for h in v["first_keys_contrast_halves"])
            off = control.get(layer, {})
            rows.append(f"| {model if k == 0 else ''} | {layer} | {_number(v['first_keys_contrast'], '+.3f')} ({halves}) | "
                        f"{_floors(v['first_keys_contrast'], v['first_keys_noise'])} | {'yes' if v['stands_apart'] else 'no'} | "
                        f"{_number(v['sink_contrast'], '+.3f')} | {_floors(v['sink_contrast'], v['sink_noise'])} | "
                        f"{_floors(off.get('first_keys_contrast'), off.get('first_keys_noise'))} | "
                        f"{_verdict(result['passed']) if k == 0 else ''} |")

    rows += ["", _claim_line(claims, "C5d"), "",
             "C5d (our own question, beyond the paper's text), on the Figure 5 run, per layer: panel reliability as "
             "drawn; start deficit the paper's way; softmax-visible start deficit, mean (halves); the same on i.i.d. "
             "tokens; sink:", "",
             "| model | sampling | layer 1 | layer 2 | layer 3 | layer 4 | C5d |", "|---|---|---|---|---|---|---|"]
    for model, result in c5d.items():
        cells = []
        for layer, v in result["figure5"].items():
            halves = ", ".join(_number(h, "+.3f") for h in v["start_deficit_visible_halves"])
            iid = result["iid_tokens"].get(layer, {}).get("start_deficit_visible")
            mark = "" if int(layer) in result["layers_where_c5a_holds"] else " (not judged)"
            cells.append(f"r {_number(v['drawn_reliability'], '.2f')}; {_number(v['start_deficit_paper'], '+.3f')}; "
                         f"{_number(v['start_deficit_visible'], '+.3f')} ({halves}); i.i.d. {_number(iid, '+.3f')}; "
                         f"sink {_number(v['sink'], '+.2f')}{mark}")
        rows.append(f"| {model} | {result['figure5_inputs']['sampling']} | " + " | ".join(cells)
                    + f" | {_verdict(result['passed'])} |")

    rows += ["", "The text run's layers (llm.inputs.text; the all-layer figures of `snakemake extended` draw every layer), "
             "block reliability (start deficit sign: + / −; · where the window hides the start):", "",
             "| model | layer: block reliability, start deficit sign (s = sliding window) |", "|---|---|"]
    for model, result in c5a.items():
        cells = []
        for layer, v in result["all_layers_text"].items():
            sign = {"positive": "+", "negative": "−"}.get(v["start_deficit_sign"], "·")
            mark = "s" if v.get("layer_type") == "sliding_attention" else ""
            cells.append(f"{layer}{mark}: {_number(v['block_reliability'], '.2f')}{sign}")
        rows.append(f"| {model} | {', '.join(cells)} |")
    rows += ["", "By attention type (text; means over layers):", "",
             "| model | type | layers | block reliability | non-relative index | start deficit |", "|---|---|---|---|---|---|"]
    for model, result in c5a.items():
        for kind, v in result["by_layer_type"].items():
            rows.append(f"| {model} | {kind} | {len(v['layers'])} | {_number(v['mean_block_reliability'], '.2f')} | "
                        f"{_number(v['mean_nonrelative_index'], '.2f')} | {_number(v['mean_start_deficit'], '+.2f')} |")
    return "\n".join(rows)


def _floors(value, noise) -> str:
    if value is None or noise is None or value != value or noise != noise or noise <= 0:
        return "n/a"
    return f"{abs(value) / noise:.1f}"


def decomposition_table(claims: dict) -> str:
    """Relative / query offset / softmax-visible shares, layers 1-4, for every kind of run."""
    shares = ("relative_share", "query_offset_share", "visible_share")
    runs = []
    for model, result in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", "i.i.d."), ("iid_tokens_no_mask", "i.i.d., no mask")):
            runs.append((f"{model}, {label}", result["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        runs.append((f"twin {run}", {str(row["layer"]): row for row in layers}))
    runs += [(f"simulation {name}", layers) for name, layers in claims["C4"]["measured"]["decomposition"].items()]
    rows = ["| run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|"]
    for label, by_layer in runs:
        cells = [" / ".join(_number(by_layer[str(k)][key], ".2f") for key in shares) if str(k) in by_layer else ""
                 for k in (1, 2, 3, 4)]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _verdict(passed) -> str:
    return "PASS" if passed else "FAIL"


def position_table(claims: dict) -> str:
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
        ratios = ", ".join(f"{name} {_number(effect['ratio'], '+.2f')}" for name, effect in c7_result["replacements"].items())
        old_proxy = ", ".join(f"{_number(effect['first_key_ratio'], '+.2f')}" for effect in c7_result["replacements"].values())
        ntk = c8a["models"].get(model)
        falls = ", ".join(f"s={f}: {_number(row['key0']['value'], '+.2f')} / {_number(row['other_keys']['value'], '+.2f')}, "
                          f"floor {_number(row['key0']['floor'], '.2f')}"
                          for f, row in ntk["factors"].items()) + f" ({_verdict(ntk['passed'])})" if ntk else ""
        c9_result = c9["models"][model]
        effects = "; ".join(
            f"L{layer}: {_number(row['effect'], '.3f')} / {_number(c9_result['middle']['layers'][layer]['effect'], '.3f')}"
            f" / {_number(row['floor'], '.1e')}" for layer, row in c9_result["position0"]["layers"].items()
            if row["sink_heads"]) or "no sink heads"
        counts = " ".join(str(count) for count in sinks[model].values())
        rows.append(f"| {model} | {carrying}; {no_mask} ({_verdict(c6_result['passed'])}) | "
                    f"{_number(c7_result['key0_signal']['size'], '.3g')}; {ratios} "
                    f"({_number(c7_result['noise_floor'], '.3f')}; {c7_result['role']}, "
                    f"{c7_result.get('outcome', _verdict(c7_result['passed']))}); R'/R {old_proxy} | "
                    f"{falls} | {counts}; {effects} ({_verdict(c9_result['passed'])}) |")
    simulation = c6["simulation"]
    rows += ["", "C6, simulation: log-Z slope by layer " + ", ".join(
        f"{layer}: {_number(row['slope'], '.2f')}" for layer, row in simulation["probe"]["layers"].items())
        + "; without the mask " + ", ".join(f"{layer}: {_number(row['slope'], '.2f')}"
                                             for layer, row in simulation["no_mask"]["layers"].items())]
    for role in ("sliding", "no_window"):
        check = c8b[role]
        rows += ["", f"C8b, {check['model']} (queries >= {check['min_query']} of {check['seq_len']}; {check['checked']}): "
                 f"rank correlation with depth {_number(check['depth_correlation'], '.2f')}, "
                 f"{check['layers_above_floor']} of {len(check['checked_layers'])} layers above the floors; mean abs(slope) "
                 + ", ".join(f"{layer}{'s' if row['type'] == 'sliding_attention' else ''}: {_number(row['value'], '.3f')}"
                             for layer, row in check["layers"].items()) + f" ({_verdict(check['passed'])}); by type "
                 "(recorded): " + ", ".join(f"{kind} layers {_number(row['mean_value'], '.3f')} against a floor of "
                                            f"{_number(row['mean_floor'], '.3f')} ({len(row['layers'])} layers)"
                                            for kind, row in check["by_type"].items())]
    rows += ["", "C9, recorded and deciding nothing, per model, in the layers with sink heads: the effect on the even / "
             "odd sequences; and with the sink heads chosen on the even sequences, the effect on the odd ones (their "
             "floor): " + "; ".join(
                 f"{model} " + (", ".join(
                     f"L{layer}: {_number(row['effect_halves'][0], '.3f')} / {_number(row['effect_halves'][1], '.3f')}"
                     for layer, row in result["position0"]["layers"].items() if row["sink_heads"]) or "none") + " | held out "
                 + (", ".join(f"L{layer} ({len(row['sink_heads'])} heads): {_number(row['effect'], '.3f')} "
                              f"({_number(row['floor'], '.1e')})" for layer, row in result["held_out"]["layers"].items()
                              if row["sink_heads"]) or "none")
                 + f", the rule met in {result['held_out']['layers_meeting_rule']} layers"
                 for model, result in c9["models"].items())]
    rows += ["", leakage_table(c6["positional_leakage"])]
    rows += [line for name in ("C6", "C7", "C8a", "C8b", "C9") for line in ("", _claim_line(claims, name))]
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
        cells = [" / ".join(_number(record[role][layer][key], ".2f") for role in ("mask", "no_mask")
                            for key in ("mean", "mean_without_offset")) if layer in record["mask"] else ""
                 for layer in layers]
        rows.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def ladder_table(claims: dict) -> str:
    """The scale ladder (behind_rope.claims.ladder): claim C5's measures per model, smallest first, and decided layer."""
    from behind_rope.claims.ladder import ladder_rows, model_means

    lines = ["| model | parameters (as loaded) | Figure 5 sequences | layer | structure (C5a) | magnitude (C5b) | "
             "first keys, noise floors (C5c) | direction (C5d) | Figure 5 reliability | C5a / C5b / C5c / C5d |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = ladder_rows(claims)
    for k, row in enumerate(rows):
        first = k == 0 or rows[k - 1]["model"] != row["model"]
        verdicts = " / ".join(row["verdicts"].values())
        lines.append(" | ".join([
            f"| {row['model'] if first else ''}", f"{row['parameters'] / 1e6:,.0f}M" if first else "",
            str(row["figure5_sequences"]) if first else "", str(row["layer"]), _number(row["structure"], ".2f"),
            _number(row["magnitude"], ".3f"), _number(row["first_keys"], "+.1f"), _number(row["direction"], "+.3f"),
            _number(row["reliability"], ".2f"), verdicts if first else ""]) + " |")
    means = model_means(claims)
    lines += ["", "Means over the decided layers:", "",
              "| model | structure | magnitude | first keys (their size) | direction | Figure 5 reliability |",
              "|---|---|---|---|---|---|"]
    for model, mean in means.items():
        lines.append(f"| {model} | {_number(mean['structure'], '.2f')} | {_number(mean['magnitude'], '.3f')} | "
                     f"{_number(mean['first_keys'], '.1f')} | {_number(mean['direction'], '+.3f')} | "
                     f"{_number(mean['reliability'], '.2f')} |")
    return "\n".join(lines) + "\n"


def history_table(root: Path = ROOT) -> str:
    """Every change of a criterion (config/criteria_history.yaml), rows without a commit given theirs by git."""
    return "_From `config/criteria_history.yaml` by `python benchmarks/result_tables.py`._\n\n" + history_markdown(load_history(root))


def readme_table(claims: dict, source: str, root: Path = ROOT) -> str:
    """The README's claims table: each claim's statement as results/claims.json words it, what the revised
    paper (version 2) does with it, how many of its criterion's changes were written before and after results
    were known (config/criteria_history.yaml), and its outcome."""
    history = load_history(root)
    rows = [f"_From `results/claims.json` of {source}; criterion changes from `config/criteria_history.yaml`._", "",
            "| claim | what it says | version 2 | criterion changes, before / after results | outcome |",
            "|---|---|---|---|---|"]
    for name, claim in claims.items():
        if isinstance(claim, dict) and "statement" in claim:
            said = "its own claim" if name.startswith("R") else stance(name)[0]
            rows.append(f"| {name} | {claim['statement']} | {said} | {before_and_after(history, name)} | "
                        f"**{claim.get('outcome') or _verdict(claim['passed'])}** |")
    return "\n".join(rows)


def revision_table(claims: dict) -> str:
    """Version 2's claims, each with its deciding numbers, and our RP against the authors' published values."""
    lines = [f"- {_claim_line(claims, name)}" for name in REVISION_CLAIMS]
    first = claims["R1"]["measured"]["first_layer_below"]
    lines.append("- R1, the first layer from which RP stays below 0.5: "
                 + ", ".join(f"{setting} {layer}" for setting, layer in first.items()) + ".")
    closed = claims["R0"]["measured"]["closed_form_rescaling"]
    lines.append("- The authors' closed form h(j) (recorded with R0): the sympy derivation "
                 + ("is" if closed["derivation_matches_notebook"] else "is **not**") + " the notebook's expression; "
                 "largest gap to the simulated layer-1 rescaling: "
                 + ", ".join(f"{name} {entry['largest_gap']:.4f}" for name, entry in closed.items() if isinstance(entry, dict))
                 + ".")
    return "\n".join(lines) + "\n\n" + published_table(claims["R0"])


def c4_line(claims: dict) -> str:
    """C4's verdict, and each causal layer's start deficit against its floor (the simulation's chunks split many
    times), so that a reader sees how far from the bound each lies."""
    measured = claims["C4"]["measured"]
    layers = "; ".join(f"{run} " + ", ".join(f"L{layer} {_number(row['start_deficit'], '+.4f')} "
                                              f"({_number(row['start_deficit_floor'], '.5f')})"
                                              for layer, row in result["layers"].items())
                       for run, result in {**measured["runs"], **measured["controls"]}.items())
    return (f"{_claim_line(claims, 'C4')}. Start deficit (its floor) by layer: {layers}; the floor from "
            f"{measured['floor']['splits']} splits of each run's {max(measured['floor']['replicates'].values())} chunks.")


def write_tables(claims: dict, source: str, run: Path | None = None, extended: dict | None = None) -> None:
    """Every claims block of docs/results.md and the README, and the criteria history; ``run`` is the run's folder.  The scale
    ladder comes from ``extended`` (the extended target's results/extended/claims.json) when given."""
    note = f"_From `results/claims.json` of {source}._\n\n"
    ladder_note = f"_From `results/extended/claims.json` (`snakemake extended`) of {source}._\n\n"
    unknown = sorted(name for name, claim in claims.items() if isinstance(claim, dict)
                     and claim.get("criterion_commit", "unknown") in ("unknown", "uncommitted"))
    if unknown:
        print(f"Warning: in this claims file the criterion commit of {', '.join(unknown)} reads 'unknown' or "
              "'uncommitted' (a run outside a git checkout, or with criteria not yet committed); the tables say so.",
              file=sys.stderr)
    update("criteria_history", history_table(), CRITERIA)
    update("c4", note + c4_line(claims), RESULTS)
    update("twins", note + twins_table(claims, run), RESULTS)
    update("llm", note + llm_table(claims), RESULTS)
    update("ladder", ladder_note + ladder_table(extended) if extended else note + ladder_table(claims), RESULTS)
    update("decomposition", note + decomposition_table(claims), RESULTS)
    update("position", note + position_table(claims), RESULTS)
    update("revision", note + revision_table(claims), RESULTS)
    update("readme_claims", readme_table(claims, source), README)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("claims", type=Path, help="a run's results/claims.json")
    parser.add_argument("--source", default="a default-scale run",
                        help="the run, as each table's note names it: its commit, its host")
    parser.add_argument("--extended", type=Path,
                        help="the run's results/extended/claims.json (snakemake extended), for the scale ladder")
    args = parser.parse_args()
    claims_file = args.claims.resolve()
    extended = json.loads(args.extended.read_text()) if args.extended else None
    write_tables(json.loads(claims_file.read_text()), args.source, claims_file.parents[1], extended)
