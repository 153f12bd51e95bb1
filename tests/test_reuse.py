"""The side-by-side table of work no longer done twice (benchmarks/reuse.py): when a saving is told from noise."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from reuse import beyond_spread  # noqa: E402


def test_a_saving_counts_only_beyond_the_spread_of_either_ways_runs():
    assert beyond_spread(then=[20.0, 21.0, 22.0], now=[12.0, 12.5, 13.0])  # 0.60 against spreads of 1.10 and 1.08
    # The same least times, but one way's runs spread wider than the change between the ways: noise.
    assert not beyond_spread(then=[20.0, 21.0, 40.0], now=[12.0, 12.5, 13.0])
    assert not beyond_spread(then=[20.0, 22.0], now=[18.0, 21.5])  # 0.90 against a spread of 1.19
    assert beyond_spread(then=[12.0, 12.5], now=[20.0, 21.0])  # a step that got slower counts too
