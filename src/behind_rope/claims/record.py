"""The record of registrations that have been run: config/registrations.yaml, append-only.

A run writes its row (results/registration.yaml: the registration, the arm and the data it drew, each claim's
outcome, the host and the commit that ran it); ``python -m behind_rope record-registration`` appends it to the
committed record.  One row per registration and scale: a registration run again adds nothing where it agrees with
its row, and where it disagrees the difference is reported, never written over the row (a new registration, with
its own row, is the only way to change what a registration decided).  The verdict gate holds every run to its
registration's row (:func:`compare_with_record`); ``check_append_only`` lets a test hold every commit's record to the
rows before it.
"""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

import yaml

from behind_rope.claims.outcome import outcome

RECORD_PATH = "config/registrations.yaml"


class RecordError(RuntimeError):
    """A row that would edit or contradict the record."""


def host_description() -> str:
    """This machine in a few words: its CPU's model and cores, and the vector instructions that set its float
    kernels (AMX, AVX-512, else AVX2)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        pass
    kernels = "AMX" if "amx_bf16" in flags else "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{model}, {os.cpu_count()} cores, {kernels}"


def claims_data(claims: dict) -> dict:
    """What a run's claims were decided on, gathered from each claim's part of it (behind_rope.registration.claim_data)."""
    return {key: value for claim in claims.values() for key, value in claim.get("data", {}).items()}


def run_row(claims: dict, scale: str, host: str, commit: str, date: str | None = None) -> dict:
    """The row of one run: its registration, arm and data, each claim's outcome, and who ran it where."""
    registration = next(iter(claims.values()))["registration"]
    data = claims_data(claims)
    return {"registration": registration["hash"], "scale": scale,
            "registered": {"commit": registration["commit"], "date": registration["date"]},
            "arm": data.pop("arm", "unknown"), "data": data,
            "outcomes": {name: outcome(claim) for name, claim in claims.items()},
            "run": {"commit": commit, "date": date or datetime.date.today().isoformat(), "host": host}}


def read_rows(text: str) -> list[dict]:
    rows = yaml.safe_load(text) or []
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise RecordError(f"{RECORD_PATH} must be a list of rows, one mapping each.")
    return rows


def row_for(rows: list[dict], registration: str, scale: str) -> dict | None:
    return next((row for row in rows if row.get("registration") == registration and row.get("scale") == scale), None)


def disagreements(row: dict, outcomes: dict[str, str]) -> list[str]:
    """Each claim whose outcome differs from the row's, one sentence each."""
    recorded = row.get("outcomes", {})
    return [f"{name}: the record of registration {row['registration']} has {recorded.get(name, 'no outcome')}, "
            f"this run {value}" for name, value in outcomes.items() if recorded.get(name) != value] + [
            f"{name}: the record has {value}, this run has no such claim" for name, value in recorded.items()
            if name not in outcomes]


def append(record: Path, row: dict) -> bool:
    """Append ``row`` to the record file (True), or leave the file as it is where the registration's row agrees
    (False); a row that disagrees with its registration's raises RecordError with the differences."""
    text = record.read_text() if record.is_file() else ""
    existing = row_for(read_rows(text), row["registration"], row["scale"])
    if existing is not None:
        problems = disagreements(existing, row["outcomes"])
        if problems:
            raise RecordError(f"This run of registration {row['registration']} disagrees with its row in {record}, "
                              "which is never edited: " + "; ".join(problems) + ". Report it; a change of criteria "
                              "is a new registration, with a row of its own.")
        return False
    addition = yaml.safe_dump([row], sort_keys=False, allow_unicode=True, width=120)
    record.write_text(text + ("" if not text or text.endswith("\n") else "\n") + addition)
    return True


def check_append_only(before: list[dict], after: list[dict]) -> list[str]:
    """How ``after`` breaks the record ``before`` (empty where it only adds rows at the end): a row edited or
    removed, one sentence each."""
    problems = [f"row {index + 1} (registration {row.get('registration')}) was removed" for index, row in
                enumerate(before) if index >= len(after)]
    problems += [f"row {index + 1} (registration {row.get('registration')}) was edited" for index, row in
                 enumerate(before) if index < len(after) and after[index] != row]
    return problems


def compare_with_record(claims: dict, rows: list[dict], scale: str) -> list[str]:
    """The verdict gate's part of the record: the run's registration has a row at this scale and each claim's
    outcome is the row's (empty: it holds)."""
    registration = next(iter(claims.values()))["registration"]["hash"]
    row = row_for(rows, registration, scale)
    if row is None:
        return [f"registration {registration} has no row at the {scale!r} scale in {RECORD_PATH}: run it, then "
                f"`python -m behind_rope record-registration` appends its row"]
    return disagreements(row, {name: outcome(claim) for name, claim in claims.items()})
