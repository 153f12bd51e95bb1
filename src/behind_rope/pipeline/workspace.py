"""Copies of the workflow that run somewhere else: a benchmark's cold run, a test's smoke run, and the exploratory
arm, which ``snakemake exploratory`` runs as the whole workflow in a folder of its own (:func:`run_arm`).

The exploratory arm draws other data than the default run (config/exploratory.yaml: the seeds and the corpus the
criteria were shaped on), so every output that a seed or the corpus reaches differs and none can share the default
run's paths.  It runs in ``results/exploratory/run/``, a copy of the checkout with its own Snakemake record, so that
a second ``snakemake exploratory`` reruns there only what changed, and its claims and row are copied out.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from behind_rope import atomic

# What a copy of the workflow needs to run: the rules, the config, the library, the environments and the paper.
WORKFLOW_PARTS = ["Snakefile", "profiles", "workflow", "config", "envs", "src", "paper"]
LEFT_OUT = ("__pycache__", "build")  # byte code and build folders
EXPLORATORY_CONFIG = "config/exploratory.yaml"
# What the arm's run writes that `snakemake exploratory` keeps: the claims and the row for the record.
ARM_OUTPUTS = ("results/claims.json", "results/registration.yaml")


def snakemake_environment(checkout: Path, environ=os.environ) -> dict[str, str]:
    """``environ`` with ``checkout``'s library first on ``PYTHONPATH``: what Snakemake needs to run a copy of the
    workflow with a Python set up for another checkout, whose library the copy's Snakefile would refuse."""
    return {**environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(checkout).resolve() / "src"),
                                                                   environ.get("PYTHONPATH")]))}


def copy_workflow(source: Path, destination: Path) -> Path:
    """The workflow's parts of ``source`` copied into ``destination`` (no results, no build folders), each part
    replacing what was there and each file keeping its times; a part that is a link in the repository
    (``profiles``) stays a link, so that a copy inside a clone matches its commit."""
    destination.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        origin, copy = source / part, destination / part
        if copy.is_symlink() or copy.is_file():
            copy.unlink()
        elif copy.is_dir():
            shutil.rmtree(copy)
        if origin.is_symlink():
            copy.symlink_to(origin.readlink())
        elif origin.is_dir():
            shutil.copytree(origin, copy, ignore=shutil.ignore_patterns(*LEFT_OUT))
        else:
            shutil.copy2(origin, copy)
    return destination


def _tracked_files(checkout: Path) -> list[str] | None:
    """The files git tracks in ``checkout`` (None where it is no git checkout)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=checkout, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [name for name in listed.decode().split("\0") if name]


def copy_checkout(checkout: Path, destination: Path) -> Path:
    """Every file git tracks in ``checkout``, as it is in the work tree, copied into ``destination`` in place of
    what was there (results and Snakemake's record kept), so that git, pointed at ``checkout``'s history with
    ``destination`` as its work tree, sees the checkout's own state; a checkout without git gets
    :func:`copy_workflow`."""
    tracked = _tracked_files(checkout)
    if tracked is None:
        return copy_workflow(checkout, destination)
    destination.mkdir(parents=True, exist_ok=True)
    for entry in destination.iterdir():
        if entry.name not in ("results", ".snakemake"):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    for name in tracked:
        origin, copy = checkout / name, destination / name
        if not origin.exists() and not origin.is_symlink():
            continue  # deleted in the work tree, not yet in git
        copy.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_symlink():
            copy.symlink_to(origin.readlink())
        else:
            shutil.copy2(origin, copy)
    return destination


def workflow_digest(checkout: Path) -> str:
    """A digest of every file of the workflow's parts: what the exploratory arm's job reruns on."""
    digest = hashlib.sha256()
    for part in WORKFLOW_PARTS:
        root = checkout / part
        files = [root] if root.is_file() else sorted(path for path in root.rglob("*") if path.is_file()
                                                     and not set(path.relative_to(root).parts) & set(LEFT_OUT))
        for path in files:
            digest.update(str(path.relative_to(checkout)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def run_arm(python: str, checkout: Path, workdir: Path, configfiles: list[str], config: list[str], cores: int,
            outputs: dict[str, Path]) -> None:
    """Run the workflow of ``checkout`` in ``workdir``, with the Snakemake of ``python``, on the exploratory arm's
    data: the run's own config files (``configfiles``) with config/exploratory.yaml over them, then its ``--config``
    items (``config``, as ``key=value``); copy :data:`ARM_OUTPUTS` to ``outputs`` (by the name of each)."""
    copy_checkout(checkout, workdir)
    command = [python, "-m", "snakemake", "--cores", str(cores), *ARM_OUTPUTS,
               "--configfile", *configfiles, EXPLORATORY_CONFIG, *(["--config", *config] if config else [])]
    environment = snakemake_environment(workdir)
    if (checkout / ".git").exists():
        # The registration's commit and date, and the row's commit, come from the checkout's history; the copy is
        # the work tree git compares it with, and git writes nothing into the checkout's index.
        environment |= {"GIT_DIR": str((checkout / ".git").resolve()), "GIT_WORK_TREE": str(workdir.resolve()),
                        "GIT_OPTIONAL_LOCKS": "0"}
    print(f"The exploratory arm in {workdir}: {' '.join(command[1:])}", flush=True)
    subprocess.run(command, cwd=workdir, env=environment, check=True)
    for name in ARM_OUTPUTS:
        atomic.write_bytes(outputs[name], (workdir / name).read_bytes())
