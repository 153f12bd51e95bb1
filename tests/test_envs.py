"""The conda YAML that `--sdm conda` uses must pin what the pip lock pins."""

import re

import yaml

from conftest import ROOT


def lock_pins():
    pins = {}
    for line in (ROOT / "envs" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def test_conda_env_mirrors_the_lock():
    env = yaml.safe_load((ROOT / "envs" / "behind_rope.yaml").read_text())
    lock = lock_pins()
    conda_pins = [d for d in env["dependencies"] if isinstance(d, str) and "=" in d and not d.startswith("python=")]
    assert conda_pins, "the conda environment pins nothing"
    for pin in conda_pins:
        name, version = pin.split("=")
        assert lock.get(name.lower()) == version, f"{name}: conda pins {version}, lock pins {lock.get(name.lower())}"
    pip_part = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for pin in pip_part:
        name, version = pin.split("==")
        assert lock[name.lower()] == version


def test_every_direct_dependency_is_locked_and_torch_is_pinned():
    lock = lock_pins()
    direct = [re.split(r"[=<>]", line)[0].lower() for line in (ROOT / "envs" / "requirements.in").read_text().splitlines()
              if line and not line.startswith("#")]
    assert [name for name in direct if name not in lock] == []
    assert lock["torch"] == "2.13.0"
