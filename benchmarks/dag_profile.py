"""Where the time of a workflow run went: each job's start and end, and the critical path, from Snakemake's log;
and the exact CPU time of every step, from the lines benchmarks/process_log/sitecustomize.py writes.

A job starts at the timestamp before its ``rule <name>:`` block and ends at the timestamp before
``Finished jobid: <id>``; its dependencies are the jobs whose outputs it reads.  The critical path
runs back from the job that finished last, each step to the dependency that finished last: the
chain that set the run's length.

    python benchmarks/dag_profile.py .snakemake/log/<run>.snakemake.log
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime

WARM_START_SERVER = "warm-start server (imports torch and transformers once for the steps it forks)"
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+) ")


def parse_log(text: str) -> dict[int, dict]:
    """{jobid: {"rule", "inputs", "outputs", "wildcards", "start", "end"}} of every job the log shows."""
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
    """The chain of jobs, first to last, that set the run's length."""
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


def describe(path: list[dict], start: float) -> str:
    lines = ["| job | starts at (s after the run's first job) | takes (s) |", "|---|---|---|"]
    for job in path:
        label = f"{job['rule']} ({job['wildcards']})" if job["wildcards"] else job["rule"]
        lines.append(f"| {label} | {job['start'] - start:.0f} | {job['end'] - job['start']:.0f} |")
    return "\n".join(lines)


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


def _processes(lines: list[str]) -> tuple[dict, list[dict], list[dict]]:
    """From one run's process log: the Snakemake that ran the jobs, the warm-start servers, and the jobs'
    own processes (a process that one of them waited for is in its ``children_`` times, not here)."""
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
    jobs = [r for r in records if r is not snakemake and r not in servers
            and (r["ppid"] in launchers or r["ppid"] not in logged)]
    return snakemake, servers, jobs


def job_cpu(lines: list[str]) -> dict[str, float]:
    """Exact CPU seconds per job, named by its log (``scores/smollm2/fig5_causal`` for
    results/logs/scores/smollm2/fig5_causal.log): its processes, a step that a warm-start fork ran for it
    included, and the children they waited for.  Processes that name no log (a shell's, Snakemake's) are left out."""
    cpu: dict[str, float] = {}
    for process in _processes(lines)[2]:
        if process.get("job"):
            name = process["job"].removeprefix("results/logs/").removesuffix(".log")
            cpu[name] = cpu.get(name, 0.0) + sum(process[key] for key in ("user", "system", "children_user",
                                                                          "children_system"))
    return cpu


def process_cpu(lines: list[str]) -> dict[str, dict[str, float]]:
    """CPU seconds per step (its processes and the children they waited for), Snakemake's own, and the
    rest of Snakemake's children (its shells, its ILP solver, LaTeX, and what each Python process spends after
    its exit hook logged it: the interpreter's last garbage collection), from one run's process log."""
    snakemake, servers, jobs = _processes(lines)
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
    add("Snakemake's other children (shells, LaTeX, the solver; Python's exits after a process logged its CPU)", 0,
        snakemake["children_user"] - sum(j["user"] + j["children_user"] for j in jobs + servers)
        + sum(server["children_user"] for server in servers),
        snakemake["children_system"] - sum(j["system"] + j["children_system"] for j in jobs + servers)
        + sum(server["children_system"] for server in servers))
    return dict(sorted(totals.items(), key=lambda item: -item[1]["cpu_s"]))


def describe_cpu(totals: dict[str, dict[str, float]]) -> str:
    lines = ["| step | processes | CPU s | of which kernel |", "|---|---|---|---|"]
    lines += [f"| {name} | {t['processes']} | {t['cpu_s']:.0f} | {t['system_s']:.0f} |" for name, t in totals.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    jobs = parse_log(open(sys.argv[1]).read())
    print(describe(critical_path(jobs), run_start(jobs)))
