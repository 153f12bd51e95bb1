"""Snakemake's own cost: the greedy job scheduler against the ILP one, side by side in one run.

Snakemake's default scheduler solves an integer program (CBC, through PuLP) each time jobs can
start. On a 2-core laptop every CPU second the scheduler spends is taken from the jobs. This script
runs the same cold DAG (default: the smoke scale, which has as many jobs as the default scale) once
per scheduler, each on its own fresh copy, alternating which goes first over ``--repeats`` rounds,
and prints per scheduler: the wall time, the CPU time of everything the run started, and the CPU
time of the Snakemake process itself (polled; its solver runs are child processes, so they show in
the total, not here). The jobs do the same work under both, so the difference in total CPU time is
what the scheduler costs.

    python benchmarks/scheduler.py                       # smoke scale, 1 round
    python benchmarks/scheduler.py --config config/config.yaml --repeats 2
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import copy_workflow  # noqa: E402

SCHEDULERS = ("ilp", "greedy")


def cold_run(scheduler: str, config: str) -> dict:
    """Wall seconds, CPU seconds of the whole run and of the Snakemake process, for one cold run."""
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryFile("w+") as log:
        work = copy_workflow(Path(scratch))
        command = [sys.executable, "-m", "snakemake", "--cores", "all", "--scheduler", scheduler, "--configfile", config]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # Its output goes to a file: a pipe nobody reads would fill up and stop Snakemake.
        process = subprocess.Popen(command, cwd=work, stdout=log, stderr=subprocess.STDOUT, text=True)
        watched, own = psutil.Process(process.pid), 0.0
        while process.poll() is None:
            try:
                times = watched.cpu_times()
                own = times.user + times.system
            except psutil.Error:  # it has just exited
                pass
            time.sleep(0.5)
        wall = time.perf_counter() - start
        if process.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed:\n{log.read()[-3000:]}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"wall_s": wall, "cpu_s": total, "snakemake_cpu_s": own}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/smoke.yaml", help="the config file of the DAG to run")
    parser.add_argument("--repeats", type=int, default=1, help="rounds, each scheduler once per round")
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {name: [] for name in SCHEDULERS}
    for round_ in range(args.repeats):
        for name in SCHEDULERS if round_ % 2 == 0 else reversed(SCHEDULERS):
            runs[name].append(cold_run(name, args.config))
            print(name, runs[name][-1], flush=True)
    best = {name: min(results, key=lambda r: r["cpu_s"]) for name, results in runs.items()}
    print(f"\n{args.config}, cold, {psutil.cpu_count()} cores, best of {args.repeats} by CPU time")
    print("| scheduler | wall s | CPU s, whole run | CPU s, Snakemake itself |")
    print("|---|---|---|---|")
    for name, result in best.items():
        print(f"| {name} | {result['wall_s']:.0f} | {result['cpu_s']:.0f} | {result['snakemake_cpu_s']:.0f} |")
    saved = best["ilp"]["cpu_s"] - best["greedy"]["cpu_s"]
    print(f"greedy / ilp: wall {best['greedy']['wall_s'] / best['ilp']['wall_s']:.2f}, "
          f"CPU {best['greedy']['cpu_s'] / best['ilp']['cpu_s']:.2f} ({saved:+.0f} s of CPU saved)")


if __name__ == "__main__":
    main()
