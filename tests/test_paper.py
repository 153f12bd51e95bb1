"""The paper stage: values and tables from results/, the PDF, its rebuilds and the arXiv tarball."""

import json
import os
import re
import subprocess
import sys
import tarfile

import pytest

from behind_rope.paper import document as paper
from behind_rope.paper import latex
from conftest import ROOT, copy_run, snakemake, snakemake_environment
from test_workflow import FIGURES, planned_rules

SMOKE = ("--configfile", "config/smoke.yaml")


def pdf_text(pdf) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def _body(tex: str) -> str:
    """A manuscript's body without comments and without the arguments of \\val, \\ref, \\label, \\cite,
    \\input, \\file, \\madeby and \\includegraphics."""
    body = tex[tex.index(r"\begin{document}"):]
    body = re.sub(r"(?<!\\)%.*", "", body)
    body = re.sub(r"\\(?:val|ref|label|cite[pt]?|input|file|includegraphics)(?:\[[^\]]*\])?\{[^}]*\}", " ", body)
    return re.sub(r"\\madeby\{[^}]*\}\{[^}]*\}", " ", body)


def typed_numbers(tex: str, values: dict[str, str]) -> list[str]:
    """Numbers in a manuscript's body that look measured or configured, rather than written as \\val{key}.

    Allowed: single digits (layer 2, claim C1, the formulas' constants), digits inside names such as
    SmolLM2 or Qwen2.5-Coder, and the arguments \\val and the other commands of ``_body`` take.  Anything
    else with two or more digits or a decimal point is typed in, and so is a range of digits such as the
    layers 2--4 (a configured range), and any value of numbers.tex.
    """
    body = _body(tex)
    ranges = re.findall(r"\d\s*(?:--|\\textendash\{?\}?)\s*\d", body)  # layers 2--4
    body = re.sub(r"[A-Za-z][\w.\-]*\d[\w.\-]*", " ", body)  # names: SmolLM2, Qwen2.5-Coder, Llama-3.1-8B
    found = [n for n in re.findall(r"\d+(?:,\d{3})*(?:\.\d+)?", body) if len(n) > 1]  # 2,178,464 or 0.154; not s_{2,1}
    measured = {text for text in values.values() if re.search(r"\d", text) and len(text) > 1}
    return ranges + found + [text for text in measured if text in body]


def typed_verdicts(tex: str) -> list[str]:
    """Verdicts typed into a manuscript's body: every PASS or FAIL must come from numbers.tex (\\val{c3.result}),
    and so must every sentence whose meaning depends on one (paper.py and its modules write those)."""
    return re.findall(r"\b(?:PASS|FAIL)", _body(tex))


def numbers_tex_values(path) -> dict[str, str]:
    return dict(re.findall(r"^\\defval\{([^}]+)\}\{(.*)\}$", path.read_text(), flags=re.MULTILINE))


# --- without LaTeX ---------------------------------------------------------------------------------

def test_numbers_are_written_as_latex():
    assert paper.number(-0.0312, 3) == r"\ensuremath{-}0.031"
    assert paper.number(-0.0001, 2) == "0.00"
    assert paper.number(20000) == "20{,}000"
    assert paper.number(float("nan")) == "n/a" and paper.number(True) == "pass"
    assert paper.tex_escape("locality >= 0.9 in l2_alpha0.0 & 5%") == r"locality $\geq$ 0.9 in l2\_alpha0.0 \& 5\%"
    assert paper.listing([2, 3, 4]) == "2, 3 and 4" and paper.listing(["a"]) == "a"


