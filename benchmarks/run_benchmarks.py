"""The cold-run benchmark: the whole DAG at the default scale, on a scratch copy of the workflow (inside a
clone of the repository, so that the run's claims name the commit of each criterion).

    python -m benchmarks.run_benchmarks                 # print the tables, write results/benchmarks/summary.json
    python -m benchmarks.run_benchmarks --update-docs   # also rewrite docs/performance.md's table and the claims
                                                        # tables (behind_rope.claims.tables) from the cold run
    python -m benchmarks.run_benchmarks --keep DIR      # keep the cold run's copy in DIR (results, logs, processes.jsonl)
    python -m benchmarks.run_benchmarks --from-summary results/benchmarks/summary.json --update-docs
                                                        # only rewrite docs/performance.md's table from a kept summary

Measures: a cold run of the whole DAG at the default scale (ending with the PDF), with the CPU time
of every job it ran divided by (wall time x cores); this machine's matrix-product speed before and
after it (the CPU under a shared machine can change from day to day); the exact CPU time per step
and of Snakemake itself (every Python process logs its own: benchmarks/process_log); the wall and
sampled CPU time per rule (from the `benchmark:` files, which do not see the steps that started warm);
the run's critical path (from its log); a no-op rerun; rebuilding one figure after its script changed
(a simulation figure and Figure 3); rebuilding the paper after a result changed; the arXiv tarball;
the twins' training throughput and peak memory and the time to dequantise the GGUF models (from the
cold run's own files); the peak memory of a paper-scale simulation (B = 100,000) run in chunks
against the same run in a single chunk; and the disk space the cold run's results/ take.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import psutil

from behind_rope.atomic import write_json
from behind_rope.claims.tables import write_tables
from behind_rope.pipeline.workspace import snakemake_environment
from benchmarks.results_doc import PERFORMANCE, update
from benchmarks.workspace import WORKFLOW_PARTS, copy_workflow, disk_gb

ROOT = Path(__file__).resolve().parents[1]

# A step holding less than this share of the run's CPU time is summed into one row of the docs table.
SMALL_STEP = 0.02

# Snakemake's log: a job starts at the timestamp before its ``rule <name>:`` block and ends at the one
# before ``Finished jobid: <id>``.
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+) ")


def parse_log(text: str) -> dict[int, dict]:
    """{jobid: {"rule", "inputs", "outputs", "wildcards", "start", "end"}} of every job Snakemake's log shows."""
    jobs, stamp, current = {}, None, None
    for line in text.splitlines():
        if match := STAMP.match(line):
            stamp = datetime.strptime(match[1], "%a %b %d %H:%M:%S %Y").timestamp()
        elif match := RULE.match(line):
            current = {"rule": match[1], "inputs": [], "outputs": [], "wildcards": "", "start": stamp, "end": None}
        elif current is not None and line.startswith("    ") and ": " in line:
            key, value = line.strip().split(": ", 1)
            if key in ("input", "output"):
                current[f"{key}s"] = value.split(", ")
            elif key == "wildcards":
                current["wildcards"] = value
            elif key == "jobid":
                jobs[int(value)] = current
        elif match := FINISHED.match(line):
            if int(match[1]) in jobs:
                jobs[int(match[1])]["end"] = stamp
    return {jobid: job for jobid, job in jobs.items() if job["end"] is not None and job["start"] is not None}


def critical_path(jobs: dict[int, dict]) -> list[dict]:
    """The chain of jobs, first to last, that set the run's length: back from the job that finished last,
    each step to the dependency (a job whose outputs it reads) that finished last."""
    producer = {output: jobid for jobid, job in jobs.items() for output in job["outputs"]}
    jobid = max(jobs, key=lambda j: (jobs[j]["end"], jobs[j]["start"]))
    path = []
    while jobid is not None:
        path.append(jobs[jobid])
        parents = {producer[i] for i in jobs[jobid]["inputs"] if i in producer and producer[i] != jobid}
        jobid = max(parents, key=lambda j: jobs[j]["end"]) if parents else None
    return path[::-1]


def run_start(jobs: dict[int, dict]) -> float:
    """When the run's first job started: the zero of every "starts at"."""
    return min(job["start"] for job in jobs.values())


