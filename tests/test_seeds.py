import math

import numpy as np
import pytest

from behind_rope.claims.seeds import interval, seed_rule, t_quantile


@pytest.mark.parametrize(("probability", "dof", "expected"), [(0.975, 4, 2.776445), (0.975, 1, 12.706205),
                                                              (0.975, 30, 2.042272), (0.95, 9, 1.833113)])
def test_t_quantile_matches_published_tables(probability, dof, expected):
    assert t_quantile(probability, dof) == pytest.approx(expected, abs=1e-5)


def test_interval_is_the_t_interval_of_the_mean():
    mean, sd, low, high = interval([1.0, 2.0, 3.0, 4.0, 5.0], 0.95)
    assert (mean, sd) == (3.0, pytest.approx(math.sqrt(2.5)))
    assert (low, high) == (pytest.approx(3 - 2.776445 * math.sqrt(2.5 / 5)), pytest.approx(3 + 2.776445 * math.sqrt(2.5 / 5)))


def rule(values, threshold=1.0, direction="at_least"):
    return seed_rule(dict(enumerate(values)), threshold, direction, confidence=0.95, min_passing=4, min_seeds=5)


def test_a_statistic_passes_when_the_interval_clears_and_four_of_five_seeds_do():
    assert rule([1.5, 1.6, 1.4, 1.55, 1.45])["passed"]
    assert rule([0.2, 0.1, 0.3, 0.2, 0.25], threshold=0.5, direction="at_most")["passed"]


@pytest.mark.parametrize(("values", "why"), [
    ([1.5, 1.6, 1.4, 0.9, 0.8], "two seeds below: only 3 of 5 pass"),
    ([5.0, 1.1, 1.1, 1.1, -2.0], "four seeds pass but the spread puts the interval's lower end below"),
    ([1.5, 1.6, 1.4, 1.55], "fewer than the five seeds the rule needs"),
    ([1.5, 1.6, float("nan"), 1.55, 1.45], "an undefined seed leaves the interval undefined"),
])
def test_a_statistic_fails_on_either_half_of_the_rule(values, why):
    assert not rule(values)["passed"], why


def test_the_count_of_passing_seeds_decides_on_its_own():
    """The interval clears here, and only the count fails where every seed must pass.  (With all seeds but one to
    pass, as C3 has it, two seeds below the threshold pull the interval's lower end below it too: the next test.)"""
    values = dict(enumerate([1.1, 1.1, 1.1, 1.1, 0.99]))
    strict = seed_rule(values, 1.0, "at_least", confidence=0.95, min_passing=5, min_seeds=5)
    assert strict["interval"][0] > 1.0 and strict["seeds_passing"] == 4 and not strict["passed"]
    assert seed_rule(values, 1.0, "at_least", confidence=0.95, min_passing=4, min_seeds=5)["passed"]


@pytest.mark.parametrize(("seeds", "min_passing"), [(3, 2), (5, 4)])
def test_with_all_seeds_but_one_to_pass_the_count_never_decides_alone(seeds, min_passing):
    """docs/methods.md's argument, on random draws: wherever too few seeds clear the bound, so does the interval."""
    draws = np.random.default_rng(0).normal(1.0, 1.0, size=(20_000, seeds))
    for values in draws:
        result = seed_rule(dict(enumerate(values)), 1.0, "at_least", confidence=0.95, min_passing=min_passing,
                           min_seeds=seeds)
        assert result["seeds_passing"] >= min_passing or result["interval"][0] < 1.0


def test_the_rule_records_what_it_decided_from():
    result = rule([1.5, 1.6, 1.4, 0.9, 1.45])
    assert result["seeds_passing"] == 4 and result["seeds"] == 5 and result["values"][3] == 0.9
    assert result["interval"][0] < result["mean"] < result["interval"][1]


def test_the_rule_for_one_seed_is_that_seed_clearing_the_threshold():
    """No interval on one value: the seed itself decides, either way, and an undefined value fails."""
    from behind_rope.claims.seeds import describe

    def one(value, direction="at_least"):
        return seed_rule({"seed": value}, 1.0, direction, confidence=0.95, min_passing=1, min_seeds=1)

    assert one(1.2)["passed"] and not one(0.8)["passed"] and not one(float("nan"))["passed"]
    assert one(0.8, "at_most")["passed"] and not one(1.2, "at_most")["passed"]
    assert one(1.2)["mean"] == 1.2 and describe(one(1.2)).startswith("value 1.2, 1/1 seeds")
    assert not seed_rule({}, 1.0, "at_least", confidence=0.95, min_passing=1, min_seeds=1)["passed"]
