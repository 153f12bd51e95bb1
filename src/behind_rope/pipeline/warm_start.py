"""Warm starts: during a local run, a step starts as a fork of a process that has imported torch and
transformers already, instead of importing them again.

Importing them costs each step that loads a model about 3 CPU seconds before its first token, and a
cold default run starts some 120 such steps (docs/performance.md).  The Snakefile starts
one server per local run (:func:`start`); ``python -m behind_rope <step>`` asks it for a fork
(:func:`delegate`), which takes the job's arguments, working directory, environment and standard
streams, runs the step, and hands its exit status back to the job.

A fork runs the same code on the same kernels as a fresh process.  The server refuses a request whose
interpreter, module path or any variable read when the libraries load (threads, CPU kernels, allocator,
hub settings: :data:`LOAD_TIME_PREFIXES`) differs from its own, and such a step starts cold, as every
step does when no server runs (a cluster job, a command typed by hand, ``warm_start: false``).

    python -m behind_rope.pipeline.warm_start SOCKET PARENT_PID   # what start() runs
"""

from __future__ import annotations

import atexit
import gc
import glob
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

SOCKET_ENV = "BEHIND_ROPE_WARM_START"
FOLDER_PREFIX = "behind-rope-warm-"  # the temporary folder of a server's socket, which the server removes as it ends
HANDED_OVER_ENV = "BEHIND_ROPE_STEP_HANDED_OVER"
# Variables that a library reads once, when it loads: a fork inherits the server's values.
LOAD_TIME_PREFIXES = ("OMP_", "GOTO_", "OPENBLAS_", "MKL_", "VECLIB_", "NUMEXPR_", "KMP_", "ATEN_", "TORCH",
                      "PYTORCH_", "CUDA_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "PYTHON", "LD_", "MALLOC_", "GLIBC_")
# What the steps import that costs time: every step that loads a model needs most of it.
PRELOAD = (
    "torch",
    "numpy",
    "transformers",
    "transformers.models.llama.modeling_llama",
    "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.gemma3.modeling_gemma3",
    "transformers.models.smollm3.modeling_smollm3",
    "behind_rope.cli",
    "behind_rope.llm.score_run",
    "behind_rope.llm.loading",
    "behind_rope.llm.dequantize",
    "behind_rope.twins.train",
    "behind_rope.twins.gram",
)
# What Snakemake adds to the environment of a 1-thread job (the default for every step at every scale but
# the paper's): the server loads the libraries with it, so that 1-thread steps can start warm.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}
_server: dict = {}


def load_time_settings(environ) -> dict[str, str]:
    return {key: value for key, value in environ.items() if key.startswith(LOAD_TIME_PREFIXES)}


def why_not_warm(request: dict, environ: dict[str, str]) -> str | None:
    """Why a fork of this process, started with ``environ``, would not run ``request`` as a fresh process
    would; None if it would."""
    if os.path.realpath(request["executable"]) != os.path.realpath(sys.executable):
        return f"another interpreter ({request['executable']})"
    if request["path"] != sys.path:
        return "another module path"
    theirs, ours = load_time_settings(request["env"]), load_time_settings(environ)
    differing = sorted(key for key in theirs.keys() | ours.keys() if theirs.get(key) != ours.get(key))
    return f"other load-time settings ({', '.join(differing)})" if differing else None


# --- the job's side -------------------------------------------------------------------------------


def delegate(argv: list[str]) -> int | None:
    """Run ``python -m behind_rope`` with ``argv`` in a fork of the server; its exit status, or None when
    there is no server to take it (the caller then runs the step itself)."""
    path = os.environ.get(SOCKET_ENV)
    if not path:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        request = {"argv": [sys.argv[0], *argv], "cwd": os.getcwd(), "env": dict(os.environ),
                   "executable": sys.executable, "path": sys.path}
        socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
        reply = connection.recv(1 << 16)
    except OSError:  # no server (any more): the step starts cold
        return None
    if not reply:
        return None
    answer = json.loads(reply)
    if "refused" in answer:
        print(f"warm start refused ({answer['refused']}): starting cold", file=sys.stderr)
        return None
    pid = answer["pid"]
    os.environ[HANDED_OVER_ENV] = "1"  # for benchmarks/process_log: this process did not run the step

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    reply = connection.recv(1 << 16)
    if not reply:
        print(f"the warm-start server ended before step process {pid} did", file=sys.stderr)
        return 1
    status = json.loads(reply)["status"]
    if status < 0:  # killed by a signal: end the same way, as a shell's job would show it
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    return status


# --- the server's side ----------------------------------------------------------------------------


def _run_step(request: dict, fds: list[int]) -> None:
    """In the fork: become the job's process, run the step, exit with its status."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = request["argv"]
    tempfile.tempdir = None  # Snakemake gives each job its TMPDIR
    # Buffered as a fresh process's streams would be on the same files.
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    os.environ.pop(SOCKET_ENV, None)  # this process is the step's: it does not hand it on again
    status = 0
    try:
        # What `python -m behind_rope <step>` runs, from its own entry point, as in a fresh process.
        runpy.run_module("behind_rope", run_name="__main__", alter_sys=True)
    except SystemExit as ended:
        if isinstance(ended.code, int):
            status = ended.code
        elif ended.code is not None:
            print(ended.code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        status = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()  # what a fresh process runs at exit (benchmarks/process_log among it)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


def serve(path: str, parent: int) -> None:
    """Accept requests on the socket ``path`` until SIGTERM, or until process ``parent`` is gone."""
    started_with = dict(os.environ)
    gc.disable()  # as behind_rope.__main__ runs a step: the imports make many objects and no garbage
    for name in PRELOAD:
        importlib.import_module(name)
    gc.freeze()
    # What the imports set (torch sets TORCHINDUCTOR_CACHE_DIR), as they would in a fresh process.
    set_by_imports = {key: value for key, value in os.environ.items() if started_with.get(key) != value}
    # Only now: a step that starts while the imports run starts cold rather than wait for them.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the steps; Snakemake then stops us
    wake_read, wake_write = socket.socketpair()  # a child's exit wakes the loop at once
    wake_read.setblocking(False)
    wake_write.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    steps: dict[int, socket.socket] = {}  # pid -> the job's connection
    while not stopping and os.getppid() == parent:
        readable, _, _ = select.select([listener, wake_read, *steps.values()], [], [], 5.0)
        if wake_read in readable:
            while True:
                try:
                    wake_read.recv(4096)
                except BlockingIOError:
                    break
        if listener in readable:
            _accept(listener, steps, [listener, wake_read, wake_write], started_with, set_by_imports)
        for pid, connection in list(steps.items()):
            if connection in readable and not _still_there(connection):
                _signal(pid, signal.SIGTERM)  # the job went away (Snakemake killed it): its step goes too
        _reap(steps)
    for pid in steps:
        _signal(pid, signal.SIGTERM)
    while steps:
        pid, _ = os.wait()
        steps.pop(pid, None)
    listener.close()
    os.unlink(path)
    if Path(path).parent.name.startswith(FOLDER_PREFIX):  # the folder start() made for it: gone however the run ended
        shutil.rmtree(Path(path).parent, ignore_errors=True)


def _accept(listener: socket.socket, steps: dict, own_sockets: list, started_with: dict, set_by_imports: dict) -> None:
    connection, _ = listener.accept()
    try:
        data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        request = json.loads(data)
    except (OSError, ValueError):
        connection.close()
        return
    refused = why_not_warm(request, started_with) if len(fds) == 3 else "no standard streams"
    step = " ".join(request["argv"][1:2])
    if refused:
        print(f"refused: {step}: {refused}", flush=True)
        connection.send(json.dumps({"refused": refused}).encode())
    else:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                for signum, handler in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGCHLD, signal.SIG_DFL),
                                        (signal.SIGINT, signal.default_int_handler)):
                    signal.signal(signum, handler)
                for other in [*own_sockets, *steps.values(), connection]:
                    other.close()
                _run_step({**request, "env": {**request["env"], **set_by_imports}}, fds)
            finally:
                os._exit(1)
        steps[pid] = connection
        connection.send(json.dumps({"pid": pid}).encode())
        print(f"warm: {step} (process {pid})", flush=True)
    for fd in fds:
        os.close(fd)
    if refused:
        connection.close()


def _reap(steps: dict) -> None:
    while steps:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = steps.pop(pid, None)
        if connection is not None:
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            try:
                connection.send(json.dumps({"status": code}).encode())
            except OSError:
                pass
            connection.close()


def _still_there(connection: socket.socket) -> bool:
    try:
        return bool(connection.recv(1, socket.MSG_PEEK))
    except OSError:
        return False


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


# --- the run's side (the Snakefile) ---------------------------------------------------------------


def worthwhile(workflow, torch_environment: str) -> bool:
    """Whether this Snakemake run should start a server: it runs its jobs here, on a machine without an
    NVIDIA GPU (a process must not fork once CUDA may have been set up in it: a GPU machine's steps start
    cold), and it has a step to run that imports torch (its rule names ``torch_environment`` as its conda
    environment)."""
    if not workflow.local_exec or glob.glob("/dev/nvidia[0-9]*"):
        return False
    return any(job.rule.conda_env == torch_environment for job in workflow.dag.needrun_jobs())


def start() -> None:
    """Start the server for this Snakemake process, with the environment its 1-thread jobs get, and point
    its jobs at it."""
    folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)
    path = str(Path(folder) / "socket")
    log = open(Path(".snakemake") / "warm_start.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "behind_rope.pipeline.warm_start", path, str(os.getpid())],
                               env={**os.environ, **ONE_THREAD}, stdin=subprocess.DEVNULL,
                               stdout=log, stderr=subprocess.STDOUT)
    _server.update(process=process, folder=folder, log=log)
    os.environ[SOCKET_ENV] = path


def stop() -> None:
    """Stop the server :func:`start` started, if any, and wait for it."""
    if not _server:
        return
    os.environ.pop(SOCKET_ENV, None)
    process = _server["process"]
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    _server["log"].close()
    shutil.rmtree(_server["folder"], ignore_errors=True)
    _server.clear()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