def describe_path(path: list[dict]) -> str:
    """The critical path as a table; each job's ``start`` counts from the run's first job."""
    lines = ["| job | starts at (s after the run's first job) | takes (s) |", "|---|---|---|"]
    for job in path:
        label = f"{job['rule']} ({job['wildcards']})" if job["wildcards"] else job["rule"]
        lines.append(f"| {label} | {job['start']:.0f} | {job['seconds']:.0f} |")
    return "\n".join(lines)


# The exact CPU time of every process of the cold run, from the lines benchmarks/process_log/sitecustomize.py
# appends (getrusage at exit: where the `benchmark:` files sample a job's processes now and then).
WARM_START_SERVER = "warm-start server (imports torch and transformers once for the steps it forks)"
OTHER_CHILDREN = "Snakemake's other children (shells, LaTeX, the solver; Python's exits after a process logged its CPU)"


def _program(argv: list[str]) -> str:
    return argv[0].replace("\\", "/")


def _step(argv: list[str]) -> str:
    """What a process ran: a step of `python -m behind_rope`, a figure script, or a program's name."""
    program = _program(argv)
    if program.endswith("behind_rope/__main__.py") and len(argv) > 1:
        return argv[1]
    if "/.snakemake/scripts/" in program:  # Snakemake's copy of a script: tmp<random>.<name>.py
        return "script " + program.rsplit("/", 1)[-1].split(".", 1)[-1].removesuffix(".py")
    if program.endswith("snakemake/__main__.py"):  # Snakemake runs a rule's `run:` block in a Snakemake of its own
        return "snakemake, for a `run:` rule"
    return program.rsplit("/", 1)[-1]


def process_cpu(lines: list[str]) -> dict[str, dict[str, float]]:
    """CPU seconds per step (its processes and the children they waited for), Snakemake's own, and the
    rest of Snakemake's children (its shells, its ILP solver, LaTeX, and what each Python process spends after
    its exit hook logged it: the interpreter's last garbage collection), from one run's process log."""
    records = [json.loads(line) for line in lines if line.strip()]
    # The Snakemake that ran the jobs: the one whose children took the most (a `run:` rule starts another).
    snakemake = max((r for r in records if _program(r["argv"]).endswith("snakemake/__main__.py")),
                    key=lambda r: r["children_user"] + r["children_system"], default=None)
    if snakemake is None:
        raise ValueError("the process log has no Snakemake process: was the run started with `python -m snakemake`?")
    # The warm-start server of a local run (behind_rope.pipeline.warm_start): the steps it forks are jobs.
    servers = [r for r in records if _program(r["argv"]).endswith("pipeline/warm_start.py")]
    launchers = {snakemake["pid"], *(server["pid"] for server in servers)}
    logged = {r["pid"] for r in records}
    # A job's own processes; a process one of them waited for is in its ``children_`` times, not here.
    jobs = [r for r in records if r is not snakemake and r not in servers
            and (r["ppid"] in launchers or r["ppid"] not in logged)]
    totals: dict[str, dict[str, float]] = {}

    def add(name, processes, user, system):
        total = totals.setdefault(name, {"processes": 0, "cpu_s": 0.0, "system_s": 0.0})
        total["processes"] += processes
        total["cpu_s"] += user + system
        total["system_s"] += system

    for job in jobs:  # a job that handed its step to a fork is not another process of that step
        add(_step(job["argv"]), 0 if job.get("handed_over") else 1, job["user"] + job["children_user"],
            job["system"] + job["children_system"])
    for server in servers:
        add(WARM_START_SERVER, 1, server["user"], server["system"])
    add("Snakemake itself", 1, snakemake["user"], snakemake["system"])
    add(OTHER_CHILDREN, 0,
        snakemake["children_user"] - sum(j["user"] + j["children_user"] for j in jobs + servers)
        + sum(server["children_user"] for server in servers),
        snakemake["children_system"] - sum(j["system"] + j["children_system"] for j in jobs + servers)
        + sum(server["children_system"] for server in servers))
    return dict(sorted(totals.items(), key=lambda item: -item[1]["cpu_s"]))


