"""Can a probe see the bound?  The power of C3's locality check, by the probe's own sampling noise.

Locality is the share of query rows whose key slope is positive.  Were every row's true slope ``slope`` and its
sampling noise Gaussian with spread ``noise`` (measured from the run's two halves:
behind_rope.maths.metrics.key_slope_noise), each row would come out positive with probability
p = Phi(slope / noise), independently, and the locality check (a share of at least ``min_locality`` of
``rows`` rows) would pass with the binomial tail probability of that many rows.  The noise falls as one over
the root of the probe's sequences, which sizes a probe that has the power.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def rows_needed(rows: int, min_locality: float) -> int:
    return math.ceil(min_locality * rows - 1e-9)


def pass_probability(share: float, rows: int, min_locality: float) -> float:
    """P(at least ``min_locality`` of ``rows`` rows are positive) when each is, independently, with ``share``."""
    need = rows_needed(rows, min_locality)
    return sum(math.comb(rows, k) * share**k * (1 - share) ** (rows - k) for k in range(need, rows + 1))


def locality_power(slope: float, noise: float, rows: int, min_locality: float) -> float:
    """The probability that a twin whose every row has ``slope`` passes the locality check at this noise."""
    share = NormalDist().cdf(slope / noise) if noise > 0 else float(slope > 0)
    return pass_probability(share, rows, min_locality)


def share_for_power(power: float, rows: int, min_locality: float) -> float:
    """The per-row positive share at which the locality check passes with probability ``power`` (bisection)."""
    low, high = 0.5, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if pass_probability(middle, rows, min_locality) < power else (low, middle)
    return high


def sequences_for_power(sequences: int, slope: float, noise: float, rows: int, min_locality: float,
                        power: float) -> int | None:
    """The probe sequences at which ``slope`` would pass the locality check with probability ``power`` (None: no
    size does, for a slope that is not positive)."""
    if slope <= 0:
        return None
    z = NormalDist().inv_cdf(share_for_power(power, rows, min_locality))
    return math.ceil(sequences * (z * noise / slope) ** 2)
