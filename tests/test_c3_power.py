"""C3's probe against its own noise (benchmarks/c3_power.py): the yardsticks it prints are right, and its noise
estimate reads the halves row by row."""

from pathlib import Path

import numpy as np
import pytest

from benchmarks.c3_power import expected_share, row_noise

ROOT = Path(__file__).resolve().parents[1]


def test_the_predicted_share_reads_each_row_with_its_own_noise():
    assert expected_share(0.0, [1.0, 2.0]) == pytest.approx(0.5)
    assert expected_share(1.2816, [1.0, 1.0]) == pytest.approx(0.9, abs=1e-4)
    assert expected_share(1.2816, [1.0, 0.0]) == pytest.approx((0.9 + 1.0) / 2, abs=1e-4)  # a noiseless row: sure


def test_the_noise_comes_from_the_halves_and_the_locality_from_the_mean():
    rng = np.random.default_rng(0)
    size = 40
    rising = np.tile(np.arange(size, dtype=float), (size, 1))  # every row's score rises by 1 per key
    noise = rng.normal(0, 5.0, (2, size, size))
    halves = rising + noise
    scores = {"mean_scores": halves.mean(0)[None], "half_a": halves[0][None], "half_b": halves[1][None]}
    slope, noises, locality = row_noise(scores, 0, 5)
    # the slope relative to each row's score spread, as C3's amplification reads it: a correlation, below 1 with noise
    assert 0.5 < slope < 1.0 and len(noises) == size - 2 and 0.5 < locality <= 1.0
    assert noises[0] > noises[-1]  # an early row fits its slope through few keys
    same = {"mean_scores": rising[None], "half_a": rising[None], "half_b": rising[None]}
    slope, noises, locality = row_noise(same, 0, 5)
    assert (slope, max(noises), locality) == pytest.approx((1.0, 0.0, 1.0))  # halves that agree: no noise