def describe_cpu(totals: dict[str, dict[str, float]], smallest: float = 0.0) -> str:
    """The per-step CPU table; the steps under ``smallest`` of the whole summed into one row."""
    whole = sum(t["cpu_s"] for t in totals.values())
    shown = {name: t for name, t in totals.items() if t["cpu_s"] >= smallest * whole}
    rest = [t for name, t in totals.items() if name not in shown]
    lines = ["| step | processes | CPU s | of which kernel |", "|---|---|---|---|"]
    lines += [f"| {name} | {t['processes']} | {t['cpu_s']:.0f} | {t['system_s']:.0f} |" for name, t in shown.items()]
    if rest:
        lines.append(f"| the other {len(rest)} steps (each under {smallest:.0%} of the CPU time) | "
                     f"{sum(t['processes'] for t in rest)} | {sum(t['cpu_s'] for t in rest):.0f} | "
                     f"{sum(t['system_s'] for t in rest):.0f} |")
    return "\n".join(lines)


def watched_run(command, cwd, env=None) -> dict:
    """Run a Snakemake command: wall seconds, CPU seconds of everything it started (user and system, and
    the system part alone) and CPU seconds of the Snakemake process itself (polled)."""
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


def warm_steps(workdir: Path) -> tuple[int, int]:
    """(steps that started warm, steps the server refused) in a finished run, from the server's log."""
    log = workdir / ".snakemake" / "warm_start.log"
    lines = log.read_text().splitlines() if log.is_file() else []
    return sum(line.startswith("warm: ") for line in lines), sum(line.startswith("refused: ") for line in lines)


def single_matmul_rate(threads: int, rounds: int = 3) -> float:
    """GFLOP/s of a 2048 x 2048 float32 matrix product on this many threads: the best of ``rounds`` rounds of
    10 products, since a busy neighbour on a shared machine only slows one down."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.mm(a, b)
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(10):
            torch.mm(a, b)
        best = max(best, 10 * 2 * 2048**3 / (time.perf_counter() - started) / 1e9)
    return best


def timed(command, cwd: Path) -> float:
    """Seconds a Snakemake call in the copy ``cwd`` takes, its library first on the import path as the cold run's."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=snakemake_environment(cwd), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(map(str, command[2:]))} failed in {cwd}:\n{done.stderr[-3000:]}")
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
    run = json.loads((work / "results" / "logs" / "train" / f"{twin}.json").read_text())
    return {"tokens_per_second": run["tokens_per_second"], "train_seconds": run["train_seconds"],
            "peak_rss_mb": run["peak_rss_mb"], "device": metrics["device"], "dtype": metrics["dtype"]}


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


def describe_speed(speed: dict) -> str:
    """A speed measurement as words (its threads are strings once it has been through JSON)."""
    return ", ".join(f"{rate:.0f} GFLOP/s on {threads} thread{'s' * (int(threads) > 1)}" for threads, rate in speed.items())


