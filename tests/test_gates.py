"""Style gates that CI runs through ./test.sh: snakefmt on the Snakefile and the rules, ruff on the
Python (settings in pyproject.toml).  `snakemake --lint` is in test_workflow.py."""

import ast
import re
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
    assert len(lines) <= 120
    block = lines[lines.index("```bash") + 1:lines.index("```")]
    assert [line.split()[0] for line in block] == ["./run.sh", "./test.sh"] and lines.index("```bash") < 4
    assert "./test.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_results_and_performance_pages_stay_pages_a_reader_finishes():
    assert len((ROOT / "docs" / "results.md").read_text().splitlines()) <= 500
    assert len((ROOT / "docs" / "performance.md").read_text().splitlines()) <= 150


def test_the_readme_claims_table_says_what_the_verdict_gate_holds():
    import json
    import re

    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- readme_claims:start -->")[1].split("<!-- readme_claims:end -->")[0]
    found = dict(re.findall(r"^\| ([CR]\w+) \| .* \| \*\*(PASS|FAIL|UNDECIDED)\*\* \| [^|]+ \|$", table, re.MULTILINE))
    expected = json.loads((ROOT / "tests" / "expected_verdicts.json").read_text())["verdicts"]
    assert found == {path.split(".")[0]: outcome for path, outcome in expected.items() if path.endswith(".outcome")
                     and path.count(".") == 1}


def test_config_readme_names_every_key_of_the_config():
    import yaml

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    documented = (ROOT / "config" / "README.md").read_text()
    keys = {key for section in config.values() if isinstance(section, dict) for key in section} | set(config)
    keys -= set(config["pretrained"]) | set(config["data"]["corpora"]) | set(config["simulation"]["variants"])
    keys -= set(config["training"]["twins"]) | set(config["llm"]["inputs"])  # names chosen by the user
    keys |= {key for key in config["training"]["model"]}
    assert sorted(key for key in keys if f"`{key}`" not in documented) == []


def import_graph(package: Path) -> dict[str, set[str]]:
    """Which modules of ``package`` each of its modules imports, at the top or inside a function alike (a
    deferred import is still a dependency: it only hides a cycle until the call)."""
    import ast

    name = package.name
    modules = {".".join((name, *path.relative_to(package).with_suffix("").parts)).removesuffix(".__init__"): path
               for path in package.rglob("*.py")}
    graph = {}
    for module, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == name:
                targets |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                            for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[module] = {target for target in targets if target in modules and target != module}
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of modules (the first again at the end), or None."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once every path from it is searched

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[module] = "done"
        return None

    return next((found for module in sorted(graph) if module not in state
                 and (found := visit(module, [module]))), None)


def test_the_library_has_no_import_cycle():
    cycle = import_cycle(import_graph(ROOT / "src" / "behind_rope"))
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}; move what both need into one of them, or a third module"


def test_the_cycle_check_finds_a_deferred_cycle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import g\n")
    (package / "b.py").write_text("def g():\n    from pkg import a\n")
    (package / "c.py").write_text("import pkg.a\n")
    assert import_cycle(import_graph(package)) == ["pkg.a", "pkg.b", "pkg.a"]
    (package / "b.py").write_text("def g():\n    return 1\n")
    assert import_cycle(import_graph(package)) is None


def test_the_library_is_one_subpackage_per_stage_each_saying_what_it_owns():
    package = ROOT / "src" / "behind_rope"
    stages = {"theory", "simulation", "data", "twins", "llm", "position", "revision", "claims", "figures", "paper"}
    subpackages = {path.parent.name for path in package.glob("*/__init__.py")}
    assert stages | {"maths", "capture", "experiments", "pipeline", "cli"} == subpackages
    for name in subpackages:
        docstring = ast.get_docstring(ast.parse((package / name / "__init__.py").read_text()))
        assert docstring and len(docstring) > 40, f"behind_rope/{name}/__init__.py must say what it owns"
    top = {path.stem for path in package.glob("*.py")} - {"__init__", "__main__"}
    # the registration sits below the config, which draws a run's seeds from it (tests/test_layering.py)
    assert top == {"atomic", "config", "device", "registration"}, f"modules at the top: {sorted(top)}"


def test_the_shared_rules_file_stays_short():
    lines = (ROOT / "workflow" / "rules" / "common.smk").read_text().count("\n")
    assert lines <= 100, f"workflow/rules/common.smk has {lines} lines; move helpers to behind_rope.pipeline.rules"


def test_the_library_and_the_benchmarks_import_by_name_without_editing_the_import_path():
    """The benchmarks are a package (``python -m benchmarks.<name>``) and the library is installed: neither puts
    folders on ``sys.path`` to reach the other."""
    edits = [f"{path.relative_to(ROOT)}:{node.lineno}" for folder in ("src", "benchmarks")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in {"insert", "append", "extend"}
             and isinstance(node.value, ast.Attribute) and node.value.attr == "path"
             and isinstance(node.value.value, ast.Name) and node.value.value.id == "sys"]
    assert edits == []


# A function a reader holds in mind: at most about 80 lines and 10 parameters, unless the comment just above its
# `def` says why it is one piece.
MAX_FUNCTION_LINES, MAX_PARAMETERS, REASON = 80, 10, "# One piece:"


def oversized_functions(source: str) -> list[str]:
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = node.args
        parameters = len(arguments.posonlyargs + arguments.args + arguments.kwonlyargs)
        length = node.end_lineno - node.lineno + 1
        above = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        comment = []
        for line in reversed(lines[:above - 1]):
            if not line.strip().startswith("#"):
                break
            comment.append(line.strip())
        if (length > MAX_FUNCTION_LINES or parameters > MAX_PARAMETERS) and not any(c.startswith(REASON) for c in comment):
            found.append(f"{node.name} ({length} lines, {parameters} parameters)")
    return found


def test_every_function_of_the_library_is_short_or_says_why_it_is_one_piece():
    oversized = [f"{path.relative_to(ROOT)}: {name}" for path in sorted((ROOT / "src").rglob("*.py"))
                 for name in oversized_functions(path.read_text())]
    assert oversized == [], f"split these, group their parameters, or say why above the def ({REASON} ...)"


def test_the_function_size_gate_finds_a_long_function_and_accepts_a_reason():
    long_body = "\n".join(f"    x{k} = {k}" for k in range(MAX_FUNCTION_LINES))
    many = ", ".join(f"p{k}" for k in range(MAX_PARAMETERS + 1))
    assert oversized_functions(f"def f():\n{long_body}\n") == [f"f ({MAX_FUNCTION_LINES + 1} lines, 0 parameters)"]
    assert oversized_functions(f"def g({many}, **rest):\n    pass\n") == [f"g (2 lines, {MAX_PARAMETERS + 1} parameters)"]
    assert oversized_functions(f"{REASON} a loop read as one.\ndef f():\n{long_body}\n") == []


def test_the_reading_paths_in_usage_name_files_that_exist_and_stay_within_four():
    """docs/usage.md's table of the questions a reader asks first: each answer goes from the rule to the code in at
    most four steps (a step may name alternatives), and every file it names exists."""
    text = (ROOT / "docs" / "usage.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| How ")]
    assert len(rows) >= 3
    for row in rows:
        steps = row.split(" | ")[1].split(" → ")
        assert len(steps) <= 4, row
        for step in steps:
            files = re.findall(r"`((?:workflow|src)/[\w/.]+\.(?:py|smk))`", step)
            assert files, f"a step names no file: {step}"
            assert all((ROOT / name).is_file() for name in files), step
