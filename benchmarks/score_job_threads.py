"""Whole LLM score jobs, start-up included: one 2-thread job at a time against two 1-thread jobs at a time.

`benchmarks/threads.py` times the score capture's loop alone, where a second thread gains 1.8x and two
1-thread runs side by side gain little more.  A job holds its threads from start to end, though, and a
score job spends its first seconds importing torch and transformers and loading the model on one core:
for the many short runs (the `first` token set and its variants) that is most of the job, and a job that
holds two threads leaves the second core waiting.  This script runs the LLM score jobs of a kept run both ways, as the `scores` step
runs them (`python -m behind_rope scores`, one process each), and prints the wall and CPU seconds of
each way and how far the arrays of the two ways differ (a different thread count sums floats in
another order, as another CPU does).  On a CPU, `resources.llm` gives each job 1 thread and the local profile
lets as many run at once as the cores and their memory allow.

The runs are split into two halves, measured in the order A B B A (A: one 2-thread job at a time; B: two
1-thread jobs at a time), so that a drift of this shared machine's speed weighs on both ways alike.

    python benchmarks/score_job_threads.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/score_job_threads.py --run DIR --update-docs   # also rewrite its table in docs/results.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def llm_score_runs(run: Path, config: dict) -> list[tuple[str, dict, str]]:
    """(name, settings, tokens file) of every LLM score run the kept run made, its variants included."""
    from behind_rope.experiments.paths import tokens_file
    from behind_rope.experiments.runs import base_model
    from behind_rope.experiments.steps import score_settings

    runs = []
    for path in sorted(run.glob("results/scores/*/*.npz")):
        model, (inputs, mask) = path.parent.name, path.stem.rsplit("_", 1)
        if base_model(model) in config["llm"]["models"]:
            runs.append((f"{model}/{path.stem}", score_settings(config, model, inputs, mask),
                         tokens_file(model, inputs)))
    return runs


def score_job(run: Path, settings: dict, tokens: str, threads: int, output: Path) -> None:
    command = [sys.executable, "-m", "behind_rope", "scores", "--settings", json.dumps(settings), "--tokens", tokens,
               "--threads", str(threads), "--output", str(output)]
    done = subprocess.run(command, cwd=run, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed:\n{done.stderr[-3000:]}")


def timed_jobs(run: Path, runs: list, threads: int, at_once: int, scratch: Path) -> tuple[float, float]:
    """(wall s, CPU s) of ``runs`` as jobs of ``threads`` threads, ``at_once`` at a time, in the given order."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with ThreadPoolExecutor(at_once) as pool:
        for done in [pool.submit(score_job, run, settings, tokens, threads, scratch / f"{name.replace('/', '_')}.npz")
                     for name, settings, tokens in runs]:
            done.result()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.perf_counter() - started,
            after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def largest_difference(first: Path, second: Path) -> tuple[float, str]:
    """The largest difference between the float arrays of two ways' score files, relative to the array's
    largest magnitude, and where it is."""
    worst, where = 0.0, ""
    for path in sorted(first.glob("*.npz")):
        with np.load(path) as a, np.load(second / path.name) as b:
            for key in a.files:
                if a[key].dtype.kind == "f":
                    scale = np.nanmax(np.abs(a[key])) or 1.0
                    gap = float(np.nanmax(np.abs(a[key] - b[key]))) / scale
                    if gap > worst:
                        worst, where = gap, f"{path.stem} {key}"
    return worst, where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished default run, with its results/")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    from behind_rope.config import load

    config = load()
    runs = llm_score_runs(args.run, config)
    if not runs:
        raise SystemExit(f"Error: {args.run}/results/scores holds no LLM score run; give --run a finished default run.")
    halves = [runs[0::2], runs[1::2]]
    ways = {"A": (2, 1), "B": (1, 2)}  # threads per job, jobs at a time
    totals = {way: [0.0, 0.0] for way in ways}
    with tempfile.TemporaryDirectory() as scratch:
        folders = {way: Path(scratch, way) for way in ways}
        for folder in folders.values():
            folder.mkdir()
        for half, way in [(0, "A"), (0, "B"), (1, "B"), (1, "A")]:
            wall, cpu = timed_jobs(args.run, halves[half], *ways[way], folders[way])
            totals[way][0] += wall
            totals[way][1] += cpu
            print(f"half {half + 1}, way {way}: {wall:.0f} s wall, {cpu:.0f} CPU s", flush=True)
        worst, where = largest_difference(folders["A"], folders["B"])
    (wall_a, cpu_a), (wall_b, cpu_b) = totals["A"], totals["B"]
    default = {threads: " (the default: resources.llm)" if threads == config["resources"]["llm"]["threads"] else ""
               for threads in (1, 2)}
    lines = ["| the LLM score jobs of the run, start-up included | wall s | CPU s | wall / one 2-thread job at a time |",
             "|---|---|---|---|",
             f"| one 2-thread job at a time{default[2]} | {wall_a:.0f} | {cpu_a:.0f} | 1.00 |",
             f"| two 1-thread jobs at a time{default[1]} | {wall_b:.0f} | {cpu_b:.0f} | {wall_b / wall_a:.2f} |"]
    note = (f"{len(runs)} jobs. Largest difference between the two ways' arrays, relative to the array's largest "
            f"magnitude: {worst:.1e} ({where}).")
    print("\n".join(lines) + "\n\n" + note)
    if args.update_docs:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from results_doc import update

        update("score_job_threads", f"_Measured by `python benchmarks/score_job_threads.py --update-docs` on "
                                    f"{args.run.name}'s models and inputs, in the order A B B A over two halves of "
                                    f"the jobs._\n\n" + "\n".join(lines) + "\n\n" + note)


if __name__ == "__main__":
    main()
