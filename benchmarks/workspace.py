"""Copies of the workflow to run somewhere else (a benchmark's cold run, a test's smoke run), and the disk they take."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a copy of the workflow needs to run: the rules, the config, the library, the environments and the paper.
WORKFLOW_PARTS = ["Snakefile", "profiles", "workflow", "config", "envs", "src", "paper"]


def copy_workflow(destination: Path) -> Path:
    """The workflow's parts copied into ``destination`` (no results, no build folders); a part that is a link in
    the repository (``profiles``) stays a link, so that a copy inside a clone matches its commit."""
    destination.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        source = ROOT / part
        if source.is_symlink():
            (destination / part).symlink_to(source.readlink())
        elif source.is_dir():
            shutil.copytree(source, destination / part, ignore=shutil.ignore_patterns("__pycache__", "build"))
        else:
            shutil.copy2(source, destination / part)
    return destination


def disk_gb(folder: Path) -> float:
    """The disk space the files under ``folder`` take (hard links counted once), in GB; 0 if it is missing."""
    blocks = {}
    for path in folder.rglob("*"):
        info = path.lstat()  # one call per file; a link is not followed
        if stat.S_ISREG(info.st_mode):
            blocks[info.st_dev, info.st_ino] = info.st_blocks
    return sum(blocks.values()) * 512 / 1e9
