"""The price list of doing less work (benchmarks/less_work.py): its reliability predictions."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from less_work import halved, models_reaching  # noqa: E402


@pytest.mark.parametrize("half_size", [0.2, 0.5, 0.9])
def test_halving_undoes_the_spearman_brown_doubling(half_size):
    assert halved(2 * half_size / (1 + half_size)) == pytest.approx(half_size)


def test_models_are_counted_now_and_at_half_the_data():
    values = {"steady": [0.95, 0.9, 0.2], "marginal": [0.82, 0.81, 0.1], "short": [0.85, 0.3, 0.2]}
    # At half the data 0.95 -> 0.90 and 0.9 -> 0.82 stay above 0.8; 0.82 -> 0.69 and 0.81 -> 0.68 do not.
    assert models_reaching(values, 0.8, 2) == (2, 1)
