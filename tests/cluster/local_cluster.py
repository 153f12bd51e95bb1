"""The local single-node SLURM cluster of slurm_up.sh / slurm_down.sh, for the tests and the benchmark.

Every call that could hang (daemons, sacct, a Snakemake run that waits on the cluster) runs under
`timeout -k`, so a broken cluster fails a test instead of stalling CI.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from behind_rope.pipeline.workspace import snakemake_environment

CLUSTER = Path(__file__).resolve().parent
ROOT = CLUSTER.parents[1]
SLURM_PROFILE = ROOT / "workflow" / "profiles" / "slurm"


def run_bounded(command, seconds, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "-k", "30", str(seconds), *command], capture_output=True, text=True, **kwargs)


def environment() -> dict[str, str]:
    state = os.environ.get("BEHIND_ROPE_SLURM_DIR", "/tmp/behind-rope-slurm")
    return {**os.environ, "BEHIND_ROPE_SLURM_DIR": state}


def start(env: dict[str, str]) -> dict[str, str]:
    """Start the cluster (installing SLURM if needed); return ``env`` with what its clients need."""
    up = run_bounded(["bash", str(CLUSTER / "slurm_up.sh")], 600, env=env)
    if up.returncode != 0:
        raise RuntimeError(f"slurm_up.sh failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}")
    client = dict(env)
    for line in (Path(env["BEHIND_ROPE_SLURM_DIR"]) / "env.sh").read_text().splitlines():
        exported = re.match(r"export (\w+)=(.*)", line)
        if exported:
            client[exported[1]] = exported[2].strip("'\"")
    return client


def stop(env: dict[str, str]) -> None:
    run_bounded(["bash", str(CLUSTER / "slurm_down.sh")], 120, env=env)


def cluster_profile(folder: Path) -> Path:
    """workflow/profiles/slurm with profile_overlay.yaml laid over it key by key, and the local partitions."""
    profile = yaml.safe_load((SLURM_PROFILE / "profile.yaml").read_text())
    for key, value in yaml.safe_load((CLUSTER / "profile_overlay.yaml").read_text()).items():
        if isinstance(value, dict):
            for inner, setting in value.items():
                if isinstance(setting, dict):
                    profile.setdefault(key, {}).setdefault(inner, {}).update(setting)
                else:
                    profile.setdefault(key, {})[inner] = setting
        else:
            profile[key] = value
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "profile.yaml").write_text(yaml.safe_dump(profile))
    shutil.copy(CLUSTER / "partitions.yaml", folder / "partitions.yaml")
    return folder


def snakemake_on_slurm(workdir: Path, env: dict[str, str], *args: str, seconds: int = 1500):
    """Run Snakemake in ``workdir`` through the cluster, with the test profile."""
    profile = cluster_profile(workdir / ".cluster-profile")
    command = [sys.executable, "-m", "snakemake", "--workflow-profile", str(profile), *args]
    return run_bounded(command, seconds, cwd=workdir, env=snakemake_environment(workdir, {**env, "HF_HUB_OFFLINE": "1"}))