def this_checkout() -> str:
    """The commit the cold run ran, and whether the working tree had edits on top of it."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
        edited = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, check=True, capture_output=True,
                                text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "a checkout outside git"
    return f"commit {commit}" + (" with uncommitted edits" if edited else "")


def keep_copy(work: Path, keep: str) -> None:
    """Copy the cold run to ``keep``; a copy that fails (a full disk, say) is reported and does not lose the
    measurements, which the summary holds."""
    try:
        shutil.copytree(work, keep, symlinks=True, dirs_exist_ok=True)
    except (OSError, shutil.Error) as error:
        print(f"Could not keep the cold run in {keep} ({str(error)[:300]}); the measurements below stand, "
              "the run's files are gone.", file=sys.stderr)


def measure(keep: str | None) -> tuple[dict, dict]:
    """The cold run and everything measured after it: (the summary, the run's claims)."""
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
        try:
            cold = watched_run(snakemake, work,
                               env=snakemake_environment(work, os.environ | {"PYTHONPATH": hook,
                                                                             "BEHIND_ROPE_PROCESS_LOG": str(process_log)}))
            warm, refused = warm_steps(work)
            steps = process_cpu(process_log.read_text().splitlines())
            full, cpu = cold["wall_s"], cold["cpu_s"]
            log = max((work / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime).read_text()
            jobs = parse_log(log)
            path, started = critical_path(jobs), run_start(jobs)
            speed_after = machine_speed(cores)
            rules = rule_times(work)
            disk = run_disk(work / "results")
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
        except Exception:
            if keep:  # what the run did, to mend the failing step and finish the run or its measurements from there
                keep_copy(work, keep)
            raise
        if keep:
            keep_copy(work, keep)
    # A run under the AVX2 emulation (ATEN_CPU_CAPABILITY=avx2 and the rest, benchmarks/cpu_invariance.py's avx2 arm)
    # is measured against the budget of a host without AVX-512, whatever this CPU's flags say.
    avx512 = ("avx512f" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False) and \
        os.environ.get("ATEN_CPU_CAPABILITY", "").lower() not in ("avx2", "default")
    summary = {
        "machine": f"{cores} cores", "cores": cores, "avx512": avx512, "checkout": this_checkout(),
        "matmul_gflops_before": speed_before, "matmul_gflops_after": speed_after,
        "full_default_run_s": full, "full_default_run_cpu_s": cpu, "full_default_run_kernel_cpu_s": cold["system_cpu_s"],
        "full_default_run_snakemake_cpu_s": cold["snakemake_cpu_s"], "warm_steps": warm, "refused_warm_steps": refused,
        "cpu_use": cpu / (full * cores), "results_gb": disk["results"], "disk_gb": disk,
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
    return summary, claims


# The disk a default run may take: the files it cannot do without between runs (the dequantised models every score
# run loads, the GGUF files they come from, kept so that dequantising again reruns nothing after the tokenizer, and
# the score arrays the metrics, claims and figures read), and this much for all else (twins, token sets, metrics,
# figures, logs).  A package is stored once, in the download cache outside results/.
DISK_ALLOWANCE_GB = 0.25


def run_disk(results: Path) -> dict:
    return {"results": disk_gb(results), "scores": disk_gb(results / "scores"),
            "dequantised_models": sum(disk_gb(folder) for folder in results.glob("models/*/hf")),
            "gguf": sum(path.stat().st_blocks * 512 / 1e9 for path in results.glob("models/*/model.gguf"))}


def describe_disk(summary: dict) -> str:
    disk = summary.get("disk_gb")
    if disk is None:  # a summary kept from before the parts were measured
        return f"{summary['results_gb']:.1f} GB"
    needed = disk["dequantised_models"] + disk["gguf"] + disk["scores"]
    return (f"{disk['results']:.1f} GB (the dequantised models {disk['dequantised_models']:.1f}, their GGUF files "
            f"{disk['gguf']:.1f}, the score arrays {disk['scores']:.1f}; the rest {disk['results'] - needed:.2f})")


def host(summary: dict) -> str:
    return "an AVX-512 host" if summary["avx512"] else "a host without AVX-512"


def measurements_table(summary: dict) -> str:
    """The measurements of one cold run, against their targets."""
    full, cpu, cores = summary["full_default_run_s"], summary["full_default_run_cpu_s"], summary["cores"]
    rules, avx512 = summary["rules"], summary["avx512"]
    noop, figure = summary["noop_rerun_s"], summary["single_figure_after_edit_s"]
    chunked, single = summary["paper_scale_simulation_chunked"], summary["paper_scale_simulation_one_chunk"]
    return "\n".join([
        "| measurement | value | target |",
        "|---|---|---|",
        f"| whole DAG, default scale, cold (`snakemake --cores all`), the PDF included | {full:.0f} s | "
        f"{'<= 1,800 s (goal 1,500)' if avx512 else '<= 2,900 s'} on 2 cores {'with' if avx512 else 'without'} AVX-512 |",
        f"| CPU time of every job / (wall time x {cores} cores) | {cpu:.0f} s / ({full:.0f} s x {cores}) = "
        f"{cpu / (full * cores):.2f} | >= 0.85 |",
        f"| of that CPU time, in the kernel (page faults, I/O) | {summary['full_default_run_kernel_cpu_s']:.0f} s | |",
        "| of that CPU time, Snakemake itself (scheduling, checks, `benchmark:` sampling) | "
        f"{summary['full_default_run_snakemake_cpu_s']:.0f} s | |",
        f"| steps that started warm, as forks of the run's warm-start server (`warm_start`) / that it refused | "
        f"{summary['warm_steps']} / {summary['refused_warm_steps']} | |",
        f"| this machine's speed before / after the cold run: one 2048 x 2048 float32 matrix product "
        f"(`single_matmul_rate`) | {describe_speed(summary['matmul_gflops_before'])} / "
        f"{describe_speed(summary['matmul_gflops_after'])} | |",
        f"| dequantising the GGUF models (`cache_llm`, all models) | {rules.get('cache_llm', {}).get('s', 0):.0f} s | <= 60 s |",
        f"| score runs (`scores`: LLMs, their variants and twins, {rules.get('scores', {}).get('jobs', 0):.0f} jobs) | "
        f"{rules.get('scores', {}).get('s', 0):.0f} s | |",
        f"| disk: `results/` after the cold run (run.sh first checks for the room `envs/disk.sh` asks for) | "
        f"{describe_disk(summary)} | the rest <= {DISK_ALLOWANCE_GB} GB |",
        f"| no-op rerun | {noop:.1f} s ({noop / full:.3f} of a cold run) | <= 3 s |",
        f"| `snakemake fig2_simulation` after editing its script | {figure:.1f} s ({figure / full:.3f} of a cold run) | <= 20 s |",
        f"| `snakemake fig3_nope_gram` after editing its script (no model rerun) | {summary['fig3_after_edit_s']:.1f} s | <= 20 s |",
        "| `snakemake paper` after `results/claims.json` changed (numbers, then LaTeX) | "
        f"{summary['paper_after_changed_claims_s']:.1f} s | < 30 s |",
        f"| `snakemake paper_tarball` (arXiv sources) | {summary['paper_tarball_s']:.1f} s | |",
        *[f"| training throughput, {twin} twin ({t['device']}, {t['dtype']}) | {t['tokens_per_second']:.0f} tokens/s, "
          f"{t['train_seconds']:.0f} s, peak memory {t['peak_rss_mb']:.0f} MB | |" for twin, t in summary["training"].items()],
        f"| paper-scale simulation (B = 100,000), chunks of 2,000: peak memory | {chunked['peak_rss_mb']:.0f} MB in "
        f"{chunked['seconds']:.0f} s | < 2,000 MB |",
        f"| the same in one chunk of 100,000 | {single['peak_rss_mb']:.0f} MB in {single['seconds']:.0f} s "
        f"(chunked/one-chunk memory ratio {chunked['peak_rss_mb'] / single['peak_rss_mb']:.2f}, time ratio "
        f"{chunked['seconds'] / single['seconds']:.2f}) | |",
    ])


def rules_table(summary: dict) -> str:
    return "\n".join(["| rule | jobs | wall s (summed) |", "|---|---|---|",
                      *(f"| {rule} | {t['jobs']} | {t['s']:.0f} |" for rule, t in summary["rules"].items())])


def docs_block(summary: dict) -> str:
    """docs/performance.md's benchmark block: the measurements, the CPU time by step (the small steps in one
    row: the whole list is in the summary and on the terminal) and the critical path."""
    return (f"_Measured by `python -m benchmarks.run_benchmarks` on {summary['machine']}: {summary['checkout']}, "
            f"{host(summary)}._\n\n" + measurements_table(summary)
            + "\n\nWhere the CPU time went, per step (exact: each process's own, from benchmarks/process_log):\n\n"
            + describe_cpu(summary["steps"], SMALL_STEP)
            + "\n\nThe critical path of the cold run (from its log):\n\n" + describe_path(summary["critical_path"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true",
                        help="rewrite docs/performance.md's benchmark table and, after a cold run, the claims tables")
    parser.add_argument("--keep", help="keep the cold run's copy of the workflow here")
    parser.add_argument("--from-summary", type=Path, help="no run: the tables of a kept summary.json")
    args = parser.parse_args()
    if args.from_summary:
        summary, claims = json.loads(args.from_summary.read_text()), None
        summary.setdefault("cores", int(summary["machine"].split()[0]))
        for needed in ("avx512", "checkout"):  # written by every run since they were added
            if needed not in summary:
                raise SystemExit(f"{args.from_summary} has no '{needed}': add it, as the run's own note says it")
    else:
        summary, claims = measure(args.keep)
        write_json(ROOT / "results" / "benchmarks" / "summary.json", summary)
        if args.keep and Path(args.keep).is_dir():  # the kept run carries its own summary
            try:
                write_json(Path(args.keep) / "summary.json", summary)
            except OSError as error:
                print(f"Could not write {args.keep}/summary.json ({error}); results/benchmarks/summary.json has it.",
                      file=sys.stderr)
    print(measurements_table(summary), describe_cpu(summary["steps"]), rules_table(summary),
          describe_path(summary["critical_path"]), sep="\n\n")
    if args.update_docs:
        update("benchmarks", docs_block(summary), PERFORMANCE)
        if claims is not None:
            write_tables(claims, f"a default-scale run of {summary['checkout']} on {host(summary)}", root=ROOT)


if __name__ == "__main__":
    main()
