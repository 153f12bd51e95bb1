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
from scheduler import watched_run  # noqa: E402

from conftest import copy_workflow  # noqa: E402
from results_doc import update  # noqa: E402

SETTINGS = {"cold starts (warm_start: false)": ["--config", "warm_start=False"], "warm starts (the default)": []}
# What a result records about the run rather than the science: times, memory, where it ran.
RUN_KEYS = {"tokens_per_second", "train_seconds", "peak_rss_mb", "seconds", "wall_seconds", "peak_memory_mb",
            "criterion_commit", "elapsed_s"}


def science(value):
    """``value`` (parsed JSON) without what records the run rather than the science."""
    if isinstance(value, dict):
        return {key: science(item) for key, item in value.items() if key not in RUN_KEYS}
    if isinstance(value, list):
        return [science(item) for item in value]
    return value


def differences(first: Path, second: Path) -> tuple[int, list[str]]:
    """(files compared, those that differ) between the result files of two runs."""
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
            if science(json.loads(path.read_text())) != science(json.loads(other.read_text())):
                differ.append(str(relative))
        elif path.suffix == ".npz":
            with np.load(path) as a, np.load(other) as b:
                if set(a.files) != set(b.files) or any(
                        not np.array_equal(a[name], b[name], equal_nan=a[name].dtype.kind == "f") for name in a.files
                        if a[name].dtype.kind not in "US"):
                    differ.append(str(relative))
        elif path.read_bytes() != other.read_bytes():
            differ.append(str(relative))
    return compared, differ


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
    runs: dict[str, list[dict]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as scratch:
        kept = {}
        for round_ in range(args.repeats):
            for name in names[round_ % 2:] + names[: round_ % 2]:
                work = copy_workflow(Path(scratch) / f"{round_}-{names.index(name)}")
                command = [sys.executable, "-m", "snakemake", "--cores", "all", *SETTINGS[name], "--configfile",
                           args.config]
                runs[name].append(watched_run(command, work))
                kept[name] = work
                print(name, runs[name][-1], flush=True)
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
