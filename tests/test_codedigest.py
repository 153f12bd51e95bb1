"""Which library code a step runs, read from its imports (behind_rope.pipeline.codedigest)."""

import shutil

from behind_rope.pipeline import codedigest
from behind_rope.pipeline.codedigest import handler_location, script_modules, step_modules
from conftest import ROOT


def test_a_step_runs_its_handlers_imports_and_their_imports():
    assert handler_location("gram") == ("behind_rope.cli.scores", "gram")
    gram = step_modules(*handler_location("gram"))
    assert {"behind_rope.cli.scores", "behind_rope.twins.gram", "behind_rope.llm.extract", "behind_rope.twins.model",
            "behind_rope.atomic"} <= gram
    # Other handlers of the same module import metrics.py (metrics) and the score runs (scores); gram does neither.
    assert "behind_rope.maths.metrics" not in gram and "behind_rope.paper.document" not in gram
    assert "behind_rope.twins.gram" not in step_modules(*handler_location("scores"))
    assert "behind_rope.maths.rope" in step_modules(*handler_location("simulate"))  # through simulate.py


def test_a_figure_script_runs_what_it_imports():
    modules = script_modules(ROOT / "workflow" / "scripts" / "figS_theory_vs_simulation.py")
    assert {"behind_rope.figures.plotting", "behind_rope.theory.derivation", "behind_rope.maths.blocks",
            "behind_rope.atomic"} <= modules
    # plotting draws block means (maths.blocks), not the metrics: editing a metric does not redraw this figure
    assert "behind_rope.llm.extract" not in modules and "behind_rope.maths.metrics" not in modules


def test_the_digest_follows_the_code(tmp_path, monkeypatch):
    package = tmp_path / "behind_rope"
    shutil.copytree(ROOT / "src" / "behind_rope", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codedigest, "PACKAGE_DIR", package)

    def fresh():  # the parse caches last one Snakefile parse; here the package changes in between
        codedigest._parse.cache_clear()
        codedigest._module_imports.cache_clear()

    fresh()
    before = {step: codedigest.step_code(step) for step in ("gram", "simulate", "claims")}
    (package / "twins" / "gram.py").write_text((package / "twins" / "gram.py").read_text() + "\n# changed\n")
    fresh()
    after = {step: codedigest.step_code(step) for step in before}
    assert after["gram"] != before["gram"]
    assert after["simulate"] == before["simulate"] and after["claims"] == before["claims"]
    fresh()
