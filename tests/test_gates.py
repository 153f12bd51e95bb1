"""Style gates that CI runs through ./test.sh: snakefmt on the Snakefile and the rules, ruff on the
Python (settings in pyproject.toml).  `snakemake --lint` is in test_workflow.py."""

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SNAKEMAKE_FILES = ["Snakefile", "workflow/rules"]
PYTHON_PATHS = ["src", "tests", "workflow/scripts", "benchmarks"]


def run(tool, *args, cwd=ROOT):
    executable = shutil.which(tool, path=str(Path(sys.executable).parent))
    assert executable, f"{tool} is not installed; it is in envs/requirements.txt"
    return subprocess.run([executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_snakefmt_leaves_the_snakefile_and_rules_unchanged():
    done = run("snakefmt", "--check", *SNAKEMAKE_FILES)
    assert done.returncode == 0, f"run `snakefmt {' '.join(SNAKEMAKE_FILES)}`:\n{done.stderr}"


def test_ruff_finds_nothing():
    done = run("ruff", "check", *PYTHON_PATHS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gates_fail_on_bad_code(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "Snakefile").write_text('rule a:\n  output: "a"\n  shell: "touch {output}"\n')
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f(l):\n    return zip(l, l)\n")
    assert run("snakefmt", "--check", "Snakefile", cwd=tmp_path).returncode != 0
    findings = run("ruff", "check", "--output-format", "concise", "bad.py", cwd=tmp_path).stdout
    assert "F401" in findings and "E741" in findings and "B905" in findings


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250
    block = lines[lines.index("```bash") + 1:lines.index("```")]
    assert [line.split()[0] for line in block] == ["./run.sh", "./test.sh"] and lines.index("```bash") < 4
    assert "./test.sh" in (ROOT / ".ci" / "run").read_text()


def test_config_readme_names_every_key_of_the_config():
    import yaml

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    documented = (ROOT / "config" / "README.md").read_text()
    keys = {key for section in config.values() if isinstance(section, dict) for key in section} | set(config)
    keys -= set(config["pretrained"]) | set(config["data"]["corpora"]) | set(config["simulation"]["variants"])
    keys -= set(config["training"]["twins"]) | set(config["llm"]["inputs"])  # names chosen by the user
    keys |= {key for key in config["training"]["model"]}
    assert sorted(key for key in keys if f"`{key}`" not in documented) == []
