"""Noise floors from many splits of the data into halves, not from one.

A claim's noise floor asks how far a statistic moves when it is measured on two disjoint halves of
the sequences.  One split gives one draw of that difference, which can be near zero by chance.  Here the
data come in groups (a score run's groups of sequences, behind_rope.capture.scores.ScoreRecorder; the
simulation's chunks), and the floor is a quantile of |statistic(half A) - statistic(half B)| over many
random splits of the groups into halves, the number of splits and the quantile written in the
pre-registration (config/claims.yaml).  Each half's mean is weighted by its groups' sizes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def random_halves(groups: int, splits: int, seed: int = 0) -> np.ndarray:
    """(splits, groups) booleans: ``splits`` random splits of the groups, ``groups // 2`` of them in half A."""
    rng = np.random.default_rng(seed)
    chosen = np.zeros((splits, groups), dtype=bool)
    for row in chosen:
        row[rng.permutation(groups)[: groups // 2]] = True
    return chosen


def half_weights(sizes, splits: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The weights of each group in half A's mean and in half B's for :func:`random_halves`' splits, (splits,
    groups) each, every row summing to 1: a half's mean of any groups' values is its row of weights times them."""
    sizes = np.asarray(sizes, dtype=float)
    halves = random_halves(len(sizes), splits, seed)
    weights_a, weights_b = halves * sizes, ~halves * sizes
    return weights_a / weights_a.sum(1, keepdims=True), weights_b / weights_b.sum(1, keepdims=True)


def split_gaps(values, sizes, splits: int, statistic: Callable | None = None, seed: int = 0) -> np.ndarray:
    """|statistic(mean of half A) - statistic(mean of half B)| for each of ``splits`` random splits of the groups
    of ``values`` (groups, ...), weighted by their ``sizes``: (splits, ...) or (splits,) for a scalar statistic.
    Without ``statistic``, the means themselves (a statistic linear in the data needs only each group's own
    value).  An empty array of splits with fewer than two groups."""
    values, sizes = np.asarray(values, dtype=float), np.asarray(sizes, dtype=float)
    if len(values) < 2:
        return np.empty((0, *values.shape[1:]))
    weights_a, weights_b = half_weights(sizes, splits, seed)
    flat = values.reshape(len(values), -1)
    if statistic is None:
        return np.abs((weights_a - weights_b) @ flat).reshape(-1, *values.shape[1:])
    gaps = []
    for row_a, row_b in zip(weights_a, weights_b, strict=True):  # one split at a time: the inputs can be large
        mean_a, mean_b = (np.tensordot(row, values, axes=1) for row in (row_a, row_b))
        gaps.append(np.asarray(statistic(mean_a)) - np.asarray(statistic(mean_b)))
    return np.abs(np.array(gaps))


def split_floor(values, sizes, splits: int, quantile: float, statistic: Callable | None = None,
                seed: int = 0) -> np.ndarray | float:
    """The ``quantile`` of :func:`split_gaps` over the splits: a statistic's noise floor from many splits (NaN
    with fewer than two groups)."""
    gaps = split_gaps(values, sizes, splits, statistic, seed)
    if len(gaps) == 0:
        return np.full(gaps.shape[1:], np.nan) if gaps.ndim > 1 else float("nan")
    floor = np.quantile(gaps, quantile, axis=0)
    return float(floor) if np.ndim(floor) == 0 else floor
