"""Warm starts (behind_rope.pipeline.warm_start): a step forked from the run's server behaves as a fresh
process would: the same output, exit status, streams and signals; a request it cannot serve as a fresh
process would run starts cold.  The smoke DAGs of the other tests start their steps warm, and the SLURM
test compares one with a cold cluster run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from behind_rope.pipeline import warm_start

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A warm-start server for this test, as the Snakefile's onstart starts one, and its log."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".snakemake").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    warm_start.start()
    socket_path, deadline = Path(os.environ[warm_start.SOCKET_ENV]), time.monotonic() + 120
    while not socket_path.exists() and time.monotonic() < deadline:  # it listens once its imports are done
        time.sleep(0.1)
    yield tmp_path / ".snakemake" / "warm_start.log"
    warm_start.stop()
    assert warm_start.SOCKET_ENV not in os.environ


def step(*args: str, **env: str) -> subprocess.Popen:
    """``python -m behind_rope <args>`` as a 1-thread job of Snakemake's would start it."""
    environment = {**os.environ, **warm_start.ONE_THREAD, **env}
    return subprocess.Popen([sys.executable, "-m", "behind_rope", *args], env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(*args: str, **env: str) -> tuple[int, str, str]:
    out, err = (process := step(*args, **env)).communicate(timeout=300)
    return process.returncode, out, err


def log_lines(log: Path, prefix: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith(prefix)]


def test_a_warm_step_writes_what_a_cold_one_writes(server, tmp_path):
    code, warm_out, err = finished("derive", "--output", str(tmp_path / "warm.json"))
    assert code == 0, err
    assert log_lines(server, "warm: derive")
    cold = {key: value for key, value in os.environ.items() if key != warm_start.SOCKET_ENV}
    done = subprocess.run([sys.executable, "-m", "behind_rope", "derive", "--output", str(tmp_path / "cold.json")],
                          env={**cold, **warm_start.ONE_THREAD}, capture_output=True, text=True, check=True)
    assert len(log_lines(server, "warm: ")) == 1  # the second one did not ask
    assert (tmp_path / "warm.json").read_bytes() == (tmp_path / "cold.json").read_bytes()
    assert warm_out == done.stdout and "PASS" in warm_out


def test_a_failing_step_fails_the_job_with_its_own_status_and_message(server, tmp_path):
    code, _, err = finished("no-such-step")
    assert code == 2 and "invalid choice: 'no-such-step'" in err
    code, _, err = finished("metrics", "--settings", "{}", "--input", str(tmp_path / "missing.npz"),
                            "--output", str(tmp_path / "m.json"))
    assert code == 1 and err.startswith("Error: ") and "missing.npz" in err
    assert len(log_lines(server, "warm: ")) == 2


def test_a_step_that_would_not_run_as_a_fresh_process_starts_cold(server, tmp_path):
    code, out, err = finished("derive", "--output", str(tmp_path / "d.json"), OMP_NUM_THREADS="2")
    assert code == 0 and "PASS" in out
    assert "warm start refused (other load-time settings (OMP_NUM_THREADS)): starting cold" in err
    assert log_lines(server, "refused: derive") and not log_lines(server, "warm: ")


def test_without_a_server_every_step_starts_cold(tmp_path, monkeypatch):
    monkeypatch.setenv(warm_start.SOCKET_ENV, str(tmp_path / "no-server"))
    code, out, err = finished("derive", "--output", str(tmp_path / "d.json"))
    assert code == 0 and "PASS" in out and "warm start" not in err


def test_a_killed_job_takes_its_step_with_it(server, tmp_path):
    blocked = tmp_path / "never-written.npz"
    os.mkfifo(blocked)  # the step waits on it, without a writer, until it is killed
    job = step("metrics", "--settings", "{}", "--input", str(blocked), "--output", str(tmp_path / "m.json"))
    deadline = time.monotonic() + 60
    while not log_lines(server, "warm: metrics") and time.monotonic() < deadline:
        time.sleep(0.2)
    [line] = log_lines(server, "warm: metrics")
    forked = int(line.rsplit(" ", 1)[-1].rstrip(")"))
    job.send_signal(signal.SIGTERM)
    job.communicate(timeout=60)
    assert job.returncode == -signal.SIGTERM  # ended as the step did: by the signal
    with pytest.raises(ProcessLookupError):
        os.kill(forked, 0)  # gone, and reaped by the server


def test_the_server_ends_with_the_run_that_started_it(tmp_path):
    """A Snakemake killed outright runs no onerror: its server notices, and ends, removing its socket and the
    temporary folder that holds it."""
    (tmp_path / f"{warm_start.FOLDER_PREFIX}x").mkdir()
    socket_path = tmp_path / f"{warm_start.FOLDER_PREFIX}x" / "socket"
    starts_a_server = ("import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-m', "
                       f"'behind_rope.pipeline.warm_start', {str(socket_path)!r}, str(os.getpid())]); time.sleep(600)")
    run = subprocess.Popen([sys.executable, "-c", starts_a_server], env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    deadline = time.monotonic() + 120
    while not socket_path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert socket_path.exists()
    run.kill()
    run.wait()
    while socket_path.parent.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not socket_path.parent.exists()
