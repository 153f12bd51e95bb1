"""The conda environments that `--sdm conda` uses: each parses, pins what the pip lock pins, and the
light one really is enough for the light jobs."""

import ast
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT

ENVS = ("light", "heavy", "paper")
HEAVY_PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "gguf", "accelerate")
# Not in the pip lock, on purpose: the interpreter, pip itself, and
# TeX Live for the paper (Debian's packages, envs/tex-packages.txt, when not under --sdm conda).
OUTSIDE_THE_LOCK = {"python": "3.11", "pip": None, "texlive-core": "20230313", "latexmk": "4.88"}


def lock_pins():
    pins = {}
    for line in (ROOT / "envs" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def conda_pins(env):
    """{name: version} of a conda YAML, from both its conda and its pip dependencies."""
    pins = {}
    for dependency in env["dependencies"]:
        if isinstance(dependency, dict):
            pins.update(dict(line.lower().split("==") for line in dependency["pip"]))
        else:
            name, _, version = dependency.partition("=")
            pins[name.lower()] = version or None
    return pins


@pytest.mark.parametrize("name", ENVS)
def test_conda_env_parses_and_mirrors_the_lock(name):
    env = yaml.safe_load((ROOT / "envs" / f"{name}.yaml").read_text())
    assert env["name"] == f"behind-rope-{name}" and "conda-forge" in env["channels"]
    lock = lock_pins()
    pins = conda_pins(env)
    assert set(pins) - set(OUTSIDE_THE_LOCK)  # at least one package of the lock
    for package, version in pins.items():
        if package in OUTSIDE_THE_LOCK:
            assert version == OUTSIDE_THE_LOCK[package], f"{name}.yaml: {package}={version}"
        else:
            assert lock.get(package) == version, f"{name}.yaml pins {package}={version}, the lock {lock.get(package)}"
    assert pins["python"] == "3.11"


def test_only_the_heavy_env_has_torch_and_transformers():
    light, heavy, paper = (conda_pins(yaml.safe_load((ROOT / "envs" / f"{name}.yaml").read_text())) for name in ENVS)
    assert not set(HEAVY_PACKAGES) & (set(light) | set(paper))
    assert set(HEAVY_PACKAGES) <= set(heavy)
    assert {"texlive-core", "latexmk"} <= set(paper)


def test_every_rule_names_one_of_the_envs():
    rules = "".join(path.read_text() for path in (ROOT / "workflow" / "rules").glob("*.smk"))
    named = re.findall(r"^( +)conda:\n\1    (\w+)\n", rules, flags=re.MULTILINE)  # rules made in loops are indented
    assert named and {env for _, env in named} == {"LIGHT_ENV", "HEAVY_ENV", "PAPER_ENV"}
    assert rules.count("    shell:") + rules.count("    script:") == len(named)


# The Python modules and figure scripts that the light jobs import.
LIGHT_IMPORTS = ["behind_rope.__main__", "behind_rope.theory.derivation", "behind_rope.maths.metrics", "behind_rope.claims.decide",
                 "behind_rope.figures.plotting", "behind_rope.data.fetch", "behind_rope.atomic", "behind_rope.paper.document",
                 "behind_rope.paper.latex", "behind_rope.figures.table", "behind_rope.config",
                 "behind_rope.experiments.runs", "behind_rope.experiments.paths", "behind_rope.experiments.steps",
                 "behind_rope.experiments.resources", "behind_rope.experiments.pins",
                 "behind_rope.pipeline.codedigest", "behind_rope.simulation.variants", "behind_rope.maths.decompose", "behind_rope.claims.c5",
                 "behind_rope.claims.c3", "behind_rope.claims.format", "behind_rope.maths.position_sources",
                 "behind_rope.claims.seeds", "behind_rope.claims.panels", "behind_rope.claims.gate", "behind_rope.claims.preregistration",
                 "behind_rope.claims.position", "behind_rope.claims.revision", "behind_rope.claims.tables", "behind_rope.twins.vocabulary",
                 "behind_rope.pipeline.allocator"]
BLOCK_HEAVY = ("import sys\n"
               "class Block:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               f"        if name.split('.')[0] in {HEAVY_PACKAGES!r}:\n"
               "            raise ImportError(f'{name} is not in the light environment')\n"
               "sys.meta_path.insert(0, Block())\n")


def library_imports(source: str) -> list[str]:
    """The import statements of ``source`` that reach into the library, each on one line as written (read from
    the syntax tree, so that an import wrapped over several lines counts too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("behind_rope"):
            found.append(f"from {node.module} import {', '.join(alias.name for alias in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"import {alias.name}" for alias in node.names if alias.name.startswith("behind_rope")]
    return found


def import_without_heavy_packages(modules, scripts=None):
    """Import ``modules``, and run every library import of the figure scripts (``scripts``: their sources), with
    the heavy packages blocked."""
    scripts = scripts if scripts is not None else [path.read_text() for path in
                                                   sorted((ROOT / "workflow" / "scripts").glob("*.py"))]
    statements = [f"import {module}" for module in modules] + [line for source in scripts for line in library_imports(source)]
    code = BLOCK_HEAVY + "\n".join(dict.fromkeys(statements)) + "\n"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"})


def test_light_jobs_import_nothing_from_the_heavy_env():
    done = import_without_heavy_packages(LIGHT_IMPORTS)
    assert done.returncode == 0, done.stderr
    # The check can fail: a heavy module does not import under it, named as a module or by a script's import.
    blocked = import_without_heavy_packages(["behind_rope.capture.scores"], scripts=[])
    assert blocked.returncode != 0 and "not in the light environment" in blocked.stderr
    script = "from behind_rope.figures.plotting import (\n    plt,\n)\nfrom behind_rope.capture import scores\n"
    blocked = import_without_heavy_packages([], scripts=[script])
    assert blocked.returncode != 0 and "not in the light environment" in blocked.stderr


def test_every_direct_dependency_is_locked_and_torch_is_pinned():
    lock = lock_pins()
    direct = [re.split(r"[=<>]", line)[0].lower() for line in (ROOT / "envs" / "requirements.in").read_text().splitlines()
              if line and not line.startswith("#")]
    assert [name for name in direct if name not in lock] == []
    assert lock["torch"] == "2.13.0"
