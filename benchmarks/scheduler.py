"""Snakemake's own cost: its scheduler settings side by side in one run.

Snakemake's default scheduler solves an integer program (CBC, through PuLP) each time jobs can
start, and its default job-rate limit (`--max-jobs-per-timespan 100/1s`) also wakes it every second,
when it re-checks the inputs and parameters of every waiting job.  On a 2-core laptop every CPU
second Snakemake spends is taken from the jobs.  This script runs the same cold DAG (default: the
smoke scale, which has as many jobs as the default scale) once per setting, each on its own fresh
copy, rotating which goes first over ``--repeats`` rounds, and prints per setting: the wall time,
the CPU time of everything the run started, and the CPU time of the Snakemake process itself
(polled; its solver runs are child processes, so they show in the total, not there).  The jobs do
the same work under every setting, so the differences in CPU time are what Snakemake costs.

    python benchmarks/scheduler.py                       # smoke scale, 1 round
    python benchmarks/scheduler.py --config config/config.yaml --repeats 2
    python benchmarks/scheduler.py --update-docs         # also rewrite its table in docs/results.md
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import copy_workflow  # noqa: E402
from results_doc import update  # noqa: E402

# Each on top of workflow/profiles/default/, which a plain `snakemake` reads (the middle one is it).
SETTINGS = {
    "ILP, re-checked every second (Snakemake's default)": ["--max-jobs-per-timespan", "100/1s"],
    "ILP, re-checked every 10 s (profiles/default)": [],
    "greedy, re-checked every 10 s": ["--scheduler", "greedy"],
}


def watched_run(command, cwd, env=None) -> dict:
    """Run a Snakemake command: wall seconds, CPU seconds of everything it started (user and system, and
    the system part alone) and CPU seconds of the Snakemake process itself."""
    with tempfile.TemporaryFile("w+") as log:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # Its output goes to a file: a pipe nobody reads would fill up and stop Snakemake.
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
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
            raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{log.read()[-3000:]}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = after.ru_stime - before.ru_stime
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + system, "system_cpu_s": system,
            "snakemake_cpu_s": own}


def side_by_side(settings: dict[str, list[str]], config: str, repeats: int, scratch: Path, keep: bool = False):
    """{setting: its cold runs} of the DAG, each a :func:`watched_run` on a fresh copy of the workflow under
    ``scratch``, rotating which setting goes first over ``repeats`` rounds; and, with ``keep``, {setting:
    the copy of its last run} (without, each copy is removed after its run)."""
    names = list(settings)
    runs: dict[str, list[dict]] = {name: [] for name in names}
    kept: dict[str, Path] = {}
    for round_ in range(repeats):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            if name in kept:
                shutil.rmtree(kept.pop(name))
            work = copy_workflow(scratch / f"{round_}-{names.index(name)}")
            command = [sys.executable, "-m", "snakemake", "--cores", "all", *settings[name], "--configfile", config]
            runs[name].append(watched_run(command, work))
            print(name, runs[name][-1], flush=True)
            if keep:
                kept[name] = work
            else:
                shutil.rmtree(work)
    return runs, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/smoke.yaml", help="the config file of the DAG to run")
    parser.add_argument("--repeats", type=int, default=1, help="rounds, each setting once per round")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the table of docs/results.md")
    args = parser.parse_args()
    names = list(SETTINGS)
    with tempfile.TemporaryDirectory() as scratch:
        runs, _ = side_by_side(SETTINGS, args.config, args.repeats, Path(scratch))
    best = {name: min(results, key=lambda r: r["cpu_s"]) for name, results in runs.items()}
    baseline = best[names[0]]
    rows = ["| setting | wall s | CPU s, whole run | CPU s, Snakemake itself | Snakemake's CPU / the default's |",
            "|---|---|---|---|---|"]
    rows += [f"| {name} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['snakemake_cpu_s']:.1f} | "
             f"{r['snakemake_cpu_s'] / baseline['snakemake_cpu_s']:.2f} |" for name, r in best.items()]
    note = (f"_Measured by `python benchmarks/scheduler.py --update-docs`: {args.config}, cold, {psutil.cpu_count()} "
            f"cores, best of {args.repeats} by CPU time._")
    print("", note, *rows, sep="\n")
    if args.update_docs:
        update("scheduler", note + "\n\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
