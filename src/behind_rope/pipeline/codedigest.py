"""Which library code a workflow step runs, read from its imports, and a digest of it.

Snakemake reruns a shell rule when its command changes, and a script rule when its script does,
but not when the library code they call changes.  Each rule therefore passes a digest of that code
as a param.  The code is found from the imports themselves, never from a hand-kept list: a CLI
step's handler function (its own imports, plus its module's top-level imports) or a figure
script, then every ``behind_rope`` module those import, transitively.  Editing what a module a
step imports does reruns the step; editing any other module, or a comment, a docstring or the layout of
any module, reruns nothing (the digest is of the parsed code, :func:`what_it_does`).

Finding the imports parses some 60 modules: inside Snakemake's process, about a second of a no-op
rerun's three to four (docs/performance.md).  So the digests are kept in
``.snakemake/behind_rope_code_digests.json``, beside Snakemake's own records, under a fingerprint of
every module of the package (and a script's own bytes): any edit of the package makes every digest
be worked out again, as without the file.
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import cache
from pathlib import Path

from behind_rope.atomic import write_text

PACKAGE = "behind_rope"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # src/behind_rope
KEPT_DIGESTS = Path(".snakemake") / "behind_rope_code_digests.json"  # in the directory Snakemake runs in


def _module_file(name: str) -> Path | None:
    """The source file of ``behind_rope.<...>``, or None for anything outside the package."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    parts = name.split(".")[1:]
    for candidate in (PACKAGE_DIR.joinpath(*parts).with_suffix(".py"), PACKAGE_DIR.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _imported_names(nodes) -> set[str]:
    """Module names that import statements among ``nodes`` (and their children) load."""
    names = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Import):
                names |= {alias.name for alias in child.names}
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                names.add(child.module)
                # `from behind_rope.figures import plotting` imports the module behind_rope.figures.plotting
                names |= {f"{child.module}.{alias.name}" for alias in child.names}
    return {name for name in names if _module_file(name) is not None}


@cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@cache
def _module_imports(name: str) -> frozenset[str]:
    """The package modules that ``name`` imports anywhere in its code (walked once per run)."""
    return frozenset(_imported_names([_parse(_module_file(name))]))


def _closure(start: set[str]) -> set[str]:
    """Every package module reachable from ``start`` through imports anywhere in their code."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += sorted(_module_imports(name) - seen)
        parent = name.rsplit(".", 1)[0]
        if parent != name and _module_file(parent) is not None:  # importing a.b runs a/__init__.py
            todo.append(parent)
    return seen


def step_modules(module: str, function: str) -> set[str]:
    """The package modules a CLI handler runs: its module, and the closure of its own and top-level imports."""
    tree = _parse(_module_file(module))
    top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    handlers = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    if not handlers:
        raise ValueError(f"{module} has no function {function!r}")
    # The handler's own module counts as code (its bytes), but its other handlers' imports do not.
    return _closure(_imported_names(top_level + handlers)) | {module}


def script_modules(script: str | Path) -> set[str]:
    """The package modules a figure script imports, transitively."""
    return _closure(_imported_names([ast.parse(Path(script).read_text())]))


def what_it_does(path: Path) -> str:
    """A module's code as Python runs it: its syntax tree without docstrings, so that a comment, a docstring or
    a change of layout leaves it as it is, and any change of what the code does changes it."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def digest(modules: set[str]) -> str:
    """A short hash of what ``modules`` do (their names and :func:`what_it_does`, in a fixed order)."""
    hasher = hashlib.sha256()
    for name in sorted(modules):
        hasher.update(name.encode() + b"\0" + what_it_does(_module_file(name)).encode() + b"\0")
    return hasher.hexdigest()[:16]


def handler_location(step: str) -> tuple[str, str]:
    """(module, function) of the handler of ``python -m behind_rope <step>``: the function decorated ``@step("<step>", ...)``."""
    for path in sorted((PACKAGE_DIR / "cli").glob("*.py")):
        for node in _parse(path).body:
            for decorator in getattr(node, "decorator_list", []):
                if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "step" and decorator.args
                        and getattr(decorator.args[0], "value", None) == step):
                    return f"{PACKAGE}.cli.{path.stem}", node.name
    raise ValueError(f"no CLI step named {step!r} in {PACKAGE_DIR / 'cli'}")


@cache
def package_fingerprint() -> str:
    """A hash of every module of the package, names and bytes: any edit changes it (read once per Snakemake start)."""
    hasher = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        hasher.update(str(path.relative_to(PACKAGE_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()


@cache
def _kept_digests() -> dict[str, str]:
    """The digests kept for the package as it is now (empty for another fingerprint, or no file)."""
    try:
        kept = json.loads(KEPT_DIGESTS.read_text())
    except (OSError, ValueError):
        return {}
    return dict(kept.get("digests", {})) if kept.get("package") == package_fingerprint() else {}


def _kept(key: str, work_out) -> str:
    """The digest kept under ``key``, else ``work_out()``, kept for the next start where Snakemake keeps its
    records (``.snakemake``, which the rules make; anywhere else every digest is worked out)."""
    if not KEPT_DIGESTS.parent.is_dir():
        return work_out()
    digests = _kept_digests()
    if key not in digests:
        digests[key] = work_out()
        try:
            write_text(KEPT_DIGESTS, json.dumps({"package": package_fingerprint(), "digests": digests}, sort_keys=True))
        except OSError:  # a read-only .snakemake: the next start works them out again
            pass
    return digests[key]


def step_code(step: str) -> str:
    """The digest a rule that runs ``python -m behind_rope <step>`` passes as its ``code`` param."""
    return _kept(f"step {step}", lambda: digest(step_modules(*handler_location(step))))


def script_code(script: str | Path) -> str:
    """The digest a figure rule passes as its ``code`` param (Snakemake already tracks the script itself)."""
    source = Path(script).read_bytes()  # its own imports: part of the key
    return _kept(f"script {Path(script).name} {hashlib.sha256(source).hexdigest()}", lambda: digest(script_modules(script)))
