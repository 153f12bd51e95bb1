"""Copies of the workflow to run somewhere else (a benchmark's cold run, a test's smoke run), and the disk they take."""

from __future__ import annotations

import stat
from pathlib import Path

from behind_rope.pipeline import workspace
from behind_rope.pipeline.workspace import WORKFLOW_PARTS  # noqa: F401 (what a copy holds, for the benchmarks)

ROOT = Path(__file__).resolve().parents[1]


def copy_workflow(destination: Path) -> Path:
    """This checkout's workflow copied into ``destination`` (behind_rope.pipeline.workspace.copy_workflow)."""
    return workspace.copy_workflow(ROOT, destination)


def disk_gb(folder: Path) -> float:
    """The disk space the files under ``folder`` take (hard links counted once), in GB; 0 if it is missing."""
    blocks = {}
    for path in folder.rglob("*"):
        info = path.lstat()  # one call per file; a link is not followed
        if stat.S_ISREG(info.st_mode):
            blocks[info.st_dev, info.st_ino] = info.st_blocks
    return sum(blocks.values()) * 512 / 1e9
