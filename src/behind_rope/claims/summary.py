"""The verdicts as lines of text: printed by the claims steps and at the end of a run.  Kept apart from
the deciding code, so that editing one claim's decision reruns that claim alone."""

from __future__ import annotations

from behind_rope.claims.outcome import outcome
from behind_rope.claims.seeds import describe
from behind_rope.registration import status


def c3_detail_lines(claim: dict) -> list[str]:
    """C3 per seed, per statistic over the seeds, its controls, and Figure 3 panel by panel."""
    measured = claim["measured"]
    lines = []
    for name, seed in measured["seeds"].items():
        values = ", ".join(f"{key} {value:.3g}" for key, value in seed["probe"].items() if key != "key_slope")
        lines.append(f"seed {seed['seed']} ({name}, {seed['steps']} steps): {values}; on its own "
                     f"{'PASS' if seed['passes_on_its_own'] else 'FAIL'}; sanity {'PASS' if seed['sanity']['passed'] else 'FAIL'}")
        if "competence" in seed:
            competence, power, order = seed["competence"], seed["power"], seed["competence"]["uses_order"]
            lines.append(f"    competence {'met' if competence['passed'] else 'NOT MET'}: order gap "
                         f"{order['order_gap']:+.3f} ± {order['standard_error']:.3f} nats (lower {order['confidence']:.0%} end "
                         f"{order['interval_low']:+.3f}, bound {order['min_order_gap']}), held-out loss "
                         f"{competence['loss_above_rope']:+.3f} above the RoPE seeds' mean (bound {competence['max_loss_above_rope']}); "
                         f"power {power['power']:.2f} at {power['sequences']:,} probe sequences"
                         + (f" (the power bound needs {power['sequences_for_power']:,} if its noise is sampling noise)"
                            if power["sequences_for_power"] else ""))
    if "loss_gap" in measured:
        gap = measured["loss_gap"]
        low, high = gap["interval"]
        lines.append(f"loss above RoPE over seeds: NoPE {gap['nope_mean']:.3f} ({gap['nope_seeds']} seeds) - RoPE "
                     f"{gap['rope_mean']:.3f} ({gap['rope_seeds']}) = {gap['difference']:+.3f}, {gap['confidence']:.0%} "
                     f"interval [{low:+.3f}, {high:+.3f}] (pooled sd {gap['pooled_sd']:.3f}); {gap['seeds_within']} "
                     f"NoPE seeds within {gap['bound']} on their own; {'met' if gap['passed'] else 'NOT MET'}"
                     + (f"; about {gap['seeds_to_resolve']} seeds of each twin would resolve it"
                        if not gap["passed"] and gap["seeds_to_resolve"] else ""))
    for layer, values in measured.get("probe_layers", {}).items():
        lines.append(f"layer {layer} on the probe, seed by seed: locality "
                     + ", ".join(f"{value:.2f}" for value in values["locality"].values()) + "; key slope "
                     + ", ".join(f"{value:+.4f}" for value in values["key_slope"].values()))
    lines += [f"{name} over seeds: {describe(rule)}" for name, rule in measured["probe"]["statistics"].items()]
    for control, result in measured["controls"].items():
        verdict = "FAIL, as it must" if not result["passed"] else "PASS (a control that passes fails the claim)"
        parts = "; ".join(f"{name} {describe(rule)}" for name, rule in result["statistics"].items())
        lines.append(f"control {control}: {verdict} ({parts})")
    for letter, panel in measured["panels"].items():
        parts = "; ".join(f"{name} {describe(rule)}" for name, rule in panel["statistics"].items())
        lines.append(f"Figure 3 panel ({letter}): {'PASS' if panel['passed'] else 'FAIL'} ({parts})")
    return lines


def summary_lines(claims: dict) -> list[str]:
    """One line per claim, its verdict and its threshold, and for C3 its seeds and panels (printed by the
    claims step and at the end of a run)."""
    lines = []
    first = next(iter(claims.values()), {})
    registration, data = first.get("registration"), first.get("data", {})
    if registration:
        lines.append(f"Registration {registration['hash']} (its deciding values last changed at {registration['commit']}"
                     f"{', ' + registration['date'] if registration['date'] else ''}): {status(registration, data)}; "
                     f"seeds {data.get('seed_rule', 'unknown')}")
    for name, claim in claims.items():
        commit = claim.get("criterion_commit", "unknown")
        lines.append(f"{name}: {outcome(claim)}  ({claim['threshold']}; criterion {commit})")
        lines += [f"    precondition {key}: {'met' if entry['passed'] else 'NOT MET'} ({entry['reason']})"
                  for key, entry in claim.get("preconditions", {}).items()]
        if "undecided" in claim:
            lines.append(f"    undecided: what would decide it: {claim['undecided']['would_decide']}")
        if name == "C3":
            lines += [f"    {line}" for line in c3_detail_lines(claim)]
        for control, result in claim.get("controls", {}).items() if name != "C3" else ():
            if isinstance(result, dict) and "passed" in result:
                verdict = "FAIL, as it must" if not result["passed"] else "PASS (a control that passes fails the claim)"
                if result.get("testable") is False:
                    verdict += ", but it had nothing to test here"
                lines.append(f"    control {control}: {verdict}")
    return lines


def print_summary(path) -> None:
    """The verdicts of a claims file, printed at the end of a workflow run (if the file exists)."""
    import json
    from pathlib import Path

    if Path(path).exists():
        print(f"Claims ({path}):", *summary_lines(json.loads(Path(path).read_text())), sep="\n  ")
