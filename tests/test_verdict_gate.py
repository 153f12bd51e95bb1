"""The verdict gate: unit tests of the comparison, and (in CI) the default workflow run once, as a user runs it,
against tests/expected_verdicts.json."""

import copy
import fnmatch
import json
import os
import re
import sys
import time

import gate_cache
import pytest
import yaml

from behind_rope.claims.gate import KEY_VALUES, compare, expected_from, verdicts
from behind_rope.claims.record import compare_with_record, read_rows, run_row
from conftest import (
    CI_DEADLINE,
    DEFAULT_RUN,
    GATE,
    GATE_MINUTES,
    ROOT,
    BackgroundRun,
    copy_workflow,
    disk_gb,
    snakemake,
)
from test_workflow import FIGURE_RULES

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


def test_an_outcome_that_becomes_undecided_or_decided_fails_the_gate():
    claims = copy.deepcopy(CLAIMS)
    claims["C3"] |= {"outcome": "UNDECIDED", "preconditions": {"competence": {"passed": False}}}
    expected = expected_from(claims, "default")
    assert expected["verdicts"]["C3.outcome"] == "UNDECIDED"
    assert expected["verdicts"]["C3.preconditions.competence.passed"] is False
    decided = copy.deepcopy(claims)
    decided["C3"] |= {"outcome": "FAIL", "preconditions": {"competence": {"passed": True}}}
    differences = compare(decided, expected)
    assert differences[:2] == ["C3.outcome: expected UNDECIDED, the run gives FAIL",
                               "C3.preconditions.competence.passed: expected FAIL, the run gives PASS"]
    # Decided, its statistics decide too: the expected file, written while it was undecided, does not hold them.
    assert differences[2:] and all("the expected file does not list" in line for line in differences[2:])


def test_the_expected_file_holds_every_claims_outcome():
    expected = json.loads(EXPECTED.read_text())["verdicts"]
    outcomes = {path.split(".")[0]: value for path, value in expected.items() if path.endswith(".outcome")}
    assert set(outcomes) == {path.split(".")[0] for path in expected}
    assert set(outcomes.values()) <= {"PASS", "FAIL", "UNDECIDED"}


def test_verdicts_that_rest_on_one_seed_are_not_gated():
    gated = verdicts(CLAIMS)
    assert "C3.measured.checks.training_sanity" in gated and "C1.passed" in gated
    assert not any(".seeds." in path for path in gated)


def test_statistics_over_seeds_are_gated_only_where_every_precondition_holds():
    """While a precondition is unmet (a probe without the power, a twin that is not competent) the claim is UNDECIDED
    whatever its statistics say: a flip of them is not a changed decision.  With every precondition met, the same
    flip fails the gate."""
    for preconditions, gated in (({"power": False, "competence": True}, False),
                                 ({"power": True, "competence": False}, False),
                                 ({"power": True, "competence": True}, True)):
        claims = copy.deepcopy(CLAIMS)
        claims["C3"] |= {"outcome": "UNDECIDED", "preconditions": {name: {"passed": met}
                                                                    for name, met in preconditions.items()}}
        flipped = copy.deepcopy(claims)
        flipped["C3"]["measured"]["probe"]["statistics"]["amplification"]["passed"] = True
        flipped["C3"]["measured"]["checks"]["amplification_on_iid_tokens"] = True
        assert bool(compare(flipped, expected_from(claims, "default"))) is gated, preconditions
        kept = verdicts(claims)
        assert "C3.preconditions.power.passed" in kept and "C3.measured.checks.training_sanity" in kept


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
    assert claims == {"C1", "C2", "C3", "C4", "C5a", "C5b", "C5c", "C5d", "C6", "C7", "C8a", "C8b", "C9", "R0", "R1", "R2", "R3",
                      "R4", "R5"}
    assert expected["scale"] == "default"


