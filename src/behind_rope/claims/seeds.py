"""The seed rule: how a statistic measured on several training seeds becomes one verdict.

A verdict that rests on trained weights must not flip with float rounding on another CPU, so it is
decided over seeds by a rule fixed in the pre-registration (config/claims.yaml, claim C3): the
statistic passes only when

- at least ``min_passing`` seeds clear it on their own, and
- from two seeds on, the near end of the two-sided ``confidence`` t-interval of its mean over the seeds
  clears the threshold (the lower end for ``at_least``, the upper end for ``at_most``).

A seed whose value is undefined (NaN) does not clear it, and an undefined interval of two or more seeds
fails.  A rule for one seed (``min_seeds`` 1) is that seed clearing the threshold.
"""

from __future__ import annotations

import math
from functools import cache

DIRECTIONS = ("at_least", "at_most")


@cache
def t_quantile(probability: float, dof: int) -> float:
    """The ``probability`` quantile (> 0.5) of Student's t with ``dof`` degrees of freedom, by bisection
    on its distribution function (mpmath's regularised incomplete beta function)."""
    import mpmath

    if not 0.5 < probability < 1 or dof < 1:
        raise ValueError(f"t quantile needs 0.5 < probability < 1 and dof >= 1, not {probability}, {dof}")

    def upper_tail(t: float) -> float:
        return float(0.5 * mpmath.betainc(dof / 2, 0.5, 0, dof / (dof + t * t), regularized=True))

    low, high = 0.0, 1.0
    while upper_tail(high) > 1 - probability:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if upper_tail(middle) > 1 - probability else (low, middle)
    return (low + high) / 2


def clears(value: float, threshold: float, direction: str) -> bool:
    if direction not in DIRECTIONS:
        raise ValueError(f"a threshold direction must be one of {DIRECTIONS}, not {direction!r}")
    if value is None or value != value:
        return False
    return value >= threshold if direction == "at_least" else value <= threshold


def interval(values: list[float], confidence: float) -> tuple[float, float, float, float]:
    """(mean, standard deviation, low, high): the two-sided ``confidence`` t-interval of the mean."""
    n = len(values)
    if any(v is None or v != v for v in values) or n == 0:
        return (float("nan"),) * 4
    if n == 1:  # a mean, and no interval
        return values[0], float("nan"), float("nan"), float("nan")
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half


def seed_rule(values_by_seed: dict[str, float], threshold: float, direction: str, confidence: float,
              min_passing: int, min_seeds: int) -> dict:
    """The verdict of one statistic over seeds, with everything it was decided from."""
    values = list(values_by_seed.values())
    mean, sd, low, high = interval(values, confidence)
    passing = [seed for seed, value in values_by_seed.items() if clears(value, threshold, direction)]
    near_end = low if direction == "at_least" else high
    enough = len(values) >= min_seeds
    return {
        "values": values_by_seed, "mean": mean, "sd": sd, "interval": [low, high], "confidence": confidence,
        "threshold": threshold, "direction": direction, "seeds_passing": len(passing), "seeds": len(values),
        "min_seeds": min_seeds, "min_passing": min_passing,
        "passed": enough and (len(values) < 2 or clears(near_end, threshold, direction)) and len(passing) >= min_passing,
    }


def describe(rule: dict) -> str:
    """One line: mean [interval], seeds passing, against the threshold."""
    sign = ">=" if rule["direction"] == "at_least" else "<="
    low, high = rule["interval"]
    needed = rule.get("min_seeds", rule["seeds"])
    short = f" (the rule needs {needed} seeds)" if rule["seeds"] < needed else ""
    spread = f"mean {rule['mean']:.3g} [{low:.3g}, {high:.3g}]" if rule["seeds"] > 1 else f"value {rule['mean']:.3g}"
    return (f"{spread}, {rule['seeds_passing']}/{rule['seeds']} seeds "
            f"{sign} {rule['threshold']:g}{short}: {'PASS' if rule['passed'] else 'FAIL'}")
