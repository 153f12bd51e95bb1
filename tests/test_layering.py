"""Imports run down the stages: no package of behind_rope imports one of a later stage, and no two import
each other.  Read from the syntax tree of every module, so an import inside a function counts as much as one
at the top (a deferred import is still a dependency: it only hides a cycle until the call)."""

import ast
from pathlib import Path

from test_gates import import_cycle

from conftest import ROOT

PACKAGE = ROOT / "src" / "behind_rope"

# The top-level packages (and modules) of behind_rope, lowest first.  A package may import those of earlier
# layers only; packages of one layer import none of each other.  Why each sits where it does:
LAYERS = (
    # what every stage may use: writing files atomically; the device and dtype a step runs on
    ("atomic", "device"),
    # shared by the stages: the mathematics; the raw inputs (packages, GGUF files, corpus, tokenizers)
    ("maths", "data"),
    # the score capture, which the LLMs' score runs, the twins' Gram matrices and the patching read; what it
    # records of a score matrix may use the shared maths
    ("capture",),
    # the stages that compute, in the order of the DAG: the derivation, the simulations (which check it),
    # the twins, then the pretrained LLMs, whose score runs score a twin too (extraction after training).
    # None of them reads the config: a step gets its settings as JSON from its rule.
    ("theory",),
    ("simulation",),
    ("twins",),
    ("llm",),
    # the registration: the hash of every deciding value, and the seeds a confirmatory run draws from it
    ("registration",),
    # the config, validated, with every entry's defaults; a simulation variant's are the simulations' own
    # (simulation.variants), so the config sits above them rather than the simulations importing the config
    ("config",),
    # what the rules read of the validated config: the runs, their files, the steps' settings, resources, pins
    ("experiments",),
    # what C6-C9 measure (patching, per-head measures) and version 2's stack: steps of their own, which decide nothing
    ("position", "revision"),
    # the claims: their machinery (outcomes, seed rule, pre-registration, gate) and one module per claim group
    # holding its decision, the paper's values and tables and docs/results.md's, so that changing what a claim
    # measures touches one file
    ("claims",),
    # the figures, then the paper that takes them in
    ("figures",),
    ("paper",),
    # how the workflow runs: code digests, allocator settings, warm starts, the rules' helpers
    ("pipeline",),
    # the command line the rules call, then its entry point
    ("cli",),
    ("__main__",),
)


def _top_level(dotted: str, known: set[str]) -> str | None:
    """The top-level package or module of behind_rope that an imported name ``behind_rope.<x>...`` belongs to."""
    parts = dotted.split(".")
    if parts[0] != "behind_rope" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in known else None


