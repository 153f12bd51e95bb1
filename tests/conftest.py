import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_PARTS = ["Snakefile", "profiles", "workflow", "config", "envs", "src", "paper"]
# Big intermediate files that no test reads again once the smoke run is done.
HEAVY_RESULTS = ("models", "raw")


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
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def copy_workflow(destination: Path) -> Path:
    destination.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=shutil.ignore_patterns("__pycache__", "build"))
        else:
            shutil.copy2(source, destination / part)
    return destination


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """A copy of the workflow, run once end to end at the smoke scale."""
    workdir = copy_workflow(tmp_path_factory.mktemp("smoke"))
    snakemake(workdir, "--configfile", "config/smoke.yaml")
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
