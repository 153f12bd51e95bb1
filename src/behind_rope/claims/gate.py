"""The verdict gate: a run's claims against the verdicts committed for the default scale.

``tests/expected_verdicts.json`` holds, for the default scale, every verdict of results/claims.json
that does not rest on a single training seed (each claim's outcome, PASS, FAIL or UNDECIDED, and whether each
of its preconditions holds; each claim's criteria, its checks', each model's, each
statistic over the seeds and each control's where every precondition of the claim holds, and whether
each simulation run and control of C2, C4 and R1-R5 shows the effect; Figure 3's panels are recorded, not
gated) and a few key measured values with a tolerance each.  CI
runs the default workflow once and fails when a verdict differs or a value leaves its tolerance, so
no change can flip a verdict unnoticed.  Changing a verdict on
purpose means rewriting that file (``python -m behind_rope verdict-gate --write``) in the same
commit, with a row in config/criteria_history.yaml.  The file names the registration its verdicts were written
from: a run of another registration fails the gate until its verdicts are written, and the gate also holds every
outcome to the registration's row in the append-only config/registrations.yaml (behind_rope.claims.record).
"""

from __future__ import annotations

import fnmatch

# Verdicts that rest on one seed may differ between CPUs (float32 kernels): they are recorded, not gated.  So
# are Figure 3's panels, recorded beside C3 and deciding nothing: over five seeds, panel (i) passes on AVX2
# kernels and fails on AVX-512 ones (benchmarks/cpu_invariance.py, docs/results.md).
NOT_GATED = ("C3.measured.seeds.*", "C3.measured.controls.untrained.seeds.*", "C3.measured.sanity.*",
             "C3.measured.panels.*")
# A claim's statistics over trained seeds decide only where every precondition of the claim holds: where one does
# not (a twin that is not competent, a probe without the power), the claim is UNDECIDED whatever they say, so the
# statistics' verdicts (and their controls', the same statistics on other runs) are recorded, not gated.  Over five
# seeds, C3's layer-2 locality gives FAIL (2 of 5 seeds, interval [0.43, 1.13]) on AVX-512 kernels and PASS (4 of 5,
# [0.91, 1.03]) on emulated AVX2 ones while C3 is UNDECIDED on competence in both (docs/results.md, "Does C3 depend
# on the machine?").  Were C3 decided, a statistic that turns over with the kernels would turn its verdict, and the
# gate would hold it.
GATED_ONLY_WHEN_DECIDING = {"C3": ("C3.measured.probe.*", "C3.measured.controls.*", "C3.measured.checks.*_on_iid_tokens",
                                   "C3.measured.checks.no_mask_probe_fails", "C3.measured.checks.untrained_twin_fails")}
# The verdict of one run or control of a claim about the simulations (C2, C4): "passed" would misname it.
RUN_VERDICT = "shows_effect"

# Key values, with a tolerance (absolute) wide enough for another CPU and for seeds, narrow enough to
# catch a changed computation.  Patterns match dotted paths of claims.json.
KEY_VALUES = {
    "C1.measured.monte_carlo_max_abs_error": 0.005,
    "C2.measured.runs.*.layers.*.locality": 0.02,
    # C3's statistics are not held to values: benchmarks/cpu_invariance.py shows their means over five seeds
    # moving by more than 1 between two kernel sets of one CPU (docs/results.md); only their verdicts are gated.
    "C4.measured.runs.*.layers.*.split_half_reliability": 0.02,
    "C4.measured.runs.*.layers.*.start_deficit": 0.01,
    "C4.measured.runs.*.layers.2.start_deficit": 0.01,
    "C5a.measured.models.*.text.*.block_reliability": 0.05,
    "C5b.measured.models.*.layers.*.spread_ratio": 0.01,
    "C5c.measured.models.*.text.*.first_keys_contrast": 0.05,
    "C5d.measured.models.*.figure5.*.start_deficit_visible": 0.02,
    "C6.measured.simulation.*.layers.*.slope": 0.02,
    "C7.measured.models.*.replacements.*.ratio": 0.05,
    "C8a.measured.models.*.factors.*.key0.fall": 0.05,
    "C8b.measured.*.depth_correlation": 0.15,
    "C9.measured.models.*.position0.layers.*.effect": 0.02,
    "C9.sink_head_counts.*.*": 1,
    "R*.measured.rp_by_layer.*.*": 0.01,   # version 2's RP: 99 % intervals at B = 75,000 are about +-0.005
}