def package_imports(root: Path) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> where (``path:line``), for every import of one top-level package
    of the package at ``root`` (a folder named behind_rope's way: its modules import ``behind_rope.<...>``) by
    another: ``import behind_rope.x``, ``from behind_rope.x import y``, ``from behind_rope import x`` and
    relative imports, anywhere in a module."""
    known = {path.stem for path in root.glob("*.py")} | {path.parent.name for path in root.glob("*/__init__.py")}
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative == Path("__init__.py"):
            source = "behind_rope"  # the package itself: it must import nothing of its own
        else:
            source = relative.parts[0].removesuffix(".py")
        module = ["behind_rope", *relative.with_suffix("").parts]
        package = module[:-1]  # what a relative import counts from (a package's __init__ is in its package)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module.split(".") if node.module else []
                if node.level:
                    base = package[: len(package) - node.level + 1] + base
                base = ".".join(base)
                # `from behind_rope import x` and `from . import x` import the submodule x when there is one
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in {_top_level(name, known) for name in names} - {None, source}:
                edges.setdefault((source, target), []).append(f"{relative}:{node.lineno}")
    return edges


def layering_violations(edges: dict[tuple[str, str], list[str]], layers=LAYERS) -> list[str]:
    """Each import that does not run to an earlier layer, and each package the layers do not place."""
    rank = {name: index for index, layer in enumerate(layers) for name in layer}
    found = []
    for (source, target), where in sorted(edges.items()):
        unplaced = [name for name in (source, target) if name not in rank]
        if unplaced:
            found.append(f"{', '.join(unplaced)} ({where[0]}) has no place in LAYERS: add it where its imports put it")
        elif rank[target] >= rank[source]:
            found.append(f"{source} imports {target}, of {'its own' if rank[target] == rank[source] else 'a later'} "
                         f"layer, at {', '.join(where)}")
    return found


def package_cycle(edges) -> list[str] | None:
    """One cycle among the packages (the first again at the end), or None."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    return import_cycle(graph)


def test_no_package_imports_a_later_stage():
    edges = package_imports(PACKAGE)
    assert edges, "no imports found: the parse is broken"
    assert layering_violations(edges) == []


def test_no_two_packages_import_each_other():
    cycle = package_cycle(package_imports(PACKAGE))
    assert cycle is None, f"packages that import each other: {' -> '.join(cycle)}; move what both need below both"


def test_every_package_has_a_place_and_each_place_one_package():
    on_disk = {path.stem for path in PACKAGE.glob("*.py")} | {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    placed = [name for layer in LAYERS for name in layer]
    assert sorted(placed) == sorted(on_disk - {"__init__"})


def test_the_checks_fail_on_an_import_up_a_stage_and_on_a_cycle():
    edges = package_imports(PACKAGE)
    up = {**edges, ("maths", "position"): ["maths/metrics.py:1"]}  # the shared maths reading a stage
    assert layering_violations(up) == ["maths imports position, of a later layer, at maths/metrics.py:1"]
    beside = {**edges, ("data", "maths"): ["data/corpus.py:1"]}
    assert layering_violations(beside) == ["data imports maths, of its own layer, at data/corpus.py:1"]
    unknown = {**edges, ("scratch", "maths"): ["scratch.py:1"]}
    assert layering_violations(unknown) == ["scratch (scratch.py:1) has no place in LAYERS: add it where its imports "
                                            "put it"]
    assert package_cycle({**edges, ("twins", "llm"): ["twins/gram.py:1"]}) == ["llm", "twins", "llm"]


def test_the_parse_finds_every_kind_of_import_anywhere_in_a_module(tmp_path):
    package = tmp_path / "behind_rope"
    for name in ("maths", "llm", "twins", "position", "claims", "paper"):
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text('"""A stage."""\n')
    (package / "__init__.py").write_text("")
    (package / "atomic.py").write_text("")
    (package / "maths" / "metrics.py").write_text(
        "def f():\n    from behind_rope.position import sources  # deferred: still an import\n")
    (package / "twins" / "gram.py").write_text("import behind_rope.llm.extract\n")
    (package / "claims" / "prereg.py").write_text("from behind_rope import atomic, paper\n")
    (package / "llm" / "extract.py").write_text("from ..twins import model\nfrom . import loading\n")
    (package / "paper" / "document.py").write_text("from behind_rope import __version__\n")
    assert package_imports(package) == {
        ("maths", "position"): ["maths/metrics.py:2"],
        ("twins", "llm"): ["twins/gram.py:1"],
        ("claims", "atomic"): ["claims/prereg.py:1"],
        ("claims", "paper"): ["claims/prereg.py:1"],
        ("llm", "twins"): ["llm/extract.py:1"],
    }
    layers = (("atomic",), ("maths",), ("twins",), ("llm",), ("position",), ("claims",), ("paper",))
    assert layering_violations(package_imports(package), layers) == [
        "claims imports paper, of a later layer, at claims/prereg.py:1",
        "maths imports position, of a later layer, at maths/metrics.py:2",
        "twins imports llm, of a later layer, at twins/gram.py:1",
    ]
    assert package_cycle(package_imports(package)) == ["llm", "twins", "llm"]
