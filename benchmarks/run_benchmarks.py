"""Workflow benchmarks, measured side by side in one run on a scratch copy of the workflow (inside a
clone of the repository, so that the run's claims name the commit of each criterion).

    python benchmarks/run_benchmarks.py                 # print the tables, write results/benchmarks/summary.json
    python benchmarks/run_benchmarks.py --update-docs   # also refresh the tables of docs/results.md
    python benchmarks/run_benchmarks.py --keep DIR      # keep the cold run's copy in DIR (its results, its logs, its
                                                        # processes.jsonl, which benchmarks/less_work.py prices from)

Measures: a cold run of the whole DAG at the default scale (ending with the PDF), with the CPU time
of every job it ran divided by (wall time x cores), this machine's matrix-product speed before and
after it (the CPU under a shared machine can change from day to day), the exact CPU time per step
and of Snakemake itself (every Python process logs its own, benchmarks/process_log), the wall and
sampled CPU time per rule (from the `benchmark:` files, which do not see the steps that started warm) and the run's critical path (from its log,
benchmarks/dag_profile.py); a no-op rerun; rebuilding one figure after its script changed (a
simulation figure and Figure 3); rebuilding the paper after a result changed; the arXiv tarball;
the twins' training throughput and peak memory and the time to dequantise the GGUF models (from the
cold run's own files); and the peak memory of a paper-scale simulation (B = 100,000) run in chunks
against the same run in a single chunk; the disk space the cold run's results/ take.  With
--update-docs it also rewrites docs/results.md's tables of results from the cold run's
results/claims.json (benchmarks/result_tables.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import WORKFLOW_PARTS, copy_workflow, disk_gb  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))
from cpu_floor import single_matmul_rate  # noqa: E402
from dag_profile import critical_path, describe, describe_cpu, parse_log, process_cpu, run_start  # noqa: E402
from result_tables import write_tables  # noqa: E402
from scheduler import watched_run  # noqa: E402
from warm_start import warm_steps  # noqa: E402

from behind_rope.atomic import write_json  # noqa: E402
from results_doc import update  # noqa: E402


def timed(command, cwd) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def rule_times(work: Path) -> dict[str, dict[str, float]]:
    """Per rule, from the `benchmark:` files: jobs, wall seconds and CPU seconds summed over its jobs."""
    totals: dict[str, dict[str, float]] = {}
    for path in (work / "results" / "benchmarks").rglob("*.tsv"):
        relative = path.relative_to(work / "results" / "benchmarks")
        rule = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        with open(path) as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        total = totals.setdefault(rule, {"jobs": 0, "s": 0.0, "cpu_time": 0.0})
        total["jobs"] += 1
        total["s"] += float(row["s"])
        total["cpu_time"] += float(row["cpu_time"] or 0)
    return dict(sorted(totals.items(), key=lambda item: -item[1]["s"]))


def peak_rss_mb(command, cwd) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of a child process, run alone."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter();"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True);"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code, *command], cwd=cwd, check=True, capture_output=True, text=True)
    seconds, megabytes = map(float, out.stdout.split())
    return seconds, megabytes


def training_measurements(work: Path, twin: str) -> dict:
    metrics = json.loads((work / "results" / "training" / twin / "metrics.json").read_text())
    # The training process's own peak (a warm-started step is not among its job's processes, which `benchmark:` sees).
    return {"tokens_per_second": metrics["tokens_per_second"], "train_seconds": metrics["train_seconds"],
            "peak_rss_mb": metrics["peak_rss_mb"], "device": metrics["device"], "dtype": metrics["dtype"]}


def workflow_in_a_clone(destination: Path) -> Path:
    """The workflow as it stands (uncommitted edits included), inside a clone of this repository.

    A run records, per claim, the commit that last changed its criterion, which it reads from git; in
    a bare copy of the workflow each would read "unknown".  The clone shares this repository's objects
    (``--shared``), so it costs the checked-out files only.
    """
    try:
        subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(destination)], check=True,
                       capture_output=True, timeout=120)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"Not a git checkout ({error}): the run's criterion commits will read 'unknown'.", file=sys.stderr)
        return copy_workflow(destination)
    for part in WORKFLOW_PARTS:
        path = destination / part
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    return copy_workflow(destination)


def machine_speed(cores: int) -> dict[int, float]:
    """GFLOP/s of a large matrix product on 1 thread and on every core, the best of three tries each."""
    return {threads: single_matmul_rate(threads) for threads in sorted({1, cores})}


def describe_speed(speed: dict[int, float]) -> str:
    return ", ".join(f"{rate:.0f} GFLOP/s on {threads} thread{'s' * (threads > 1)}" for threads, rate in speed.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the tables of docs/results.md")
    parser.add_argument("--keep", help="keep the cold run's copy of the workflow here")
    args = parser.parse_args()
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "all"]
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as scratch:
        work = workflow_in_a_clone(Path(scratch) / "checkout")
        # The CPU under this machine changes from day to day (an AVX-512 one, or an AVX2 one about half as fast):
        # measured before and after the cold run, the speed says which a cold time comes from.
        speed_before = machine_speed(cores)
        # Every Python process of the cold run logs its exact CPU time (benchmarks/process_log).
        process_log = work / "processes.jsonl"
        hook = os.pathsep.join(filter(None, [str(ROOT / "benchmarks" / "process_log"), os.environ.get("PYTHONPATH")]))
        cold = watched_run(snakemake, work,
                           env=os.environ | {"PYTHONPATH": hook, "BEHIND_ROPE_PROCESS_LOG": str(process_log)})
        warm, refused = warm_steps(work)
        steps = process_cpu(process_log.read_text().splitlines())
        full, cpu, kernel, own = cold["wall_s"], cold["cpu_s"], cold["system_cpu_s"], cold["snakemake_cpu_s"]
        log = max((work / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime).read_text()
        jobs = parse_log(log)
        path, started = critical_path(jobs), run_start(jobs)
        speed_after = machine_speed(cores)
        rules = rule_times(work)
        results_gb = disk_gb(work / "results")
        noop = timed(snakemake, work)
        script = work / "workflow" / "scripts" / "fig2_simulation.py"
        script.write_text(script.read_text() + "\n# restyled\n")
        figure = timed([*snakemake, "fig2_simulation"], work)
        script = work / "workflow" / "scripts" / "fig3_nope_gram.py"
        script.write_text(script.read_text() + "\n# restyled\n")
        fig3 = timed([*snakemake, "fig3_nope_gram"], work)
        timed([*snakemake, "paper"], work)  # the PDF takes in the restyled figures
        (work / "results" / "claims.json").touch()
        paper = timed([*snakemake, "paper"], work)
        tarball = timed([*snakemake, "paper_tarball"], work)
        training = {twin: training_measurements(work, twin) for twin in ("nope", "rope")}
        claims = json.loads((work / "results" / "claims.json").read_text())

        def simulate(chunk_size):
            size = {"batch_size": 100_000, "seq_len": 50, "dim": 64, "layers": 4, "chunk_size": chunk_size}
            settings = {"variant": {"alpha": 0.5, "rope": True}, "size": size, "seed": 0}
            return [sys.executable, "-m", "behind_rope", "simulate", "--settings", json.dumps(settings), "--threads", "2",
                    "--output", str(work / "paper.npz")]

        chunked_s, chunked_mb = peak_rss_mb(simulate(2000), work)
        single_s, single_mb = peak_rss_mb(simulate(100_000), work)
        if args.keep:
            shutil.copytree(work, args.keep, symlinks=True, dirs_exist_ok=True)
    summary = {
        "machine": f"{cores} cores",
        "matmul_gflops_before": speed_before, "matmul_gflops_after": speed_after,
        "full_default_run_s": full, "full_default_run_cpu_s": cpu, "full_default_run_kernel_cpu_s": kernel,
        "full_default_run_snakemake_cpu_s": own, "warm_steps": warm, "refused_warm_steps": refused,
        "cpu_use": cpu / (full * cores), "results_gb": results_gb,
        "noop_rerun_s": noop, "single_figure_after_edit_s": figure, "fig3_after_edit_s": fig3,
        "paper_after_changed_claims_s": paper, "paper_tarball_s": tarball, "training": training, "rules": rules, "steps": steps,
        "critical_path": [{k: job[k] for k in ("rule", "wildcards")} | {"start": job["start"] - started,
                                                                       "seconds": job["end"] - job["start"]}
                          for job in path],
        "paper_scale_simulation_chunked": {"seconds": chunked_s, "peak_rss_mb": chunked_mb},
        "paper_scale_simulation_one_chunk": {"seconds": single_s, "peak_rss_mb": single_mb},
        "ratios": {"noop_over_full": noop / full, "figure_over_full": figure / full,
                   "chunked_over_one_chunk_memory": chunked_mb / single_mb,
                   "chunked_over_one_chunk_time": chunked_s / single_s},
    }
    write_json(ROOT / "results" / "benchmarks" / "summary.json", summary)
    if args.keep:  # the kept run carries its own summary, so that less_work.py cannot pair it with another run's
        write_json(Path(args.keep) / "summary.json", summary)
    avx512 = "avx512f" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False
    table = "\n".join([
        "| measurement | value | target |",
        "|---|---|---|",
        f"| whole DAG, default scale, cold (`snakemake --cores all`), the PDF included | {full:.0f} s | "
        f"{'<= 1,500 s' if avx512 else '<= 2,400 s'} on 2 cores {'with' if avx512 else 'without'} AVX-512 |",
        f"| CPU time of every job / (wall time x {cores} cores) | {cpu:.0f} s / ({full:.0f} s x {cores}) = "
        f"{cpu / (full * cores):.2f} | >= 0.85 |",
        f"| of that CPU time, in the kernel (page faults, I/O) | {kernel:.0f} s | |",
        f"| of that CPU time, Snakemake itself (scheduling, checks, `benchmark:` sampling) | {own:.0f} s | |",
        f"| steps that started warm, as forks of the run's warm-start server (`warm_start`) / that it refused | "
        f"{warm} / {refused} | |",
        f"| this machine's speed before / after the cold run: one 2048 x 2048 float32 matrix product "
        f"(`cpu_floor.single_matmul_rate`) | {describe_speed(speed_before)} / {describe_speed(speed_after)} | |",
        f"| dequantising the GGUF models (`cache_llm`, all models) | {rules.get('cache_llm', {}).get('s', 0):.0f} s | <= 60 s |",
        f"| score runs (`scores`: LLMs, their variants and twins, {rules.get('scores', {}).get('jobs', 0):.0f} jobs) | "
        f"{rules.get('scores', {}).get('s', 0):.0f} s | |",
        f"| disk: `results/` after the cold run (run.sh first checks for the room `envs/disk.sh` asks for) | {results_gb:.1f} GB | |",
        f"| no-op rerun | {noop:.1f} s ({noop / full:.3f} of a cold run) | <= 3 s |",
        f"| `snakemake fig2_simulation` after editing its script | {figure:.1f} s ({figure / full:.3f} of a cold run) | <= 20 s |",
        f"| `snakemake fig3_nope_gram` after editing its script (no model rerun) | {fig3:.1f} s | <= 20 s |",
        f"| `snakemake paper` after `results/claims.json` changed (numbers, then LaTeX) | {paper:.1f} s | < 30 s |",
        f"| `snakemake paper_tarball` (arXiv sources) | {tarball:.1f} s | |",
        *[f"| training throughput, {twin} twin ({t['device']}, {t['dtype']}) | {t['tokens_per_second']:.0f} tokens/s, "
          f"{t['train_seconds']:.0f} s, peak memory {t['peak_rss_mb']:.0f} MB | |" for twin, t in training.items()],
        f"| paper-scale simulation (B = 100,000), chunks of 2,000: peak memory | {chunked_mb:.0f} MB in {chunked_s:.0f} s | < 2,000 MB |",
        f"| the same in one chunk of 100,000 | {single_mb:.0f} MB in {single_s:.0f} s "
        f"(chunked/one-chunk memory ratio {chunked_mb / single_mb:.2f}, time ratio {chunked_s / single_s:.2f}) | |",
    ])
    per_rule = "\n".join(["| rule | jobs | wall s (summed) |", "|---|---|---|",
                          *(f"| {rule} | {t['jobs']} | {t['s']:.0f} |" for rule, t in rules.items())])
    print(table, describe_cpu(steps), per_rule, describe(path, started), sep="\n\n")
    if args.update_docs:
        note = f"_Measured by `python benchmarks/run_benchmarks.py --update-docs` on {summary['machine']}._\n\n"
        update("benchmarks", note + table
               + "\n\nWhere the CPU time went, per step (exact: each process's own, from benchmarks/process_log):\n\n"
               + describe_cpu(steps) + "\n\nPer rule, the wall times of its jobs (from the `benchmark:` files):\n\n"
               + per_rule + "\n\nThe critical path of the cold run (from its log):\n\n" + describe(path, started))
        write_tables(claims, "the same default-scale run")


if __name__ == "__main__":
    main()
