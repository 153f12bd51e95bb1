"""The verdict gate: unit tests of the comparison, and (in CI) the default workflow run once, as a user runs it,
against tests/expected_verdicts.json."""

import copy
import fnmatch
import json
import os
import re
import sys

import pytest

from behind_rope.claims.gate import KEY_VALUES, compare, expected_from, verdicts
from conftest import DEFAULT_RUN, GATE, GATE_MINUTES, ROOT, BackgroundRun, disk_gb

EXPECTED = ROOT / "tests" / "expected_verdicts.json"

CLAIMS = {
    "C1": {"passed": True, "measured": {"monte_carlo_max_abs_error": 0.01}},
    "C3": {"passed": False, "measured": {
        "checks": {"training_sanity": True, "amplification_on_iid_tokens": False},
        "probe": {"statistics": {"amplification": {"mean": 0.8, "passed": False}}, "passed": False},
        "seeds": {"nope": {"passes_on_its_own": True, "sanity": {"passed": True}}},
    }},
}


def test_the_gate_passes_on_the_run_it_was_written_from():
    assert compare(CLAIMS, expected_from(CLAIMS, "default")) == []


def test_a_flipped_verdict_or_a_value_out_of_tolerance_fails_the_gate():
    expected = expected_from(CLAIMS, "default")
    flipped = copy.deepcopy(CLAIMS)
    flipped["C3"]["measured"]["probe"]["statistics"]["amplification"]["passed"] = True
    assert compare(flipped, expected) == [
        "C3.measured.probe.statistics.amplification.passed: expected FAIL, the run gives PASS"]
    drifted = copy.deepcopy(CLAIMS)
    drifted["C1"]["measured"]["monte_carlo_max_abs_error"] = 0.02
    assert len(compare(drifted, expected)) == 1
    missing = copy.deepcopy(CLAIMS)
    del missing["C3"]["measured"]["checks"]["training_sanity"]
    assert "no such verdict" in compare(missing, expected)[0]


def test_verdicts_that_rest_on_one_seed_are_not_gated():
    gated = verdicts(CLAIMS)
    assert "C3.measured.checks.training_sanity" in gated and "C1.passed" in gated
    assert not any(".seeds." in path for path in gated)


def test_a_simulation_run_or_control_that_stops_showing_the_effect_fails_the_gate():
    claims = {"C2": {"passed": True, "measured": {"runs": {"causal": {"shows_effect": True}},
                                                  "controls": {"noncausal": {"shows_effect": False}}}}}
    flipped = copy.deepcopy(claims)
    flipped["C2"]["measured"]["controls"]["noncausal"]["shows_effect"] = True
    assert compare(flipped, expected_from(claims, "default")) == [
        "C2.measured.controls.noncausal.shows_effect: expected FAIL, the run gives PASS"]


def test_every_key_value_pattern_holds_values_in_the_expected_file():
    """A pattern that matches no path of claims.json would gate nothing, silently."""
    values = json.loads(EXPECTED.read_text())["values"]
    assert [pattern for pattern in KEY_VALUES if not any(fnmatch.fnmatch(path, pattern) for path in values)] == []


def test_the_expected_file_covers_every_claim():
    expected = json.loads(EXPECTED.read_text())
    claims = {path.split(".")[0] for path in expected["verdicts"]}
    assert claims == {"C1", "C2", "C3", "C4", "C5a", "C5b", "C5c", "C5d", "C6", "C7", "C8a", "C8b", "C9"}
    assert expected["scale"] == "default"


def test_the_gate_command_refuses_a_run_of_another_scale_or_of_unknown_scale(tmp_path):
    """A smoke or paper-scale run differs from the default scale's verdicts by design: the command says so,
    rather than listing differences (compare) or writing that run's verdicts as the default scale's (--write)."""
    from behind_rope.__main__ import main

    claims, expected, settings = tmp_path / "claims.json", tmp_path / "expected.json", tmp_path / "settings.json"
    claims.write_text(json.dumps(CLAIMS))
    expected.write_text(json.dumps(expected_from(CLAIMS, "default")))
    run = ["verdict-gate", "--claims", str(claims), "--expected", str(expected), "--run-settings", str(settings)]
    with pytest.raises(SystemExit, match="is missing, so the run's scale is unknown"):
        main(run)
    settings.write_text(json.dumps({"scale_name": "smoke"}))
    for extra in ([], ["--write"]):
        with pytest.raises(SystemExit, match="at the 'smoke' scale"):
            main(run + extra)
    assert json.loads(expected.read_text()) == expected_from(CLAIMS, "default")  # not rewritten
    settings.write_text(json.dumps({"scale_name": "default"}))
    main(run)  # passes: the claims are those the file was written from
    main(run + ["--write"])
    assert json.loads(expected.read_text()) == expected_from(CLAIMS, "default")


def test_a_background_run_reports_its_status_and_output_and_runs_at_a_lower_priority():
    run = BackgroundRun([sys.executable, "-c", "import os, sys; print(os.nice(0)); sys.exit(3)"], "test-status")
    run.start()
    assert run.wait() == (3, f"{min(19, os.nice(0) + 10)}\n")


def test_a_background_run_past_its_deadline_is_stopped():
    run = BackgroundRun([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(120)"], "test-stop")
    run.start(seconds=2)
    assert run.wait() == (None, "started\n")
    assert run.process.poll() is not None


@pytest.mark.skipif(not GATE, reason="the verdict gate runs the default workflow (20 to 40 minutes on 2 cores, by CPU: docs/results.md): "
                    "set CI=true or BEHIND_ROPE_VERDICT_GATE=1")
def test_the_default_workflow_gives_the_expected_verdicts():
    """`snakemake --cores all` in this checkout, as ./run.sh runs it (incremental if results/ is up to date).

    The run started when the tests were collected (conftest.BackgroundRun); this test comes last and waits for it.
    """
    returncode, output = DEFAULT_RUN.wait()
    assert returncode is not None, f"the default workflow ran past {GATE_MINUTES:.0f} minutes and was stopped:\n{output}"
    assert returncode == 0, f"the default workflow failed:\n{output}"
    problems = compare(json.loads((ROOT / "results" / "claims.json").read_text()), json.loads(EXPECTED.read_text()))
    assert problems == [], "the verdict gate fails:\n" + "\n".join(problems)
    # run.sh and test.sh ask for this much free disk before a default run (envs/disk.sh).
    written = disk_gb(ROOT / "results") - DEFAULT_RUN.results_gb_before
    asked = int(re.search(r"DEFAULT_RUN_GB=(\d+)", (ROOT / "envs" / "disk.sh").read_text()).group(1))
    assert written <= asked, f"the default run wrote {written:.1f} GB into results/, more than envs/disk.sh asks for"
