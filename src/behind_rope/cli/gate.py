"""The verdict gate's command: a run's claims against tests/expected_verdicts.json (behind_rope.claims.gate).

Apart from the claims' own steps, so that an edit of the gate reruns no claim."""

from __future__ import annotations

from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import arg, step


@step("verdict-gate", "compare results/claims.json with the verdicts expected at the default scale (exit 1 on a difference)",
      arg("--claims", default="results/claims.json"), arg("--expected", default="tests/expected_verdicts.json"),
      arg("--write", action="store_true", help="write the expected file from the claims instead (a deliberate change: "
          "add a row to config/criteria_history.yaml in the same commit)"),
      arg("--run-settings", default="results/paper/settings.json",
          help="the run's settings, which name its scale (written beside the claims by the same run)"))
def verdict_gate(args) -> None:
    from behind_rope.claims.gate import compare, expected_from

    claims = atomic.read_json(args.claims)
    expected = None if args.write else atomic.read_json(args.expected)
    _require_scale(Path(args.run_settings), "default" if args.write else expected["scale"],
                   f"write {args.expected} from its claims" if args.write else f"compare its claims with {args.expected}")
    if args.write:
        atomic.write_json(args.expected, expected_from(claims, "default"))
        print(f"wrote {args.expected}: {len(claims)} claims")
        return
    problems = compare(claims, expected)
    if problems:
        print(f"The verdict gate FAILS: {len(problems)} difference(s) from {args.expected}:", *problems, sep="\n  ")
        raise SystemExit(1)
    print(f"The verdict gate passes: every verdict and key value of {args.claims} is as {args.expected} expects.")


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
