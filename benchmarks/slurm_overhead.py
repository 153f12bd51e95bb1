"""The cost of the SLURM route: the smoke DAG run locally and through a local SLURM cluster, side by side.

    python -m benchmarks.slurm_overhead                  # print the table
    python -m benchmarks.slurm_overhead --update-docs    # also refresh the SLURM table of docs/cluster.md

The three runs start cold, on fresh copies of the workflow, in this order: local; through SLURM with
every job queued (``submit_host: false`` in every resource group); through SLURM as configured, where
the groups with ``submit_host: true`` (downloads, metrics, figures, the PDF) run on the submit host.
SLURM is the cluster of tests/cluster/slurm_up.sh, with the test profile: status checks from 2 s
after a submission.  Needs root and Debian's apt, like the test.  The downloads are cached by pip, so
every run fetches at the same speed.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import yaml

from behind_rope.pipeline.workspace import snakemake_environment
from benchmarks.results_doc import CLUSTER, update
from benchmarks.workspace import copy_workflow
from tests.cluster import local_cluster

ROOT = Path(__file__).resolve().parents[1]

SMOKE = ("--configfile", "config/smoke.yaml")


def run_local(workdir: Path) -> float:
    started = time.perf_counter()
    done = local_cluster.run_bounded([sys.executable, "-m", "snakemake", "--cores", "2", *SMOKE], 1500, cwd=workdir,
                                     env=snakemake_environment(workdir))
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return time.perf_counter() - started


def run_on_slurm(workdir: Path, env: dict[str, str], queue_every_job: bool) -> tuple[float, int, int]:
    """Seconds, jobs submitted to SLURM, and jobs run on the submit host."""
    configs = [*SMOKE, str(ROOT / "tests" / "cluster" / "site.yaml")]
    if queue_every_job:
        groups = yaml.safe_load((workdir / "config" / "config.yaml").read_text())["resources"]
        (workdir / "queue_every_job.yaml").write_text(
            yaml.safe_dump({"resources": {group: {"submit_host": False} for group in groups}}))
        configs.append("queue_every_job.yaml")
    plan = local_cluster.run_bounded([sys.executable, "-m", "snakemake", "--dry-run", "--configfile", *configs[1:]], 300,
                                     cwd=workdir, env=snakemake_environment(workdir))
    total = int(re.search(r"^total\s+(\d+)$", plan.stdout, flags=re.MULTILINE)[1])
    started = time.perf_counter()
    done = local_cluster.snakemake_on_slurm(workdir, env, *configs)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    submitted = len(re.findall(r"submitted with SLURM jobid", done.stdout + done.stderr))
    return time.perf_counter() - started, submitted, total - submitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the SLURM table of docs/cluster.md")
    args = parser.parse_args()
    env = local_cluster.environment()
    with tempfile.TemporaryDirectory() as scratch:
        local_seconds = run_local(copy_workflow(Path(scratch) / "local"))
        print(f"local: {local_seconds:.0f} s")
        started = time.perf_counter()
        try:
            client = local_cluster.start(env)
            up_seconds = time.perf_counter() - started
            queued_seconds, queued_jobs, _ = run_on_slurm(copy_workflow(Path(scratch) / "queued"), client, True)
            print(f"SLURM, every job queued: {queued_seconds:.0f} s")
            slurm_seconds, jobs, on_host = run_on_slurm(copy_workflow(Path(scratch) / "slurm"), client, False)
        finally:
            stopped = time.perf_counter()
            local_cluster.stop(env)
            down_seconds = time.perf_counter() - stopped
    per_job = (queued_seconds - local_seconds) / queued_jobs
    rows = [
        ("smoke DAG, local (`--cores 2`)", f"{local_seconds:.0f} s"),
        (f"smoke DAG through SLURM, every job queued ({queued_jobs} jobs, status checks from 2 s)",
         f"{queued_seconds:.0f} s ({queued_seconds / local_seconds:.1f}x local)"),
        (f"smoke DAG through SLURM as configured ({jobs} jobs queued, {on_host} on the submit host)",
         f"{slurm_seconds:.0f} s ({slurm_seconds / local_seconds:.1f}x local)"),
        ("as configured / every job queued", f"{slurm_seconds / queued_seconds:.2f}"),
        ("overhead per queued job (every job queued, against local)", f"{per_job:.1f} s"),
        ("starting / stopping the local cluster (packages installed)", f"{up_seconds:.0f} s / {down_seconds:.0f} s"),
    ]
    table = "\n".join(["| measurement | value |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)])
    print(table)
    if args.update_docs:
        update("slurm", "_Measured by `python -m benchmarks.slurm_overhead --update-docs` on 2 cores._\n\n" + table, CLUSTER)


if __name__ == "__main__":
    main()