def leaves(tree, prefix=""):
    """(dotted path, value) of every leaf of a JSON tree."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, tree


def verdicts(claims: dict) -> dict[str, bool | str]:
    """Every gated verdict: each claim's ``outcome`` (PASS, FAIL or UNDECIDED) and ``passed``, and every boolean
    ``passed``, ``shows_effect`` or check below it (its preconditions' among them), except those of
    ``NOT_GATED``, and those of ``GATED_ONLY_WHEN_DECIDING`` where a precondition of the claim is not met."""
    found = {}
    undecided = [pattern for name, patterns in GATED_ONLY_WHEN_DECIDING.items()
                 if any(entry.get("passed") is False for entry in claims.get(name, {}).get("preconditions", {}).values())
                 for pattern in patterns]
    for path, value in leaves(claims):
        if any(fnmatch.fnmatch(path, pattern) for pattern in (*NOT_GATED, *undecided)):
            continue
        parts = path.split(".")
        if isinstance(value, str) and len(parts) == 2 and parts[1] == "outcome":
            found[path] = value
        elif isinstance(value, bool) and (parts[-1] in ("passed", RUN_VERDICT) or (len(parts) > 2 and parts[-2] == "checks")):
            found[path] = value
    return found


def _said(verdict: bool | str) -> str:
    return verdict if isinstance(verdict, str) else "PASS" if verdict else "FAIL"


def key_values(claims: dict) -> dict[str, float]:
    return {path: value for path, value in leaves(claims) if isinstance(value, (int, float))
            and not isinstance(value, bool) and any(fnmatch.fnmatch(path, pattern) for pattern in KEY_VALUES)}


def expected_from(claims: dict, scale: str) -> dict:
    """The expected-verdicts file for a run: its verdicts, and its key values with their tolerances."""
    values = {}
    for path, value in key_values(claims).items():
        if value != value:  # undefined (a window that hides the start keys): nothing to hold it to
            continue
        tolerance = next(tol for pattern, tol in KEY_VALUES.items() if fnmatch.fnmatch(path, pattern))
        values[path] = {"value": value, "tolerance": tolerance}
    registration = next(iter(claims.values()), {}).get("registration", {}).get("hash")
    return {"scale": scale, "registration": registration, "verdicts": verdicts(claims), "values": values}


def compare(claims: dict, expected: dict) -> list[str]:
    """Every difference between a run's claims and the expected file, one sentence each (empty: the gate passes)."""
    problems = []
    registration = next(iter(claims.values()), {}).get("registration", {}).get("hash")
    if expected.get("registration") and registration != expected["registration"]:
        problems.append(f"the run's registration is {registration}, the expected file's {expected['registration']}: "
                        "a new registration's verdicts are written (--write) with its row in config/registrations.yaml")
    found = verdicts(claims)
    for path, verdict in expected["verdicts"].items():
        if path not in found:
            problems.append(f"{path}: expected {_said(verdict)}, but the run has no such verdict")
        elif found[path] != verdict:
            problems.append(f"{path}: expected {_said(verdict)}, the run gives {_said(found[path])}")
    problems += [f"{path}: a verdict the expected file does not list ({_said(found[path])})"
                 for path in found if path not in expected["verdicts"]]
    values = key_values(claims)
    for path, entry in expected["values"].items():
        value = values.get(path)
        if value is None or value != value:
            problems.append(f"{path}: expected {entry['value']:.4g}, but the run has no value")
        elif abs(value - entry["value"]) > entry["tolerance"]:
            problems.append(f"{path}: {value:.4g} is more than {entry['tolerance']:g} from the expected {entry['value']:.4g}")
    return problems
