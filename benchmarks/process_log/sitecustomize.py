"""Loaded by every Python process of a benchmarked run (benchmarks/run_benchmarks.py puts this folder on
PYTHONPATH): at exit, a process appends its own CPU time, and that of the children it waited for, as
one JSON line to $BEHIND_ROPE_PROCESS_LOG.  getrusage is exact, where Snakemake's `benchmark:` files
sample a job's processes now and then (benchmarks/run_benchmarks.py sums the lines per step)."""

import atexit
import json
import os
import resource
import sys

LOGS = "results/logs/"


def _job() -> str | None:
    """The job a process belongs to, named by its log under results/logs/: where a step's shell sends its output
    (a fork of the warm-start server gets the job's streams), or, for a `script:` rule, its `log:`."""
    try:
        target = os.readlink("/proc/self/fd/1")
    except OSError:
        target = ""
    if LOGS not in target:
        script = getattr(sys.modules.get("__main__"), "snakemake", None)  # Snakemake's script preamble sets it
        logs = list(getattr(script, "log", None) or [])
        target = str(logs[0]) if logs else ""
    return target[target.find(LOGS):] if LOGS in target else None


def _record() -> None:
    path = os.environ.get("BEHIND_ROPE_PROCESS_LOG")
    if not path:
        return
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    # A job whose step a fork of the warm-start server ran (behind_rope.pipeline.warm_start) says so.
    line = json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[:2], "job": _job(),
                       "handed_over": bool(os.environ.get("BEHIND_ROPE_STEP_HANDED_OVER")),  # warm_start.HANDED_OVER_ENV
                       "user": own.ru_utime, "system": own.ru_stime,
                       "children_user": children.ru_utime, "children_system": children.ru_stime})
    with open(path, "a") as handle:  # one short append per process: lines of parallel jobs stay whole
        handle.write(line + "\n")


atexit.register(_record)
