"""C3's probe against its own noise (benchmarks/c3_power.py): the yardsticks it prints are right, and its noise
estimate reads the halves."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from c3_power import positive_share, row_noise, sequences_needed  # noqa: E402


def test_the_predicted_share_and_the_sequences_it_takes():
    assert positive_share(0.0, 1.0) == pytest.approx(0.5)
    assert positive_share(1.2816, 1.0) == pytest.approx(0.9, abs=1e-4)
    assert positive_share(-1.2816, 1.0) == pytest.approx(0.1, abs=1e-4)
    # Noise 2 at 1,000 sequences: a slope of 1.2816 reaches 0.9 once the noise is 1, at four times the sequences.
    assert sequences_needed(1000, 1.2816, 2.0, 0.9) == pytest.approx(4000, rel=1e-3)
    assert sequences_needed(1000, 0.0, 2.0, 0.9) == math.inf


def test_the_noise_comes_from_the_halves_and_the_locality_from_the_mean():
    rng = np.random.default_rng(0)
    size = 40
    rising = np.tile(np.arange(size, dtype=float), (size, 1))  # every row's score rises by 1 per key
    noise = rng.normal(0, 5.0, (2, size, size))
    halves = rising + noise
    scores = {"mean_scores": halves.mean(0)[None], "half_a": halves[0][None], "half_b": halves[1][None]}
    slope, spread, locality = row_noise(scores, 0)
    assert slope == pytest.approx(1.0, abs=0.2) and spread > 0 and 0.5 < locality <= 1.0
    same = {"mean_scores": rising[None], "half_a": rising[None], "half_b": rising[None]}
    assert row_noise(same, 0) == pytest.approx((1.0, 0.0, 1.0))  # halves that agree: no noise