def test_the_gate_command_refuses_a_run_of_another_scale_or_of_unknown_scale(tmp_path):
    """A smoke or paper-scale run differs from the default scale's verdicts by design: the command says so,
    rather than listing differences (compare) or writing that run's verdicts as the default scale's (--write)."""
    from behind_rope.__main__ import main

    registered = {name: claim | {"registration": {"hash": "0123456789abcdef", "commit": "abc", "date": None}}
                  for name, claim in CLAIMS.items()}
    claims, expected, settings = tmp_path / "claims.json", tmp_path / "expected.json", tmp_path / "settings.json"
    record = tmp_path / "registrations.yaml"
    claims.write_text(json.dumps(registered))
    expected.write_text(json.dumps(expected_from(registered, "default")))
    record.write_text(yaml.safe_dump([run_row(registered, "default", "a host", "abc")]))
    run = ["verdict-gate", "--claims", str(claims), "--expected", str(expected), "--run-settings", str(settings),
           "--record", str(record)]
    with pytest.raises(SystemExit, match="is missing, so the run's scale is unknown"):
        main(run)
    settings.write_text(json.dumps({"scale_name": "smoke"}))
    for extra in ([], ["--write"]):
        with pytest.raises(SystemExit, match="at the 'smoke' scale"):
            main(run + extra)
    assert json.loads(expected.read_text()) == expected_from(registered, "default")  # not rewritten
    settings.write_text(json.dumps({"scale_name": "default"}))
    main(run)  # passes: the claims are those the file was written from, and the record has their row
    main(run + ["--write"])
    assert json.loads(expected.read_text()) == expected_from(registered, "default")
    record.write_text("")
    with pytest.raises(SystemExit):  # a registration with no row in the record
        main(run)


def test_a_background_run_reports_its_status_and_output_and_runs_at_a_lower_priority():
    run = BackgroundRun([sys.executable, "-c", "import os, sys; print(os.nice(0)); sys.exit(3)"], "test-status")
    run.start()
    assert run.wait() == (3, f"{min(19, os.nice(0) + 10)}\n")


def test_a_background_run_past_its_deadline_is_stopped():
    run = BackgroundRun([sys.executable, "-c", "import time; print('started', flush=True); time.sleep(120)"], "test-stop")
    run.start(seconds=2)
    assert run.wait() == (None, "started\n")
    assert run.process.poll() is not None


def overrun_message(run: BackgroundRun) -> str:
    limit = "CI's time limit" if CI_DEADLINE else f"{GATE_MINUTES:.0f} minutes"
    running = ", ".join(run.stopped_running) or "none (it was between jobs)"
    return (f"The default workflow was stopped after {run.seconds:.0f} s, before it would overrun {limit}, "
            f"with these jobs still running: {running}.")


def test_a_gate_run_stopped_at_its_deadline_names_the_jobs_still_running(tmp_path):
    log = tmp_path / "log"
    log.write_text("[Tue Dec  1 10:00:00 2026]\nrule train:\n    jobid: 7\n    wildcards: twin=nope_seed0\n"
                   "[Tue Dec  1 10:00:00 2026]\nlocalrule metrics:\n    jobid: 8\n"
                   "[Tue Dec  1 10:00:01 2026]\nFinished jobid: 8 (Rule: metrics)\n")
    script = f"import pathlib, sys, time; sys.stdout.write(pathlib.Path({str(log)!r}).read_text()); sys.stdout.flush(); time.sleep(120)"
    run = BackgroundRun([sys.executable, "-c", script], "test-overrun")
    run.start(seconds=2)
    assert run.wait()[0] is None
    message = overrun_message(run)
    assert message.endswith("with these jobs still running: train (twin=nope_seed0).") and message.count(". ") == 0


def test_the_gate_has_until_shortly_before_ci_is_stopped(monkeypatch):
    import conftest

    monkeypatch.setattr(conftest, "CI_DEADLINE", str(time.time() + 3600))
    assert 3600 - conftest.GATE_RESERVE_S - 5 < conftest.gate_seconds() <= 3600 - conftest.GATE_RESERVE_S
    monkeypatch.setattr(conftest, "CI_DEADLINE", None)
    assert conftest.gate_seconds() == conftest.GATE_MINUTES * 60


@pytest.mark.skipif(not GATE, reason="the verdict gate runs the default workflow (20 to 40 minutes on 2 cores, by CPU: docs/performance.md): "
                    "set CI=true or BEHIND_ROPE_VERDICT_GATE=1")
