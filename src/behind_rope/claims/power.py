"""Can a probe see the bound?  The power of C3's locality check, row by row, by the probe's own sampling noise.

Locality is the share of query rows whose key slope is positive.  Each row's slope carries its own sampling
noise: a row near the start fits a line through a few keys and is far noisier than a late one, so one noise
pooled over the rows would let a handful of early rows speak for all of them.  A row's noise is measured from
the run's two halves (behind_rope.maths.metrics.key_slope_half_differences): the root mean square of the half
differences of the ``window`` rows centred on it (fewer at the ends), since one row's difference is a single
draw.  Were every row's true slope ``slope`` and its noise Gaussian, row r would come out positive with
probability p_r = Phi(slope / noise_r), independently, and the locality check (at least ``min_locality`` of the
rows) would pass with the Poisson-binomial tail probability of that many rows.  The noise falls as one over the
root of the probe's sequences, which sizes a probe that has the power.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def rows_needed(rows: int, min_locality: float) -> int:
    return math.ceil(min_locality * rows - 1e-9)


def row_noises(half_differences: list[float], window: int) -> list[float]:
    """Each row's noise: the root mean square of the half differences of the ``window`` rows centred on it."""
    reach, rows = window // 2, len(half_differences)
    noises = []
    for row in range(rows):
        near = half_differences[max(0, row - reach): min(rows, row + reach + 1)]
        noises.append(math.sqrt(sum(d * d for d in near) / len(near)))
    return noises


def positive_shares(slope: float, noises: list[float]) -> list[float]:
    """Each row's probability of a positive slope, were its true slope ``slope``: Phi(slope / noise_r)."""
    return [NormalDist().cdf(slope / noise) if noise > 0 else float(slope > 0) for noise in noises]


def pass_probability(shares: list[float], min_locality: float) -> float:
    """P(at least ``min_locality`` of the rows are positive) when row r is, independently, with ``shares[r]``."""
    counts = [1.0]  # counts[k]: the probability that k of the rows so far are positive
    for share in shares:
        counts = [(counts[k] if k < len(counts) else 0.0) * (1 - share) + (counts[k - 1] * share if k else 0.0)
                  for k in range(len(counts) + 1)]
    return sum(counts[rows_needed(len(shares), min_locality):])


def locality_power(slope: float, noises: list[float], min_locality: float) -> float:
    """The probability that a twin whose every row has ``slope`` passes the locality check at these row noises."""
    return pass_probability(positive_shares(slope, noises), min_locality)


def sequences_for_power(sequences: int, slope: float, noises: list[float], min_locality: float,
                        power: float) -> int | None:
    """The fewest probe sequences at which ``slope`` would pass the locality check with probability ``power``, were
    every row's noise to fall as one over the root of the sequences (None: no size does, for a slope that is not
    positive)."""
    if slope <= 0:
        return None

    def enough(size: int) -> bool:
        return locality_power(slope, [noise * math.sqrt(sequences / size) for noise in noises], min_locality) >= power

    if enough(1):
        return 1
    low, high = 1, 2
    while not enough(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high
