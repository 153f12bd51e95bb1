"""Warm starts against cold starts: the same cold DAG side by side in one run, and the same results.

Each run has a fresh copy of the workflow; one starts its steps warm (``warm_start: true``, the default:
forks of one process that has imported torch and transformers, behind_rope.pipeline.warm_start), the
other cold (``--config warm_start=False``: each step imports them itself).  The script prints, per
setting, the wall time and the CPU time of everything the run started, their ratios, and how many
steps started warm; then it compares every result file of the two runs (arrays and JSON, logs and
benchmark files aside) and fails if one differs in any bit.

    python benchmarks/warm_start.py                        # smoke scale, 1 round
    python benchmarks/warm_start.py --config config/config.yaml
    python benchmarks/warm_start.py --repeats 2 --update-docs   # also rewrite its table in docs/results.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from scheduler import side_by_side  # noqa: E402

from conftest import arrays, comparable  # noqa: E402
from results_doc import update  # noqa: E402

SETTINGS = {"cold starts (warm_start: false)": ["--config", "warm_start=False"], "warm starts (the default)": []}
def differences(first: Path, second: Path) -> tuple[int, list[str]]:
    """(files compared, those that differ in any bit) between the result files of two runs."""
    compared, differ = 0, []
    for path in sorted(first.glob("results/**/*")):
        relative = path.relative_to(first)
        if path.suffix not in {".json", ".npz", ".npy", ".safetensors"} or relative.parts[1] in {"benchmarks", "logs"}:
            continue
        other = second / relative
        compared += 1
        if not other.exists():
            differ.append(f"{relative} (missing)")
        elif path.suffix == ".json":
            if comparable(json.loads(path.read_text())) != comparable(json.loads(other.read_text())):
                differ.append(str(relative))
        elif path.suffix == ".safetensors":
            if path.read_bytes() != other.read_bytes():
                differ.append(str(relative))
        elif not all(same_array(want, got) for _, want, got in arrays(path, other)):
            differ.append(str(relative))
    return compared, differ


def same_array(want: np.ndarray, got: np.ndarray) -> bool:
    """Equal in every bit; a score file's JSON metadata (a string) without its timings."""
    if want.dtype.kind in "US":
        return comparable(json.loads(str(want))) == comparable(json.loads(str(got)))
    return np.array_equal(want, got, equal_nan=want.dtype.kind == "f")


def warm_steps(workdir: Path) -> tuple[int, int]:
    """(steps that started warm, steps the server refused) in a finished run, from the server's log."""
    log = workdir / ".snakemake" / "warm_start.log"
    lines = log.read_text().splitlines() if log.is_file() else []
    return sum(line.startswith("warm: ") for line in lines), sum(line.startswith("refused: ") for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/smoke.yaml", help="the config file of the DAG to run")
    parser.add_argument("--repeats", type=int, default=1, help="rounds, each setting once per round")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the table of docs/results.md")
    args = parser.parse_args()
    names = list(SETTINGS)
    with tempfile.TemporaryDirectory() as scratch:
        runs, kept = side_by_side(SETTINGS, args.config, args.repeats, Path(scratch), keep=True)
        compared, differ = differences(kept[names[0]], kept[names[1]])
        warm, refused = warm_steps(kept[names[1]])
    best = {name: min(results, key=lambda r: r["cpu_s"]) for name, results in runs.items()}
    cold = best[names[0]]
    rows = ["| setting | wall s | CPU s, whole run | wall / cold's | CPU / cold's |", "|---|---|---|---|---|"]
    rows += [f"| {name} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['wall_s'] / cold['wall_s']:.2f} | "
             f"{r['cpu_s'] / cold['cpu_s']:.2f} |" for name, r in best.items()]
    note = (f"_Measured by `python benchmarks/warm_start.py --update-docs`: {args.config}, cold, {psutil.cpu_count()} "
            f"cores, best of {args.repeats} by CPU time. Result files compared: {compared}, of which differ in any "
            f"bit: {len(differ)}. Steps of the warm run that started warm: {warm}; that its server refused: {refused}._")
    print("", note, *rows, sep="\n")
    if differ:
        raise SystemExit("warm and cold runs differ:\n" + "\n".join(differ))
    if args.update_docs:
        update("warm_start", note + "\n\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
