"""Which library code a step runs, read from its imports (behind_rope.pipeline.codedigest)."""

import shutil

import pytest

from behind_rope.pipeline import codedigest
from behind_rope.pipeline.codedigest import handler_location, script_modules, step_modules
from conftest import ROOT


def test_a_step_runs_its_handlers_imports_and_their_imports():
    assert handler_location("gram") == ("behind_rope.cli.scores", "gram")
    gram = step_modules(*handler_location("gram"))
    assert {"behind_rope.cli.scores", "behind_rope.twins.gram", "behind_rope.capture.scores", "behind_rope.twins.model",
            "behind_rope.atomic"} <= gram
    # Other handlers of the same module import metrics.py (metrics) and the score runs (scores); gram does neither.
    assert "behind_rope.maths.metrics" not in gram and "behind_rope.paper.document" not in gram
    # The capture is its own package: the Gram matrices run none of the LLMs' code.
    assert not [module for module in gram if module.startswith("behind_rope.llm")]
    assert "behind_rope.twins.gram" not in step_modules(*handler_location("scores"))
    assert "behind_rope.maths.rope" in step_modules(*handler_location("simulate"))  # through simulate.py


def test_a_figure_script_runs_what_it_imports():
    modules = script_modules(ROOT / "workflow" / "scripts" / "figS_theory_vs_simulation.py")
    assert {"behind_rope.figures.plotting", "behind_rope.theory.derivation", "behind_rope.maths.blocks",
            "behind_rope.atomic"} <= modules
    # plotting draws block means (maths.blocks), not the metrics: editing a metric does not redraw this figure
    assert "behind_rope.capture.scores" not in modules and "behind_rope.maths.metrics" not in modules


@pytest.mark.parametrize("kept", [False, True], ids=["worked out", "kept in .snakemake between starts"])
def test_the_digest_follows_the_code(tmp_path, monkeypatch, kept):
    monkeypatch.chdir(tmp_path)
    if kept:
        (tmp_path / ".snakemake").mkdir()
    package = tmp_path / "behind_rope"
    shutil.copytree(ROOT / "src" / "behind_rope", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codedigest, "PACKAGE_DIR", package)

    def fresh():  # the parse caches last one Snakefile parse; here the package changes in between
        for cached in (codedigest._parse, codedigest._module_imports, codedigest.package_fingerprint,
                       codedigest._kept_digests):
            cached.cache_clear()

    script = ROOT / "workflow" / "scripts" / "figS_theory_vs_simulation.py"
    fresh()
    before = {step: codedigest.step_code(step) for step in ("gram", "simulate", "claims")}
    before_script = codedigest.script_code(script)
    if kept:  # a second start reads the digests the first kept, and works none out
        assert (tmp_path / ".snakemake" / "behind_rope_code_digests.json").is_file()
        fresh()
        with monkeypatch.context() as second_start:
            second_start.setattr(codedigest, "step_modules", None)  # nothing is worked out: it would fail
            assert {step: codedigest.step_code(step) for step in before} == before
    (package / "twins" / "gram.py").write_text((package / "twins" / "gram.py").read_text() + "\nCHANGED = 1\n")
    (package / "figures" / "plotting.py").write_text((package / "figures" / "plotting.py").read_text() + "\nCHANGED = 1\n")
    fresh()
    after = {step: codedigest.step_code(step) for step in before}
    assert after["gram"] != before["gram"]
    assert after["simulate"] == before["simulate"] and after["claims"] == before["claims"]
    assert codedigest.script_code(script) != before_script  # the script draws with figures.plotting
    fresh()


def test_a_comment_a_docstring_or_a_layout_change_reruns_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    package = tmp_path / "behind_rope"
    shutil.copytree(ROOT / "src" / "behind_rope", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codedigest, "PACKAGE_DIR", package)

    def digests():
        for cached in (codedigest._parse, codedigest._module_imports, codedigest.package_fingerprint,
                       codedigest._kept_digests):
            cached.cache_clear()
        return {step: codedigest.step_code(step) for step in ("metrics", "claims", "simulate")}

    before = digests()
    metrics = package / "maths" / "metrics.py"
    text = metrics.read_text()
    edited = (text.replace('"""Subtract from every diagonal', '"""Take away from every diagonal', 1)  # a docstring
              .replace("    seq_len = scores.shape[-1]\n", "    seq_len = scores.shape[ -1 ]  # a comment\n", 1)  # layout
              + "\n# a comment at the end\n")
    assert edited.count("Take away") == 1 and "# a comment\n" in edited
    metrics.write_text(edited)
    assert digests() == before
    metrics.write_text(edited.replace("minlength=2 * seq_len - 1)", "minlength=2 * seq_len)", 1))  # what it does
    after = digests()
    assert after["metrics"] != before["metrics"] and after["simulate"] == before["simulate"]
