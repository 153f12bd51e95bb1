"""The cold-run benchmark's exact CPU accounting (benchmarks/run_benchmarks.py): every Python process logs its own
CPU time, and the log sums per step."""

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.run_benchmarks import OTHER_CHILDREN, WARM_START_SERVER, describe_cpu, process_cpu

ROOT = Path(__file__).resolve().parents[1]


def test_every_python_process_of_a_run_logs_its_cpu_time(tmp_path):
    log = tmp_path / "processes.jsonl"
    env = os.environ | {"PYTHONPATH": str(ROOT / "benchmarks" / "process_log"), "BEHIND_ROPE_PROCESS_LOG": str(log)}
    child = "sum(i * i for i in range(2_000_000))"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}], check=True)"
    subprocess.run([sys.executable, "-c", parent], env=env, check=True)
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["ppid"] == second["pid"]  # the child exits first, and its parent waited for it
    assert first["user"] > 0.05
    assert second["children_user"] >= first["user"]


def test_a_process_names_its_job_by_the_log_its_output_goes_to(tmp_path):
    log = tmp_path / "processes.jsonl"
    env = os.environ | {"PYTHONPATH": str(ROOT / "benchmarks" / "process_log"), "BEHIND_ROPE_PROCESS_LOG": str(log)}
    job_log = tmp_path / "results" / "logs" / "scores" / "smollm2" / "first_causal.log"
    job_log.parent.mkdir(parents=True)
    with job_log.open("w") as output:  # as a step's shell sends it: `... > {log} 2>&1`
        subprocess.run([sys.executable, "-c", "print('a step')"], env=env, check=True, stdout=output)
    # A `script:` rule's process: Snakemake's preamble defines `snakemake`, whose log names the job.
    script = ("import types; snakemake = types.SimpleNamespace(log=['results/logs/figures/fig2_simulation.log'])")
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, stdout=subprocess.DEVNULL)
    jobs = [json.loads(line)["job"] for line in log.read_text().splitlines()]
    assert jobs == ["results/logs/scores/smollm2/first_causal.log", "results/logs/figures/fig2_simulation.log", None]


def record(pid, ppid, argv, user, children_user=0.0, handed_over=False, job=None):
    return json.dumps({"pid": pid, "ppid": ppid, "argv": argv, "user": user, "system": 0.0, "job": job,
                       "children_user": children_user, "children_system": 0.0, "handed_over": handed_over})


def test_cpu_is_summed_per_step_with_the_children_each_job_waited_for():
    lines = [
        record(2, 1, ["/x/behind_rope/__main__.py", "fetch-package"], 1.0, children_user=2.0),
        record(3, 2, ["/venv/pip/__main__.py", "download"], 2.0),  # counted in its parent's children
        record(4, 1, ["/x/behind_rope/__main__.py", "fetch-package"], 1.5),
        record(5, 1, ["/w/.snakemake/scripts/tmpab12cd.fig2_simulation.py"], 3.0),
        # A rule's `run:` block runs in a Snakemake of its own (under a shell), logged before the main one.
        record(7, 6, ["/venv/snakemake/__main__.py", "--snakefile"], 0.5),
        record(1, 0, ["/venv/snakemake/__main__.py", "--cores"], 4.0, children_user=10.5),
    ]
    totals = process_cpu(lines)
    assert totals["fetch-package"] == {"processes": 2, "cpu_s": 4.5, "system_s": 0.0}
    assert totals["script fig2_simulation"]["cpu_s"] == 3.0
    assert totals["Snakemake itself"] == {"processes": 1, "cpu_s": 4.0, "system_s": 0.0}
    assert totals["snakemake, for a `run:` rule"]["cpu_s"] == 0.5
    # Of its 10.5 s of children, the jobs account for 8: the rest went to shells, the solver, LaTeX.
    assert totals[OTHER_CHILDREN]["cpu_s"] == 2.5
    assert "download" not in totals


def test_a_step_forked_by_the_warm_start_server_counts_once_for_its_step():
    lines = [
        record(5, 2, ["/x/behind_rope/__main__.py", "scores"], 0.25, handed_over=True),  # the job, under a shell (2)
        record(4, 3, ["/x/behind_rope/__main__.py", "scores"], 5.0),  # the fork that ran its step
        record(6, 1, ["/x/behind_rope/__main__.py", "scores"], 7.0),  # a step that started cold
        record(3, 1, ["/x/src/behind_rope/pipeline/warm_start.py", "/tmp/socket", "1"], 3.0, children_user=5.5),
        record(1, 0, ["/venv/snakemake/__main__.py", "--cores"], 1.0, children_user=17.0),
    ]
    totals = process_cpu(lines)
    assert totals["scores"] == {"processes": 2, "cpu_s": 12.25, "system_s": 0.0}
    assert totals[WARM_START_SERVER] == {"processes": 1, "cpu_s": 3.0, "system_s": 0.0}
    # 17 - 12.25 - 3: what the shells and the server's unlogged children took.
    assert totals[OTHER_CHILDREN]["cpu_s"] == 1.75


def test_the_docs_table_sums_the_steps_under_the_share_into_one_row():
    totals = {"train": {"processes": 3, "cpu_s": 900.0, "system_s": 1.0},
              "scores": {"processes": 50, "cpu_s": 95.0, "system_s": 20.0},
              "claims": {"processes": 1, "cpu_s": 3.0, "system_s": 0.4},
              "gram": {"processes": 1, "cpu_s": 2.0, "system_s": 0.4}}
    rows = describe_cpu(totals, 0.01).splitlines()[2:]
    assert rows == ["| train | 3 | 900 | 1 |", "| scores | 50 | 95 | 20 |",
                    "| the other 2 steps (each under 1% of the CPU time) | 2 | 5 | 1 |"]
    assert len(describe_cpu(totals).splitlines()) == 2 + len(totals)  # on the terminal: every step


def test_a_job_that_handed_its_step_to_a_warm_fork_says_so(tmp_path):
    from behind_rope.pipeline.warm_start import HANDED_OVER_ENV  # the name the client sets, read by the hook

    log = tmp_path / "processes.jsonl"
    env = os.environ | {"PYTHONPATH": str(ROOT / "benchmarks" / "process_log"), "BEHIND_ROPE_PROCESS_LOG": str(log)}
    subprocess.run([sys.executable, "-c", "pass"], env=env | {HANDED_OVER_ENV: "1"}, check=True)
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    assert [json.loads(line)["handed_over"] for line in log.read_text().splitlines()] == [True, False]