def test_the_latex_check_names_the_debian_packages(tmp_path, monkeypatch):
    main = tmp_path / "main.tex"
    main.write_text("\\usepackage{booktabs,no-such-package}\n\\bibliographystyle{plainnat}\n")
    assert latex.required_tex_files(main.read_text()) == ["booktabs.sty", "no-such-package.sty", "plainnat.bst"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no latexmk, no pdflatex
    with pytest.raises(latex.LatexMissing, match="latexmk, pdflatex, bibtex, kpsewhich not found.*texlive-latex-base"):
        latex.check_latex(main, ["latexmk", "texlive-latex-base"])


def test_a_latex_error_stops_the_step_with_its_lines_and_the_log_not_a_traceback(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from behind_rope.__main__ import main
    from behind_rope.cli import common

    main_tex = tmp_path / "main.tex"
    main_tex.write_text("\\documentclass{article}\n\\begin{document}\n\\undefinedmacro\n\\end{document}\n")
    pdf, log = tmp_path / "build" / "main.pdf", tmp_path / "latexmk.log"
    with pytest.raises(latex.LatexFailed, match=r"(?s)latexmk failed on .*main.tex:3: Undefined control sequence") as failed:
        latex.build_pdf(main_tex, pdf, log, [], ["latexmk"])
    assert log.is_file() and not pdf.exists()
    # The command line turns it into one "Error: ..." message and exit status 1, as for a missing LaTeX.
    step = SimpleNamespace(run=lambda args: latex.build_pdf(main_tex, pdf, log, [], ["latexmk"]))
    monkeypatch.setattr(common, "build_parser", lambda doc: SimpleNamespace(parse_args=lambda argv: step))
    with pytest.raises(SystemExit, match="^Error: latexmk failed on") as stopped:
        main([])
    assert str(stopped.value) == f"Error: {failed.value}"


def test_the_typed_number_check_can_fail():
    tex = "\\begin{document}\nLayer 2 of SmolLM2 and Qwen2.5-Coder scores \\val{fig1.s21} (Figure~\\ref{fig:1}).\n"
    assert typed_numbers(tex, {"fig1.s21": "0.154"}) == []
    assert typed_numbers(tex.replace("\\val{fig1.s21}", "0.154"), {"fig1.s21": "0.154"}) == ["0.154", "0.154"]
    assert typed_numbers(tex + "trained on 2,178,464 tokens\n", {}) == ["2,178,464"]
    assert typed_numbers(tex + "a loss of 5.32 % a comment: 5.32\n", {}) == ["5.32"]
    assert typed_numbers(tex + "in two of layers 2--4\n", {}) == ["2--4"]
    assert typed_numbers(tex + "in layers \\val{c5a.later_layers}\n", {}) == []


def test_the_typed_verdict_check_can_fail():
    tex = "\\begin{document}\nClaim \\C3: \\val{c3.result}; \\val{c3.probe_outcome}. % FAIL in a comment\n"
    assert typed_verdicts(tex) == []
    assert typed_verdicts(tex + "so \\C{5b} \\textbf{FAIL}s for every model\n") == ["FAIL"]


def test_main_tex_types_no_verdict():
    assert typed_verdicts((ROOT / "paper" / "main.tex").read_text()) == []


def test_generated_phrases_follow_the_verdicts():
    from behind_rope.claims import c3 as paper_c3
    from behind_rope.claims import c5 as paper_llm

    rule = {"passed": True}
    assert paper_c3.rule_outcome({"locality_layer_3": rule, "locality_layer_2": {"passed": False},
                                  "amplification": {"passed": False}}) == (
        "locality in layer~3 passes the seed rule; locality in layer~2 and the amplification fail it")
    assert paper_c3.rule_outcome({"amplification": {"passed": False}}) == "the amplification fails the seed rule"
    assert paper_llm._direction([0.2, 0.1]) == "higher than mid-context keys in every one of them"
    assert paper_llm._direction([-0.2]) == "lower than mid-context keys there"
    assert paper_llm._direction([0.2, -0.1, float("nan")]) == "higher than mid-context keys in 1 and lower in 1 of them"
    assert paper_llm.ranging([0.03]) == "is 0.03" and paper_llm.ranging([0.1, -0.2]) == r"runs from \ensuremath{-}0.20 to 0.10"
    assert paper_llm._above_or_below([0.13, 10.57]) == "0.13 to 10.57 above"
    assert paper_llm._above_or_below([-0.2, float("nan")]) == "0.20 below"
    assert paper_llm._above_or_below([-1.0, 2.0]) == r"from \ensuremath{-}1.00 to 2.00 above or below"


def _position_claims(c7_after: float = 0.5, middle: float = 0.01) -> dict:
    """Claims C6-C9 decided on synthetic inputs (tests/test_position.py's), as results/claims.json holds them:
    models m (deciding C7) and x, a simulation s, a sliding-window model g and its control."""
    from test_position import C9_RULE, _c6, _c7, _c8a, _patching, _window_run

    from behind_rope.claims.position import claim_c8b, claim_c9

    windows = {"g/long": _window_run([0.1, 0.2, 0.3, 0.4, 0.5, 1.0], ["sliding_attention"] * 5 + ["full_attention"], 16),
               "s/long": _window_run([0.3, 0.1, 0.4, 0.2, 0.3, 0.1], ["full_attention"] * 6)}
    claims = {
        "C6": _c6(no_mask_slope=0.0),
        "C7": _c7({"bos_mean": c7_after, "late_mean": 0.95, "bos_identity": 1.0}),
        "C8a": _c8a(share=0.5),
        "C8b": claim_c8b(windows, {"sliding": "g/long", "no_window": "s/long"},
                         {}, dict(min_query=16, min_depth_correlation=0.5, floor_multiple=2.0, min_layer_share=0.5,
                                  min_resolvable_slope=0.25, floor_splits=50, floor_quantile=0.5)),
        "C9": claim_c9({"m": _patching(0.5, middle)}, {"m": "m/first"}, C9_RULE),
    }
    for claim in claims["C7"]["measured"]["models"].values():
        claim["largest_identity_change"] = {"bos_identity": 0.0}
    return json.loads(json.dumps(claims, default=float))  # as the claims file stores them


def test_the_position_sentences_follow_the_verdicts():
    from behind_rope.claims import position as paper_position
    from behind_rope.config import claim_arguments, load

    config = load()
    settings = {"claims": {name: claim_arguments(config, name) for name in ("C6", "C7", "C8", "C9")},
                "llm": {"variants": config["llm"]["variants"]}}
    claims = _position_claims()
    values = paper_position.position_values(claims, settings)
    assert all(claims[name]["passed"] for name in claims)
    assert {values[f"{name}.stance"] for name in ("c6", "c7", "c8a", "c8b", "c9")} == {"supported"}
    assert values["c7.removed"] == r"50\,\%" and values["c7.reading"] == r"40\,\%" and values["c7.ratio"] == "0.50"
    assert values["c7.power"].startswith("met (2 floors are 0.080 at 16 sequences")
    unescaped = {key: value for key, value in values.items() if re.search(r"(?<!\\)[%#&_]", value)}
    assert not unescaped  # every value is LaTeX text
    assert values["position.stances"].startswith("Our models support the reading's statements that the causal mask")
    assert "contradict" not in values["position.stances"]

    claims = _position_claims(c7_after=1.5, middle=0.5)  # the replacement strengthens the signal; the middle patch reads too
    values = paper_position.position_values(claims, settings)
    assert not claims["C7"]["passed"] and not claims["C9"]["passed"]
    assert values["c7.stance"] == "contradicted" and "strengthens" in values["c7.stance_reason"]
    assert values["c7.removed"] == r"\ensuremath{-}50\,\% (the signal grows)"
    turned = _position_claims(c7_after=-0.5)  # turned around: more than all of it removed, which is a cut
    assert turned["C7"]["passed"] and paper_position.position_values(turned, settings)["c7.sign_flipped"] == r"\texttt{m}"
    assert values["c9.stance"] == "undecided" and values["c9.middle_passing"] == r"\texttt{m}"
    assert r"They contradict the statement that replacing the BOS embedding cuts" in values["position.stances"]
    assert r"cannot decide the statement that position~0 evolves" in values["position.stances"]

    table = paper_position.position_table(claims, settings)
    columns = re.search(r"\\begin\{tabular\}\{@\{\}(\w+)@\{\}\}", table)[1]
    rows = [line for line in table.splitlines() if line.endswith(r"\\") and "multicolumn" not in line]
    assert [row.split(" & ")[0] for row in rows] == ["model", r"\texttt{m}", r"\texttt{x}", "RoPE simulation"]
    assert all(row.count("&") == len(columns) - 1 for row in rows)
    assert r"\texttt{x} &  &  &  & 1.00 & 0\,\% & exploratory" in table  # C7's other model: exploratory


def test_the_c3_power_sentence_says_whether_the_probe_has_the_power_its_precondition_asks():
    from behind_rope.claims.c3 import _power_sentence

    def power(*values, needed=20000):
        return {"layer": 2, "power": {name: {"power": value, "sequences": 1024, "sequences_for_power": needed}
                                      for name, value in zip("ab"[: len(values)], values, strict=True)}}

    weak = _power_sentence(power(0.01, 0.9), 0.9, 0.8)
    assert "with a probability of 0.01 to 0.90 at the probe's 1,024 sequences" in weak
    assert "below 0.80 for 1 of the 2 seeds (about 20,000 sequences would, were that noise" in weak
    assert _power_sentence(power(0.01, needed=None), 0.9, 0.8).endswith("(no size would do).")
    strong = _power_sentence(power(0.85, 0.95), 0.9, 0.8)
    assert strong.endswith("the probe has the power the precondition asks (0.80 or more).")


def test_a_failing_c6_model_is_told_which_condition_its_heads_miss():
    from behind_rope.claims.position import _c6_heads

    layer = {"slopes": [0.5, -0.5, 0.01], "floors": [0.01, 0.01, 0.01], "slope_ratio_to_simulation": [0.5, -0.5, 0.01],
             "heads_carrying": 1}
    args = {"layers": [2], "floor_multiple": 2.0, "min_slope_ratio": 0.25}
    assert _c6_heads({"probe": {"layers": {"2": layer}}}, args) == (
        "1 of its 3 heads in the checked layers carries it (1 with the slope above the noise, 1 with at least 0.25 "
        "of the simulation's and 1 with it negative beyond the noise)")


def test_the_summary_names_the_models_where_a_failing_statement_holds():
    from behind_rope.claims.position import NOT_SHOWN, models_holding, stance_sentences

    claims = {"C6": {"passed": False, "measured": {"models": {"a": {"passed": True}, "b": {"passed": False}}}},
              # C7 is decided by one model: another model passing it is exploratory, not a partial hold
              "C7": {"passed": False, "measured": {"decided_by": "a", "models": {"b": {"passed": True}}}},
              "C8a": {"passed": False, "measured": {"models": {"a": {"passed": False}}}},
              "C8b": {"passed": False, "measured": {}}, "C9": {"passed": False, "measured": {"models": {}}}}
    holding = models_holding(claims)
    assert holding == {"C6": ["a"], "C8a": [], "C8b": [], "C9": []}
    found = {name: (NOT_SHOWN, "", "") for name in claims}
    assert stance_sentences(found, holding).startswith(
        r"Our models support none of the reading's statements in every model; some hold in single models: \C6 in "
        r"\texttt{a}. They do not show the statements")
    assert stance_sentences(found, {}).startswith("Our models support none of the reading's statements in every model.")


def test_a_per_model_figure_is_cited_once_per_model_of_the_scale():
    figure = {"paper": "appendix", "section": "llm"}
    figures = [{**figure, "name": f"figS_llm_{model}_all_layers", "model": model} for model in ("l", "b_1")]
    figures += [{**figure, "name": "fig5_llm_layers", "model": None}, {**figure, "name": "x_c", "model": "c", "paper": "none"}]
    assert paper.per_model_figure_refs(figures) == {
        "refs.figS_llm_all_layers": r"Figures~\ref{fig:figS_llm_l_all_layers} and \ref{fig:figS_llm_b_1_all_layers}"}
    assert paper.per_model_figure_refs(figures[:1]) == {"refs.figS_llm_all_layers": r"Figure~\ref{fig:figS_llm_l_all_layers}"}


def test_the_claims_table_names_each_section_and_criterion_commit():
    assert paper.section_short("4.2, Analysis of a Trained Model Without Positional Encoding; abstract") == "4.2, abstract"
    assert paper.section_short("none: our own question. The paper states the direction only for (5.1)") == (
        "our own question")
    assert paper.section_short("none: the follow-up reading's abstract") == "follow-up reading's abstract"
    assert paper.short_commit("6e3e80321943") == "6e3e803" and paper.short_commit("uncommitted") == "uncommitted"
    assert paper.quote_tex("in [-10^1, 10^1] scale, Q(2)K(2)^T") == r"in $[-10^1, 10^1]$ scale, $Q^{(2)}K^{(2)\top}$"


def test_the_tarball_is_reproducible(tmp_path):
    (tmp_path / "main.tex").write_text("x")
    (tmp_path / "numbers.tex").write_text("y")
    files = [tmp_path / "numbers.tex", tmp_path / "main.tex"]
    latex.write_tarball(tmp_path / "a.tar.gz", files)
    latex.write_tarball(tmp_path / "b.tar.gz", files[::-1])
    assert (tmp_path / "a.tar.gz").read_bytes() == (tmp_path / "b.tar.gz").read_bytes()
    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        assert tar.getnames() == ["main.tex", "numbers.tex"]


# --- the smoke run ---------------------------------------------------------------------------------

def test_main_tex_types_no_measured_number(smoke_run):
    values = numbers_tex_values(smoke_run / "results" / "paper" / "numbers.tex")
    assert len(values) > 60
    main = (ROOT / "paper" / "main.tex").read_text()
    assert typed_numbers(main, values) == []
    # every value the text reads is defined (LaTeX would stop too, but this names them all at once)
    body = re.sub(r"(?<!\\)%.*", "", main)
    assert sorted(set(re.findall(r"\\val\{([^}]+)\}", body)) - set(values)) == []


def test_the_pdf_holds_every_figure_and_the_claims(smoke_run):
    pdf = smoke_run / "paper" / "build" / "main.pdf"
    pages = int(re.search(r"^Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True,
                                                              check=True).stdout, flags=re.MULTILINE)[1])
    assert 8 <= pages <= 70  # the appendices: the pre-registration, the criteria history, every appendix figure
    read = latex.figures_read(smoke_run / "paper" / "build" / "latex" / "main.fls")
    assert read == sorted(path.name for path in (smoke_run / "figures").glob("*.pdf"))
    assert {f"{name}.pdf" for name in FIGURES} <= set(read)
    text = pdf_text(pdf)
    claims = json.loads((smoke_run / "results" / "claims.json").read_text())
    for name, claim in claims.items():
        assert re.search(rf"^\s*{name}\s.*\b{claim['outcome']}\b", text, flags=re.MULTILINE), name
    assert "Built at the smoke scale" in text
    assert "??" not in text  # every reference resolved, the per-model figures' generated ones too
    assert (smoke_run / "results" / "logs" / "paper" / "latexmk.log").read_text().count("Output written on") >= 1
    # Nothing wider than the page: the generated tables fit the text's width.
    overfull = re.findall(r"^Overfull \\hbox .*$", (smoke_run / "paper" / "build" / "latex" / "main.log").read_text(
        errors="replace"), flags=re.MULTILINE)
    assert overfull == []


def test_the_docs_claims_tables_come_from_the_claims_file(smoke_run, tmp_path):
    """Each claim group's module writes its block of docs/results.md and the README's row from claims.json, and
    the text around the blocks stays as written."""
    import shutil

    from behind_rope.claims.tables import CRITERIA, README, RESULTS, write_tables

    for page in (RESULTS, CRITERIA, README, "config/criteria_history.yaml", "config/registrations.yaml"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    claims = json.loads((smoke_run / "results" / "claims.json").read_text())
    explored = json.loads(json.dumps(claims))
    explored["C1"]["outcome"] = "FAIL" if claims["C1"]["outcome"] != "FAIL" else "PASS"
    write_tables(claims, "the smoke run", smoke_run, root=tmp_path, exploratory=explored, exploratory_source="a test")
    results, readme = (tmp_path / RESULTS).read_text(), (tmp_path / README).read_text()
    for name in ("C3", "C4", "C5a", "C5b", "C5c", "C5d", "C6", "C7", "C8a", "C8b", "C9", "R0", "R1", "R5"):
        assert f"**{name}: {claims[name]['outcome']}**" in results, name
    for name, claim in claims.items():
        assert re.search(rf"^\| {name} \|.*\| {explored[name]['outcome']} \| \*\*{claim['outcome']}\*\* \| [^|]+ \|$",
                         readme, flags=re.MULTILINE), name
    names = list(claims)
    assert "| exploratory | " + " | ".join(explored[name]["outcome"] for name in names) + " |" in results
    assert "| confirmatory | " + " | ".join(f"**{claims[name]['outcome']}**" for name in names) + " |" in results
    assert f"They differ for C1 ({explored['C1']['outcome']} against {claims['C1']['outcome']}" in results
    assert results.count("_From `results/claims.json` of the smoke run._") >= 6
    outside = re.compile(r"<!-- (\w+):start -->.*?<!-- \1:end -->", re.S)
    assert outside.sub("", results) == outside.sub("", (ROOT / RESULTS).read_text())


def test_page_one_renders_to_a_png(smoke_run, tmp_path):
    subprocess.run(["pdftoppm", "-png", "-r", "50", "-f", "1", "-l", "1", "-singlefile",
                    str(smoke_run / "paper" / "build" / "main.pdf"), str(tmp_path / "page")], check=True)
    data = (tmp_path / "page.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert 300 < width < height  # a portrait page


def test_a_changed_claim_rebuilds_only_the_paper_and_changes_its_text(smoke_run, tmp_path):
    workdir = copy_run(smoke_run, tmp_path / "copy")
    pdf = workdir / "paper" / "build" / "main.pdf"
    claims_file = workdir / "results" / "claims.json"
    claims = json.loads(claims_file.read_text())
    before = pdf_text(pdf)
    assert "0.424" not in before
    claims["C1"]["measured"]["figure1_layer2_scores"][1][0] = 0.4242
    staging = claims_file.with_suffix(".tmp")
    staging.write_text(json.dumps(claims))
    os.replace(staging, claims_file)
    rebuilt = snakemake(workdir, "paper", "results/registration.yaml", *SMOKE)
    # No model, metric or claim step reruns: only the paper, the run's row for the record and the figures drawn from
    # claims.json (the ladder).
    drawn_from_claims = {name for name, figure in FIGURES.items() if "results/claims.json" in figure.inputs}
    assert drawn_from_claims == {"figS_scale_ladder"}
    assert planned_rules(rebuilt) == {"paper_inputs", "paper", "registration_row", *drawn_from_claims}
    after = pdf_text(pdf)
    assert "0.424" in after and after != before
    assert "Nothing to be done" in snakemake(workdir, *SMOKE, "--dry-run").stdout


def test_without_latex_only_the_paper_fails_and_names_the_packages(smoke_run, tmp_path):
    workdir = copy_run(smoke_run, tmp_path / "copy")
    for stale in ("figures/fig2_simulation.pdf", "figures/fig2_simulation.png", "paper/build/main.pdf"):
        (workdir / stale).unlink()
    no_latex = tmp_path / "bin"
    no_latex.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for tool in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if tool not in ("latexmk", "pdflatex", "bibtex", "kpsewhich") and not (no_latex / tool).exists():
                (no_latex / tool).symlink_to(os.path.join(folder, tool))
    path = os.pathsep.join([os.path.dirname(sys.executable), str(no_latex)])
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--keep-going", *SMOKE], cwd=workdir,
                          env=snakemake_environment(workdir, {**os.environ, "PATH": path}), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode != 0
    assert (workdir / "figures" / "fig2_simulation.pdf").exists() and not (workdir / "paper" / "build" / "main.pdf").exists()
    log = (workdir / "results" / "logs" / "paper" / "paper.log").read_text()
    packages = [line for line in (ROOT / "envs" / "tex-packages.txt").read_text().splitlines() if line and line[0] != "#"]
    assert log.startswith("Error: LaTeX is missing") and all(package in log for package in packages), log


def test_the_arxiv_tarball_compiles_on_its_own(smoke_run, tmp_path):
    snakemake(smoke_run, "paper_tarball", *SMOKE)
    with tarfile.open(smoke_run / "paper" / "build" / "arxiv-source.tar.gz") as tar:
        names = tar.getnames()
        tar.extractall(tmp_path, filter="data")
    assert {"main.tex", "references.bib", "main.bbl", "numbers.tex", "claims_table.tex"} <= set(names)
    assert {f"{name}.pdf" for name in FIGURES} <= set(names) and all("/" not in name for name in names)
    env = {key: value for key, value in os.environ.items() if key not in ("TEXINPUTS", "BIBINPUTS")}
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"], cwd=tmp_path, env=env,
                   capture_output=True, check=True)
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=True)
    assert "undefined" not in done.stdout and (tmp_path / "main.pdf").stat().st_size > 100_000


def test_the_c3_seed_rule_sentence_is_the_rule_written_for_the_number_of_seeds():
    from behind_rope.claims.c3 import _seed_rule_sentence

    one = _seed_rule_sentence({"min_seeds": 1, "min_seeds_passing": 1, "confidence": 0.95})
    five = _seed_rule_sentence({"min_seeds": 5, "min_seeds_passing": 4, "confidence": 0.95})
    assert "written for one: that seed clears the bound" in one and "t-interval" not in one
    assert "at least 4 of the 5 seeds" in five and "t-interval" in five
