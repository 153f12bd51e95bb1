"""The record of registrations that have been run (config/registrations.yaml): append-only, one row per
registration and scale, and the verdict gate's hold of each run to its row."""

import copy
import itertools
import subprocess

import pytest
import yaml

from behind_rope.claims.record import (
    RecordError,
    append,
    check_append_only,
    compare_with_record,
    read_rows,
    run_row,
)
from conftest import ROOT

REGISTRATION = {"hash": "0123456789abcdef", "commit": "abcdef123456", "date": "2026-12-07"}
DATA = {"arm": "confirmatory", "seed_rule": "drawn", "seed": 7, "llm_text": {"corpus": "brown", "sha256": "41"}}
CLAIMS = {"C1": {"passed": True, "registration": REGISTRATION, "data": DATA},
          "C3": {"passed": False, "outcome": "UNDECIDED", "registration": REGISTRATION, "data": DATA}}


def row(claims=CLAIMS):
    return run_row(claims, "default", "a test host", "fedcba987654", date="2026-12-07")


def test_a_row_is_appended_once_and_a_disagreeing_run_is_reported_never_written(tmp_path):
    record = tmp_path / "registrations.yaml"
    record.write_text("# the record\n")
    assert append(record, row()) is True
    written = record.read_text()
    assert read_rows(written)[0]["outcomes"] == {"C1": "PASS", "C3": "UNDECIDED"}
    assert append(record, row()) is False and record.read_text() == written  # the same outcomes: nothing to add
    flipped = copy.deepcopy(CLAIMS)
    flipped["C1"]["passed"] = False
    with pytest.raises(RecordError, match="C1: the record of registration 0123456789abcdef has PASS, this run FAIL"):
        append(record, row(flipped))
    assert record.read_text() == written
    other = row() | {"registration": "fedcba9876543210"}
    assert append(record, other) is True and [r["registration"] for r in read_rows(record.read_text())] == [
        "0123456789abcdef", "fedcba9876543210"]


def test_the_record_refuses_an_edited_or_removed_row():
    rows = [row(), row() | {"registration": "fedcba9876543210"}]
    assert check_append_only(rows, rows + [row() | {"registration": "1111111111111111"}]) == []
    edited = copy.deepcopy(rows)
    edited[0]["outcomes"]["C3"] = "PASS"
    assert check_append_only(rows, edited) == ["row 1 (registration 0123456789abcdef) was edited"]
    assert check_append_only(rows, rows[:1]) == ["row 2 (registration fedcba9876543210) was removed"]


def test_every_commit_of_the_record_only_added_rows():
    """Each committed version of config/registrations.yaml holds every row of the version before it, unchanged, and
    so does the working tree."""
    path = "config/registrations.yaml"
    try:
        commits = subprocess.run(["git", "log", "--format=%H", "--reverse", "--", path], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history to read")
    versions = [subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout for commit in commits]
    versions.append((ROOT / path).read_text())
    for before, after in itertools.pairwise(versions):
        assert check_append_only(read_rows(before), read_rows(after)) == []


def test_the_gate_holds_a_run_to_its_registrations_row():
    rows = [row()]
    assert compare_with_record(CLAIMS, rows, "default") == []
    assert "has no row at the 'paper' scale" in compare_with_record(CLAIMS, rows, "paper")[0]
    flipped = copy.deepcopy(CLAIMS)
    flipped["C3"]["outcome"] = "FAIL"
    assert compare_with_record(flipped, rows, "default") == [
        "C3: the record of registration 0123456789abcdef has UNDECIDED, this run FAIL"]
    assert yaml.safe_load(yaml.safe_dump(rows)) == rows  # the row is plain YAML


def test_a_run_names_each_claims_data_and_writes_its_row(smoke_run):
    """results/claims.json says what each claim was decided on (the arm, how the seeds were drawn, the seeds, the
    corpora by their pins), and results/registration.yaml is the run's row for the record."""
    import json

    from behind_rope.config import load

    claims = json.loads((smoke_run / "results" / "claims.json").read_text())
    config = load("config/smoke.yaml", root=smoke_run)
    brown = config["data"]["corpora"]["brown"]
    for name, claim in claims.items():
        assert claim["data"]["arm"] == "confirmatory" and claim["data"]["seed"] == config["seed"], name
        assert "registration" in claim["data"]["seed_rule"], name
    assert claims["C5a"]["data"]["llm_text"] == {"corpus": "brown", **{key: brown[key] for key in
                                                 ("source", "package", "version", "sha256")}}
    assert claims["C3"]["data"]["twin_seeds"]["nope_seed1"] == config["training"]["twins"]["nope_seed1"]["seed"]
    assert "llm_text" not in claims["C1"]["data"] and "twin_seeds" not in claims["C5a"]["data"]
    written = yaml.safe_load((smoke_run / "results" / "registration.yaml").read_text())
    assert written["registration"] == claims["C1"]["registration"]["hash"] and written["scale"] == "smoke"
    assert written["outcomes"] == {name: claim["outcome"] for name, claim in claims.items()}
    assert written["data"]["llm_text"]["sha256"] == brown["sha256"] and written["arm"] == "confirmatory"
