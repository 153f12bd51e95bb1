"""The cold benchmark runs the workflow inside a clone of the repository (benchmarks/run_benchmarks.py), so
that its claims, and the tables docs/results.md takes from them, name the commit of each criterion."""

import filecmp

from behind_rope.claims.preregistration import criterion_commits
from behind_rope.config import load
from behind_rope.registration import deciding_paths
from benchmarks.run_benchmarks import workflow_in_a_clone
from conftest import ROOT, copy_workflow


def test_the_benchmark_copy_knows_each_criterion_commit_where_a_bare_copy_cannot(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # the bare copy may not find an outer checkout
    paths = {name: deciding_paths(load(), name) for name in ("C3", "C9")}
    clone = workflow_in_a_clone(tmp_path / "clone")
    bare = copy_workflow(tmp_path / "bare")
    assert set(criterion_commits(bare, paths).values()) == {"unknown"}
    # A commit, or "uncommitted" while a criterion is edited and not yet committed: either is known.
    assert "unknown" not in criterion_commits(clone, paths).values()
    # The run measures the workflow as it stands, edits not yet committed included.
    for part in ("src/behind_rope/claims/decide.py", "config/config.yaml", "Snakefile"):
        assert filecmp.cmp(ROOT / part, clone / part, shallow=False), part
