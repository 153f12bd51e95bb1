"""The cost of the SLURM route: the smoke DAG run locally and through a local SLURM cluster, side by side.

    python benchmarks/slurm_overhead.py                  # print the table
    python benchmarks/slurm_overhead.py --update-docs    # also refresh the SLURM table of docs/results.md

Both runs start cold, on fresh copies of the workflow, in this order: local, then SLURM (the
cluster of tests/cluster/slurm_up.sh, with the test profile: status checks from 2 s after a
submission).  Needs root and Debian's apt, like the test.  The downloads are cached by pip, so
both runs fetch at the same speed.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from cluster import local_cluster  # noqa: E402
from conftest import copy_workflow  # noqa: E402
from results_doc import update  # noqa: E402

SMOKE = ("--configfile", "config/smoke.yaml")


def run_local(workdir: Path) -> float:
    started = time.perf_counter()
    done = local_cluster.run_bounded([sys.executable, "-m", "snakemake", "--cores", "2", *SMOKE], 1500, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return time.perf_counter() - started


def run_on_slurm(workdir: Path, env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = local_cluster.snakemake_on_slurm(workdir, env, *SMOKE, str(ROOT / "tests" / "cluster" / "site.yaml"))
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return time.perf_counter() - started, len(re.findall(r"submitted with SLURM jobid", done.stdout + done.stderr))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the SLURM table of docs/results.md")
    args = parser.parse_args()
    env = local_cluster.environment()
    with tempfile.TemporaryDirectory() as scratch:
        local_seconds = run_local(copy_workflow(Path(scratch) / "local"))
        print(f"local: {local_seconds:.0f} s")
        started = time.perf_counter()
        try:
            client = local_cluster.start(env)
            up_seconds = time.perf_counter() - started
            slurm_seconds, jobs = run_on_slurm(copy_workflow(Path(scratch) / "slurm"), client)
        finally:
            stopped = time.perf_counter()
            local_cluster.stop(env)
            down_seconds = time.perf_counter() - stopped
    per_job = (slurm_seconds - local_seconds) / jobs
    rows = [
        ("smoke DAG, local (`--cores 2`)", f"{local_seconds:.0f} s"),
        (f"smoke DAG through SLURM ({jobs} jobs, status checks from 2 s)", f"{slurm_seconds:.0f} s"),
        ("SLURM / local", f"{slurm_seconds / local_seconds:.1f}x"),
        ("overhead per job", f"{per_job:.1f} s"),
        ("starting / stopping the local cluster (packages installed)", f"{up_seconds:.0f} s / {down_seconds:.0f} s"),
    ]
    table = "\n".join(["| measurement | value |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)])
    print(table)
    if args.update_docs:
        update("slurm", "_Measured by `python benchmarks/slurm_overhead.py --update-docs` on 2 cores._\n\n" + table)


if __name__ == "__main__":
    main()
