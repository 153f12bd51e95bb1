"""Whole score jobs at 1 and 2 threads (benchmarks/score_job_threads.py): which runs it takes, how it compares them."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from score_job_threads import largest_difference, llm_score_runs  # noqa: E402

from behind_rope.config import load  # noqa: E402


def test_it_takes_every_llm_run_and_variant_and_no_twin_or_simulation(tmp_path):
    for made in ["smollm2/fig5_causal", "smollm2.ntk2/first_causal", "gemma3/random_noncausal", "nope/text_causal",
                 "rope_seed1/random_causal", "simulation/l2_alpha0.0"]:
        (tmp_path / "results" / "scores" / made).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "results" / "scores" / f"{made}.npz").touch()
    runs = {name: settings for name, settings, _ in llm_score_runs(tmp_path, load())}
    assert set(runs) == {"smollm2/fig5_causal", "smollm2.ntk2/first_causal", "gemma3/random_noncausal"}
    assert runs["gemma3/random_noncausal"]["causal"] is False
    assert runs["smollm2.ntk2/first_causal"]["intervention"]["ntk_factor"] == 2


def test_the_largest_difference_is_relative_to_the_array_and_named(tmp_path):
    for way, shift in [("A", 0.0), ("B", 1e-3)]:
        (tmp_path / way).mkdir()
        scores = np.array([[1.0, np.nan], [-4.0, 2.0]])
        np.savez(tmp_path / way / "run.npz", mean_scores=scores + [[0, 0], [0, shift]], layers=np.array([1, 2]))
    gap, where = largest_difference(tmp_path / "A", tmp_path / "B")
    assert (gap, where) == (pytest.approx(1e-3 / 4), "run mean_scores")
