"""The verdict gate's cache: the outputs of the last default run on this machine, so that the gate reruns only
what changed since.

CI clones the project afresh each time, and a cold default run is most of CI's time.  This keeps the last
gate run's ``results/`` (hard links: no second copy on disk) with Snakemake's own record of each job
(``.snakemake/metadata``), and lays both into a fresh checkout before its gate run.  What reruns is then what
Snakemake's rerun triggers find changed, job by job: its parameters, the project's code digests among them
(``step_code``), so an edit of the code a step imports; its shell command or script; its set of input files;
an input newer than its outputs and with other contents.  A rerun job's outputs are new, and so everything
downstream of them reruns.  What no trigger sees, the installed software and the CPU's instruction set, is the
cache's key: another lock or another CPU finds no entry and runs cold.

Only a run that finished is kept, and it replaces the entry before it: one entry per machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from behind_rope.data.fetch import cache_root

# Files that Snakemake or a job writes into rather than replacing (a log by `> {log}`, a benchmark): copied,
# so that a run never writes into the cache's copy.
COPIED = {"logs", "benchmarks"}


def key(checkout: Path) -> str:
    """The lock (as envs/setup.sh hashes it) and the CPU capability that torch's kernels use."""
    import torch

    lock = hashlib.sha256(b"".join((checkout / name).read_bytes() for name in ("envs/requirements.txt", "pyproject.toml")))
    return f"{lock.hexdigest()[:16]}-{torch.backends.cpu.get_cpu_capability().lower()}"


def entry(checkout: Path) -> Path:
    return cache_root() / "gate" / key(checkout)


def _link_tree(source: Path, destination: Path) -> None:
    from conftest import link_or_copy

    def copy(src, dst):
        return shutil.copy2(src, dst) if Path(src).relative_to(source).parts[0] in COPIED else link_or_copy(src, dst)

    shutil.copytree(source, destination, symlinks=True, copy_function=copy)


def restore(checkout: Path, cached: Path) -> bool:
    """Lay the cached run into ``checkout``, if there is one and the checkout has no results of its own."""
    results = checkout / "results"
    if not (cached / "results").is_dir() or (results.is_dir() and any(results.iterdir())):
        return False
    if results.is_dir():  # the empty folder that test.sh makes to check its disk
        results.rmdir()
    _link_tree(cached / "results", results)
    (checkout / ".snakemake").mkdir(exist_ok=True)
    shutil.copytree(cached / "metadata", checkout / ".snakemake" / "metadata", dirs_exist_ok=True)
    return True


def store(checkout: Path, cached: Path) -> None:
    """Keep the checkout's finished run as the entry ``cached``, in place of every entry before it."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.parent / f".{cached.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    _link_tree(checkout / "results", partial / "results")
    shutil.copytree(checkout / ".snakemake" / "metadata", partial / "metadata")
    for old in cached.parent.iterdir():  # another lock's or an interrupted store's
        if old != partial:
            shutil.rmtree(old, ignore_errors=True)
    partial.rename(cached)
