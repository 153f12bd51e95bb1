import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from behind_rope.pipeline.workspace import snakemake_environment  # noqa: F401 (the tests' name)
from benchmarks.workspace import ROOT, WORKFLOW_PARTS, copy_workflow, disk_gb  # noqa: F401 (the tests' names)

# Big intermediate files that no test reads again once the smoke run is done.
HEAVY_RESULTS = ("models", "raw")
# What a result file records about the run rather than the science: times and memory.
TIMINGS = {"seconds", "tokens_per_second", "train_seconds", "peak_rss_mb"}


def comparable(value):
    """A result with its timings and the machine-dependent fields left out."""
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items() if key not in TIMINGS}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


def arrays(path: Path, other: Path):
    """(name, array here, array there) for each array in two .npy or .npz files."""
    if path.suffix == ".npy":
        yield "", np.load(path), np.load(other)
        return
    with np.load(path) as want, np.load(other) as got:
        for name in want.files:
            yield name, want[name], got[name]


def smoke_config() -> dict:
    """The validated config of the smoke scale: config/config.yaml with config/smoke.yaml over it."""
    from behind_rope.config import load

    return load("config/smoke.yaml")


def default_measures():
    """The pre-registration's shared definitions (config/claims.yaml, ``measures:``)."""
    from behind_rope.config import load_yaml
    from behind_rope.maths.metrics import Measures

    return Measures.of(load_yaml((ROOT / "config" / "claims.yaml").read_text())["measures"])


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the Snakemake of this environment in ``workdir``; return the finished process."""
    env = snakemake_environment(workdir, {**os.environ, "HF_HUB_OFFLINE": "1"})
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """A copy of the workflow, run once end to end at the smoke scale."""
    started = time.monotonic()
    workdir = copy_workflow(tmp_path_factory.mktemp("smoke"))
    snakemake(workdir, "--configfile", "config/smoke.yaml")
    SPLIT["smoke run"] = _smoke_seconds[0] = time.monotonic() - started  # CI's split counts it apart
    return workdir


def ignore_heavy(folder, names):
    return [name for name in names if Path(folder).name == "results" and name in HEAVY_RESULTS]


def copy_run(workdir: Path, destination: Path) -> Path:
    """A copy of a finished run, without the big intermediate files (Snakemake does not need them back)."""
    shutil.copytree(workdir, destination, symlinks=True, ignore=ignore_heavy)
    return destination


def link_or_copy(source, destination):
    try:
        os.link(source, destination)
    except OSError:  # another file system
        shutil.copy2(source, destination)


def copy_run_with_models(workdir: Path, destination: Path) -> Path:
    """A whole copy of a finished run, in which the big intermediate files are hard links, not copies.

    A full copy costs about 0.7 GB of disk per test. Linking is safe: no test edits those files, and
    Snakemake replaces an output (written atomically, by rename) rather than writing into it.
    """
    copy_run(workdir, destination)
    for heavy in HEAVY_RESULTS:
        if (workdir / "results" / heavy).is_dir():
            shutil.copytree(workdir / "results" / heavy, destination / "results" / heavy, symlinks=True,
                            copy_function=link_or_copy)
    return destination


# The verdict gate (tests/test_verdict_gate.py): with CI=true, or BEHIND_ROPE_VERDICT_GATE=1, the default workflow
# runs once in this checkout, as ./run.sh runs it, and its verdicts are compared with tests/expected_verdicts.json.
GATE = os.environ.get("CI") == "true" or os.environ.get("BEHIND_ROPE_VERDICT_GATE") == "1"
GATE_TEST = "test_verdict_gate.py::test_the_default_workflow_gives_the_expected_verdicts"
# In CI the gate starts from the last gate run on this machine (tests/gate_cache.py); BEHIND_ROPE_GATE_CACHE=0 runs
# it cold.  Elsewhere it runs in the checkout's own results/, as ./run.sh would.
GATE_CACHE = os.environ.get("BEHIND_ROPE_GATE_CACHE", "1" if os.environ.get("CI") == "true" else "0") == "1"
# CI is stopped at a hard limit: .ci/run says when (BEHIND_ROPE_CI_DEADLINE, seconds since the epoch), and the gate's
# run stops early enough that its test, pytest's summary and .ci/run's still print.  Without it, 80 minutes.
CI_DEADLINE = os.environ.get("BEHIND_ROPE_CI_DEADLINE")
GATE_RESERVE_S = 240
GATE_MINUTES = float(os.environ.get("BEHIND_ROPE_GATE_MINUTES", "80"))


def gate_seconds() -> float:
    """How long the gate's run may take from now."""
    if CI_DEADLINE:
        return float(CI_DEADLINE) - time.time() - GATE_RESERVE_S
    return GATE_MINUTES * 60


def running_jobs(log: str) -> list[str]:
    """The jobs that a Snakemake log shows started and not finished, as `rule (wildcards)`."""
    started = {}
    for block in re.split(r"\n(?=\[[^\]]+\]\n)", log):
        rule = re.search(r"^(?:local)?rule (\w+):$", block, flags=re.MULTILINE)
        jobid = re.search(r"^    jobid: (\d+)$", block, flags=re.MULTILINE)
        if rule and jobid:
            wildcards = re.search(r"^    wildcards: (.*)$", block, flags=re.MULTILINE)
            started[jobid[1]] = rule[1] + (f" ({wildcards[1]})" if wildcards else "")
    for jobid in re.findall(r"^Finished jobid: (\d+)", log, flags=re.MULTILINE):
        started.pop(jobid, None)
    return list(started.values())