def test_the_default_workflow_gives_the_expected_verdicts():
    """`snakemake --cores all` in this checkout, as ./run.sh runs it (incremental if results/ is up to date).

    The run started when the tests were collected (conftest.BackgroundRun); this test comes last and waits for it.
    """
    returncode, output = DEFAULT_RUN.wait()
    assert returncode is not None, overrun_message(DEFAULT_RUN) + f"\n{output}"
    assert returncode == 0, f"the default workflow failed:\n{output}"
    if DEFAULT_RUN.cache is not None:  # a finished run, whatever its verdicts: the next CI run starts from it
        gate_cache.store(ROOT, DEFAULT_RUN.cache)
    claims = json.loads((ROOT / "results" / "claims.json").read_text())
    problems = compare(claims, json.loads(EXPECTED.read_text()))
    problems += compare_with_record(claims, read_rows((ROOT / "config" / "registrations.yaml").read_text()), "default")
    assert problems == [], "the verdict gate fails:\n" + "\n".join(problems)
    # run.sh and test.sh ask for this much free disk before a default run (envs/disk.sh).
    written = disk_gb(ROOT / "results") - DEFAULT_RUN.results_gb_before
    asked = int(re.search(r"DEFAULT_RUN_GB=(\d+)", (ROOT / "envs" / "disk.sh").read_text()).group(1))
    assert written <= asked, f"the default run wrote {written:.1f} GB into results/, more than envs/disk.sh asks for"


def planned_rules(workdir) -> set[str]:
    """The rules of the jobs that a dry run at the smoke scale would run in ``workdir``."""
    plan = snakemake(workdir, "--configfile", "config/smoke.yaml", "--dry-run")
    return set(re.findall(r"^(?:local)?rule (\w+):$", plan.stdout, flags=re.MULTILINE))


def test_a_checkout_started_from_the_gate_cache_reruns_the_jobs_whose_code_changed(smoke_run, tmp_path, monkeypatch):
    """The cache lays a finished run into a fresh checkout; Snakemake's triggers decide what reruns there."""
    monkeypatch.setenv("BEHIND_ROPE_CACHE", str(tmp_path / "cache"))
    cached = gate_cache.entry(ROOT)
    gate_cache.store(smoke_run, cached)
    clone = copy_workflow(tmp_path / "clone")
    for path in clone.rglob("*"):  # a clone's files are newer than every output in the cache
        os.utime(path)
    assert gate_cache.restore(clone, cached)
    # Figure scripts are rerun when they are newer than their figures (a fresh clone's are): seconds each.
    assert planned_rules(clone) - FIGURE_RULES <= {"paper", "all"}
    metrics = clone / "src" / "behind_rope" / "maths" / "metrics.py"  # the scored quantities of every claim
    metrics.write_text(metrics.read_text() + "\nSCORED_QUANTITIES_EDITED = True\n")
    rerun = planned_rules(clone)
    assert {"metrics", "claims", "position_claims", "paper_inputs", "paper"} <= rerun
    assert not rerun & {"train", "scores", "simulate", "fetch_pypi_package", "cache_llm"}  # nothing upstream of it
    # A lock or CPU of another kind finds no entry: a cold run.
    assert not gate_cache.restore(copy_workflow(tmp_path / "other"), cached.with_name("another-key"))


def test_the_gate_cache_lays_a_run_into_an_empty_results_folder_and_never_over_one_with_results(tmp_path, monkeypatch):
    monkeypatch.setenv("BEHIND_ROPE_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    (run / "results" / "logs").mkdir(parents=True)
    (run / "results" / "claims.json").write_text("{}")
    (run / "results" / "logs" / "claims.log").write_text("log")
    (run / ".snakemake" / "metadata").mkdir(parents=True)
    cached = tmp_path / "cache" / "gate" / "key"
    gate_cache.store(run, cached)
    empty, full = tmp_path / "empty", tmp_path / "full"
    (empty / "results").mkdir(parents=True)
    (full / "results").mkdir(parents=True)
    (full / "results" / "mine.json").write_text("{}")
    assert gate_cache.restore(empty, cached) and not gate_cache.restore(full, cached)
    assert (empty / "results" / "claims.json").stat().st_ino == (run / "results" / "claims.json").stat().st_ino
    # A log is written into, not replaced, by the next run: the cache keeps a copy of its own.
    assert (empty / "results" / "logs" / "claims.log").stat().st_ino != (cached / "results" / "logs" / "claims.log").stat().st_ino
    assert sorted(path.name for path in full.rglob("*")) == ["mine.json", "results"]
