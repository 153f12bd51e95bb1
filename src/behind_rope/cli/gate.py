"""The verdict gate's command: a run's claims against tests/expected_verdicts.json (behind_rope.claims.gate) and
against its registration's row in config/registrations.yaml; a run's row, and its appending to that record
(behind_rope.claims.record).

Apart from the claims' own steps, so that an edit of the gate reruns no claim."""

from __future__ import annotations

from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, arg, step


@step("verdict-gate", "compare results/claims.json with the verdicts expected at the default scale (exit 1 on a difference)",
      arg("--claims", default="results/claims.json"), arg("--expected", default="tests/expected_verdicts.json"),
      arg("--write", action="store_true", help="write the expected file from the claims instead (a deliberate change: "
          "add a row to config/criteria_history.yaml in the same commit)"),
      arg("--run-settings", default="results/paper/settings.json",
          help="the run's settings, which name its scale (written beside the claims by the same run)"),
      arg("--record", default="config/registrations.yaml", help="the record of registrations that have been run"))
def verdict_gate(args) -> None:
    from behind_rope.claims.gate import compare, expected_from
    from behind_rope.claims.record import compare_with_record, read_rows

    claims = atomic.read_json(args.claims)
    expected = None if args.write else atomic.read_json(args.expected)
    _require_scale(Path(args.run_settings), "default" if args.write else expected["scale"],
                   f"write {args.expected} from its claims" if args.write else f"compare its claims with {args.expected}")
    if args.write:
        atomic.write_json(args.expected, expected_from(claims, "default"))
        print(f"wrote {args.expected}: {len(claims)} claims")
        return
    problems = compare(claims, expected) + compare_with_record(claims, read_rows(Path(args.record).read_text()), "default")
    if problems:
        print(f"The verdict gate FAILS: {len(problems)} difference(s) from {args.expected}:", *problems, sep="\n  ")
        raise SystemExit(1)
    print(f"The verdict gate passes: every verdict and key value of {args.claims} is as {args.expected} expects, "
          f"and every outcome as its registration's row in {args.record}.")


@step("registration-row", "write a run's row for the record of registrations (config/registrations.yaml)",
      OUTPUT, arg("--claims", required=True), arg("--scale", required=True))
def registration_row(args) -> None:
    import yaml

    from behind_rope.claims.record import host_description, run_row
    from behind_rope.paper.document import git_commit

    row = run_row(atomic.read_json(args.claims), args.scale, host_description(), git_commit(Path.cwd()))
    atomic.write_text(args.output, yaml.safe_dump(row, sort_keys=False, allow_unicode=True, width=120))
    print(f"registration {row['registration']} ({row['arm']}, {args.scale} scale) on {row['run']['host']}")


@step("record-registration", "append a run's row (results/registration.yaml) to the record config/registrations.yaml, "
      "which is never edited: a row that disagrees with its registration's is reported, not written",
      arg("--row", default="results/registration.yaml"), arg("--record", default="config/registrations.yaml"))
def record_registration(args) -> None:
    import yaml

    from behind_rope.claims.record import RecordError, append

    row = yaml.safe_load(Path(args.row).read_text())
    try:
        added = append(Path(args.record), row)
    except RecordError as error:
        raise SystemExit(f"Error: {error}") from None
    print(f"{'appended to' if added else 'already in'} {args.record}: registration {row['registration']} "
          f"({row['arm']}, {row['scale']} scale), {len(row['outcomes'])} outcomes")


def _require_scale(run_settings: Path, scale: str, action: str) -> None:
    """Stop unless the run's settings name ``scale``: the gate holds one scale's verdicts, and a smoke or
    paper-scale run differs from them by design, not by a regression."""
    if not run_settings.is_file():
        raise SystemExit(f"Error: {run_settings} is missing, so the run's scale is unknown; run `snakemake "
                         f"{run_settings}` (or the whole workflow) before you {action}.")
    found = atomic.read_json(run_settings).get("scale_name")
    if found != scale:
        raise SystemExit(f"Error: {run_settings} says this run is at the {found!r} scale, and the verdict gate holds "
                         f"the {scale!r} scale's verdicts: a run at another scale differs by design, so the gate "
                         f"does not {action}. Run the workflow at the {scale!r} scale first (./run.sh).")