class BackgroundRun:
    """A command started now and waited for later, at a lower priority (nice 10), its output in a file.

    The verdict gate's run of the default workflow is one: it starts when the tests are collected and runs
    beside them.  They leave a core idle much of the time (the SLURM test waits on job starts and polling),
    and the run fills it; the lower priority keeps the tests' own timeouts meaningful.  The gate's test
    runs last and waits for it.
    """

    def __init__(self, command: list[str], name: str):
        self.command = command
        self.log = Path(tempfile.gettempdir()) / f"behind-rope-{name}-{os.getpid()}.log"
        self.process = None
        self.deadline = None
        self.started = None
        self.seconds = None
        self.stopped_running = []  # the jobs that were running when the deadline stopped it
        self.cache = None  # the gate's: the cache entry it started from, and whether there was one
        self.restored = False
        self.results_gb_before = 0.0

    def start(self, seconds: float = 3600):
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        with self.log.open("w") as log:
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, preexec_fn=lambda: os.nice(10))
        self.started = time.time()
        self.deadline = time.monotonic() + seconds

    def wait(self) -> tuple[int | None, str]:
        """The exit status (None if the command outlived its deadline and was stopped) and the end of its output."""
        try:
            returncode = self.process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stopped_running = running_jobs(self.log.read_text())
            self.stop()
            returncode = None
        self.seconds = self.log.stat().st_mtime - self.started  # till its last line, not till it was waited for
        return returncode, self.log.read_text()[-6000:]

    def stop(self):
        """Stop the command and its children if it is still going (the session ended early, say)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)  # Snakemake stops its jobs and marks their outputs incomplete
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


DEFAULT_RUN = BackgroundRun([sys.executable, "-m", "snakemake", "--cores", "all"], "verdict-gate")


# The SLURM tests install (as root, with apt) and start a local cluster on this machine: CI runs them, a user's
# ./test.sh only when asked.
CLUSTER_TESTS = os.environ.get("CI") == "true" or os.environ.get("BEHIND_ROPE_CLUSTER_TESTS") == "1"


def pytest_collection_modifyitems(config, items):
    gate = [item for item in items if item.nodeid.endswith(GATE_TEST)]
    items[:] = [item for item in items if item not in gate] + gate
    if not CLUSTER_TESTS:
        skip = pytest.mark.skip(reason="the SLURM tests install and start a local SLURM cluster here (root, apt: "
                                "tests/cluster/slurm_up.sh); set BEHIND_ROPE_CLUSTER_TESTS=1 to run them (CI=true does)")
        for item in items:
            if item.get_closest_marker("cluster"):
                item.add_marker(skip)


def pytest_collection_finish(session):
    if GATE and not session.config.option.collectonly and any(item.nodeid.endswith(GATE_TEST) for item in session.items):
        if GATE_CACHE:
            import gate_cache

            DEFAULT_RUN.cache = gate_cache.entry(ROOT)
            DEFAULT_RUN.restored = gate_cache.restore(ROOT, DEFAULT_RUN.cache)
        DEFAULT_RUN.results_gb_before = disk_gb(ROOT / "results")
        DEFAULT_RUN.start(seconds=gate_seconds())


# CI's split, printed at the end: seconds of each part, from each test's setup, call and teardown.
CI_STARTED = os.environ.get("BEHIND_ROPE_CI_STARTED")
PYTEST_STARTED = time.time()
SPLIT = {"unit tests": 0.0, "smoke run": 0.0, "SLURM": 0.0, "gate (waiting for its run)": 0.0}


def part_of(item) -> str:
    if item.nodeid.endswith(GATE_TEST):
        return "gate (waiting for its run)"
    if item.get_closest_marker("cluster"):
        return "SLURM"
    return "unit tests"


_smoke_seconds = [0.0]  # of the current test's time, spent on the smoke run (the first test to ask for it)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started, _smoke_seconds[0] = time.monotonic(), 0.0
    try:
        return (yield)
    finally:
        SPLIT[part_of(item)] += time.monotonic() - started - _smoke_seconds[0]


def pytest_terminal_summary(terminalreporter):
    """CI's split, last before pytest's own summary line: .ci/run says when CI started (BEHIND_ROPE_CI_STARTED)."""
    if not CI_STARTED:
        return
    parts = {"set-up (.venv, LaTeX)": PYTEST_STARTED - float(CI_STARTED), **SPLIT}
    if DEFAULT_RUN.seconds is not None:
        start = "from the gate cache" if DEFAULT_RUN.restored else "cold"
        parts[f"gate's default run ({start}, beside the tests)"] = DEFAULT_RUN.seconds
    terminalreporter.write_sep("-", "CI's split, in seconds")
    for part, seconds in parts.items():
        terminalreporter.write_line(f"{part:<60} {seconds:6.0f}")
    terminalreporter.write_line(f"{'CI so far':<60} {time.time() - float(CI_STARTED):6.0f}")


def pytest_sessionfinish(session, exitstatus):
    DEFAULT_RUN.stop()
