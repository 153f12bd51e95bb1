"""Warm starts against fewer, fatter processes, side by side on the same score runs (a one-off study).

    python benchmarks/warm_or_fat.py [--model gemma3] [--inputs first]

Takes every score run of one model from the default run's DAG (`snakemake -n -p --forceall`: its own
runs, its variants' and every token set's), and runs them three ways, one after another on 1 thread each:
- **cold**: each run its own `python -m behind_rope scores` process, as a cluster starts it;
- **warm**: each run a fork of a process that has imported what the warm-start server imports
  (behind_rope.pipeline.warm_start.PRELOAD), as a local run starts it;
- **fat**: every run in one process, one after another, each model loaded once (a variant that scales the
  RoPE base loads its own): the model's runs as one job.
Prints the CPU time of each way (getrusage of the processes, exact) and their ratios, and checks that the
three give the same arrays bit for bit.  Writes nothing under results/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def score_commands(model: str, inputs: str | None = None) -> list[list[str]]:
    """The `behind_rope scores` command lines of every score run of ``model`` and its variants (on ``inputs``
    only, if given)."""
    listing = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--forceall", "--cores", "2"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    commands = []
    for line in listing.splitlines():
        if "behind_rope scores " not in line:
            continue
        argv = shlex.split(line[line.index("python -m"):].split(" > ", 1)[0])
        settings = json.loads(argv[argv.index("--settings") + 1])
        if settings["model"].split(".", 1)[0] == model and inputs in (None, settings["inputs"]):
            commands.append(argv[argv.index("-m") + 2:])  # the step's own arguments, after `-m behind_rope`
    return commands


def with_output(argv: list[str], folder: Path, k: int) -> list[str]:
    argv = list(argv)
    argv[argv.index("--output") + 1] = str(folder / f"{k}.npz")
    return argv


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold(commands, folder: Path) -> float:
    before = children_cpu()
    for k, argv in enumerate(commands):
        subprocess.run([sys.executable, "-m", "behind_rope", *with_output(argv, folder, k)], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return children_cpu() - before


def warm(commands, folder: Path) -> float:
    """Forks of a process that has imported PRELOAD; the parent's own imports are not counted (the server's
    are paid once per run of the whole DAG)."""
    script = f"""
import importlib, os, sys, resource
from behind_rope.pipeline.warm_start import PRELOAD
for name in PRELOAD:
    importlib.import_module(name)
total = 0.0
for argv in {[with_output(argv, folder, k) for k, argv in enumerate(commands)]!r}:
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1); os.dup2(devnull, 2)
        from behind_rope.__main__ import run_without_collector
        run_without_collector(argv)
        os._exit(0)
    _, status, usage = os.wait4(pid, 0)
    assert status == 0, status
    total += usage.ru_utime + usage.ru_stime
print(total)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1])


def fat(commands, folder: Path) -> float:
    script = f"""
import json
from behind_rope.__main__ import run_without_collector
from behind_rope.llm import score_run

load, loaded = score_run.load_score_model, {{}}

def load_once(settings):
    key = json.dumps([settings["source"], (settings.get("intervention") or {{}}).get("ntk_factor"),
                      settings.get("device"), settings.get("dtype")], sort_keys=True)
    if key not in loaded:
        loaded[key] = load(settings)
    return loaded[key]

score_run.load_score_model = load_once
for argv in {[with_output(argv, folder, k) for k, argv in enumerate(commands)]!r}:
    run_without_collector(argv)
"""
    before = children_cpu()
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return children_cpu() - before


def digests(folder: Path, count: int) -> list[str]:
    """The arrays of each output (its metadata's timings left out)."""
    import numpy as np

    found = []
    for k in range(count):
        with np.load(folder / f"{k}.npz", allow_pickle=False) as arrays:
            found.append(hashlib.sha256(b"".join(arrays[name].tobytes() for name in sorted(arrays)
                                                 if name != "metadata")).hexdigest())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gemma3")
    parser.add_argument("--inputs", help="only the runs on this token set (llm.inputs), e.g. first")
    args = parser.parse_args()
    commands = score_commands(args.model, args.inputs)
    if not commands:
        raise SystemExit(f"no score run of {args.model!r} in the default DAG")
    os.environ.update({name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    print(f"{len(commands)} score runs of {args.model}, 1 thread each, one after another")
    results, hashes = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for way, run in (("cold", cold), ("warm", warm), ("fat", fat)):
            folder = Path(scratch) / way
            folder.mkdir()
            started = time.perf_counter()
            results[way] = (run(commands, folder), time.perf_counter() - started)
            hashes[way] = digests(folder, len(commands))
            print(f"{way:5s} {results[way][0]:8.1f} CPU s {results[way][1]:8.1f} s wall", flush=True)
    base = results["cold"][0]
    print("CPU time against cold: " + ", ".join(f"{way} {cpu / base:.2f}" for way, (cpu, _) in results.items()))
    print("fat against warm: " + f"{results['fat'][0] / results['warm'][0]:.2f}")
    same = all(hashes[way] == hashes["cold"] for way in hashes)
    print("the same arrays bit for bit in all three ways" if same else
          "ARRAYS DIFFER: " + ", ".join(way for way in hashes if hashes[way] != hashes["cold"]))


if __name__ == "__main__":
    main()
