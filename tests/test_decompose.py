import numpy as np
import pytest

from behind_rope.maths import metrics
from behind_rope.maths.decompose import (
    decompose,
    key_profile,
    key_profile_share,
    relative_matrix,
    sink,
    softmax_weights,
    start_deficit,
    variance_shares,
)

S = 120
START = (S // 10, S // 2)  # start keys, first late query (config/claims.yaml measures)
ROWS, COLS = np.indices((S, S))
OFFSETS = ROWS - COLS
CAUSAL = np.where(COLS <= ROWS, 1.0, np.nan)
WINDOW = 30  # late queries (i >= 60) of this sliding window never see the start keys 1..12
SLIDING = np.where((COLS <= ROWS) & (OFFSETS < WINDOW), 1.0, np.nan)
KEYS = np.arange(S)
STEP = np.where((KEYS >= 1) & (KEYS <= S // 10), 1.0, 0.0)  # keys 1..S/10
QUERY = 0.5 * np.sin(KEYS / 7.0) + 0.01 * KEYS  # a(i)
RELATIVE = np.exp(-KEYS / 20.0) - 0.002 * KEYS  # r(d)


def toeplitz(mask=CAUSAL):
    return mask * RELATIVE[np.abs(OFFSETS)]


def planted(mask=CAUSAL):
    return toeplitz(mask) + mask * QUERY[:, None]


def fitted_rows(exclude_keys):
    return KEYS > len(exclude_keys)  # row 0 sees no key; row 1 only key 0


def detrended(values, keys):
    """Values minus their least-squares line in the key position."""
    design = np.column_stack([np.ones_like(keys, dtype=float), keys])
    return values - design @ np.linalg.lstsq(design, values, rcond=None)[0]


@pytest.mark.parametrize("exclude_keys", [(), (0,)])
def test_query_offset_and_relative_part_come_back_up_to_the_shared_constant(exclude_keys):
    parts = decompose(planted(), exclude_keys)
    rows = fitted_rows(exclude_keys)
    shift = QUERY[rows].mean()  # convention: a has mean 0 over its fitted rows, r carries the level
    np.testing.assert_allclose(parts.query_offset[rows], QUERY[rows] - shift, atol=1e-8)
    last = S - len(exclude_keys)  # with key 0 excluded, offset S - 1 has no fitted entry
    np.testing.assert_allclose(parts.relative[1:last], RELATIVE[1:last] + shift, atol=1e-8)
    assert np.nanmax(np.abs(parts.residual)) < 1e-8
    assert np.isnan(parts.query_offset[~rows]).all() and np.isnan(parts.relative[last:]).all()
    assert np.isnan(parts.relative[0])


def test_residual_is_defined_on_excluded_keys_and_nan_elsewhere():
    parts = decompose(planted(), exclude_keys=(0,))
    assert not parts.fitted[:, 0].any()
    assert np.isfinite(parts.residual[2:-1, 0]).all()  # the sink's own residual can be read off
    assert np.isnan(parts.residual[S - 1, 0])  # offset S - 1: no fitted entry, r undefined
    assert np.isnan(parts.residual[1, 0])  # row 1: no fitted entry, a undefined
    assert np.isnan(parts.residual[COLS >= ROWS]).all()


def test_planted_parts_come_back_with_a_key_profile_and_noise():
    rng = np.random.default_rng(0)
    bump = np.exp(-(((KEYS - S / 2) / 8.0) ** 2))
    extra = CAUSAL * (bump[None, :] + 0.01 * rng.standard_normal((S, S)))
    whole, known, rest = decompose(planted() + extra), decompose(planted()), decompose(extra)
    # The fit is linear: the known parts come back, and what the extra term adds is its own fit.
    np.testing.assert_allclose(whole.query_offset, known.query_offset + rest.query_offset, atol=1e-10)
    np.testing.assert_allclose(whole.relative, known.relative + rest.relative, atol=1e-10)
    np.testing.assert_allclose(whole.residual, rest.residual, atol=1e-10)
    profile = key_profile(whole.residual)
    keys = np.arange(1, S - 1)
    assert np.corrcoef(detrended(profile[keys], keys), detrended(bump[keys], keys))[0, 1] > 0.99
    assert key_profile_share(whole.residual) > 0.8
    assert variance_shares(planted() + extra)["visible_nonrelative"] > 0.1


# A linear trend c * i also moves the diagonal means (offset d averages queries d..S-1), so the
# paper's normalisation counts a quarter of it as relative; random offsets average out there.
@pytest.mark.parametrize(("query", "least_share"), [(0.05 * KEYS, 0.7), (np.random.default_rng(1).standard_normal(S), 0.9)],
                         ids=["linear", "random"])
def test_a_pure_query_offset_is_invisible(query, least_share):
    shares = variance_shares(CAUSAL * query[:, None], exclude_keys=())
    assert shares["visible_nonrelative"] < 1e-12
    assert shares["relative"] + shares["query_offset"] == pytest.approx(1.0, abs=1e-12)
    assert shares["query_offset"] > least_share


@pytest.mark.parametrize(("profile", "exclude_keys"), [(-STEP, (0,)), (np.where(KEYS == 0, 5.0, 0.0), ())],
                         ids=["start-step", "sink"])
def test_a_nonlinear_key_profile_is_visible_and_nonrelative(profile, exclude_keys):
    scores = CAUSAL * profile[None, :]
    shares = variance_shares(scores, exclude_keys)
    assert shares["visible_nonrelative"] > 0.3
    recovered = key_profile(decompose(scores, exclude_keys).residual)
    # The profile comes back up to a linear trend in the key, which a(i) + r(i - j) absorbs.
    keys = np.arange(len(exclude_keys), S - 1)
    assert np.corrcoef(detrended(recovered[keys], keys), detrended(profile[keys], keys))[0, 1] > 0.99


def test_a_linear_key_trend_is_absorbed():
    # c * j = c * i - c * (i - j): a query offset plus a relative decay, and for a fixed query the
    # softmax weights exp(c j) / Z equal exp(-c (i - j)) / Z'.  No fit (and no attention head) can
    # tell it from a relative part, so nothing of it is left as visible non-relative structure.
    scores = CAUSAL * 0.03 * KEYS[None, :]
    assert variance_shares(scores)["visible_nonrelative"] < 1e-12
    assert np.nanmax(np.abs(decompose(scores).residual)) < 1e-10


def test_removing_the_query_offset_keeps_the_softmax_and_removing_the_residual_does_not():
    rng = np.random.default_rng(2)
    scores = planted() - CAUSAL * STEP[None, :] + 0.1 * CAUSAL * rng.standard_normal((S, S))
    parts = decompose(scores)
    weights = softmax_weights(scores)
    without_offset = softmax_weights(scores - np.nan_to_num(parts.query_offset)[:, None])
    np.testing.assert_allclose(without_offset, weights, rtol=0, atol=1e-12)
    without_residual = softmax_weights(scores - np.nan_to_num(parts.residual))
    assert np.nanmax(np.abs(without_residual - weights)) > 1e-3
    np.testing.assert_allclose(np.nansum(weights, axis=1), 1.0)


@pytest.mark.parametrize("mask", [CAUSAL, SLIDING, np.ones((S, S))], ids=["causal", "sliding", "unmasked"])
def test_a_purely_relative_matrix_has_no_visible_nonrelative_part(mask):
    scores = toeplitz(mask)
    if np.isfinite(mask).all():  # unmasked: the upper triangle is not part of the fit
        scores = np.where(COLS > ROWS, np.random.default_rng(3).standard_normal((S, S)), scores)
    for exclude_keys in [(), (0,)]:
        shares = variance_shares(scores, exclude_keys)
        assert shares["visible_nonrelative"] == pytest.approx(0.0, abs=1e-10)
        assert shares["relative"] == pytest.approx(1.0, abs=1e-10)


def test_an_excluded_sink_changes_neither_part_and_is_measured_apart():
    base = planted() - CAUSAL * STEP[None, :]
    height = 1e4
    with_sink = base + np.where(KEYS == 0, height, 0.0)[None, :]
    plain, sunk = decompose(base), decompose(with_sink)
    np.testing.assert_allclose(sunk.query_offset, plain.query_offset, atol=1e-8)
    np.testing.assert_allclose(sunk.relative, plain.relative, atol=1e-8)
    late = np.arange(S // 2, S - 1)  # offset S - 1 holds only key 0: no r there
    predicted = plain.query_offset[late] + plain.relative[late]
    assert sink(sunk.residual, S // 2) == pytest.approx(height + np.mean(base[late, 0] - predicted), rel=1e-12)
    assert sink(sunk.residual, S // 2) - sink(plain.residual, S // 2) == pytest.approx(height, rel=1e-10)
    # Left in the fit, the sink leaks into every offset it lies on.
    assert np.nanmax(np.abs(decompose(with_sink, ()).relative - decompose(base, ()).relative)) > 1.0


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_start_deficit_follows_the_start_keys_and_ignores_the_sink(sign):
    scores = toeplitz() + sign * 0.5 * CAUSAL * STEP[None, :]
    for way in (metrics.diagonal_normalise, lambda m: decompose(m).residual):
        assert sign * start_deficit(way(scores), *START) > 0.2
    with_sink = scores + np.where(KEYS == 0, 1e6, 0.0)[None, :]
    assert start_deficit(with_sink, *START) == start_deficit(scores, *START)
    assert start_deficit(decompose(with_sink).residual, *START) == pytest.approx(start_deficit(decompose(scores).residual, *START),
                                                                         abs=1e-8)


def test_start_deficit_is_nan_when_a_sliding_window_hides_the_start():
    scores = toeplitz(SLIDING) - 0.5 * SLIDING * STEP[None, :]
    assert np.isnan(start_deficit(decompose(scores).residual, *START))
    assert np.isnan(start_deficit(scores, *START))
    with pytest.raises(ValueError, match="too short"):
        start_deficit(np.ones((3, 3)), 1, 2)


def test_variance_shares_add_up_and_match_the_paper_normalisation():
    rng = np.random.default_rng(4)
    scores = planted() - CAUSAL * STEP[None, :] + 0.3 * CAUSAL * rng.standard_normal((S, S))
    for exclude_keys in [(), (0,)]:
        shares = variance_shares(scores, exclude_keys)
        total = shares["relative"] + shares["query_offset"] + shares["visible_nonrelative"]
        assert total == pytest.approx(1.0, abs=1e-12)
        assert shares["paper_nonrelative"] == pytest.approx(shares["query_offset"] + shares["visible_nonrelative"])
        assert min(shares.values()) > 0.01
    assert variance_shares(scores, ())["relative"] == pytest.approx(1 - metrics.nonrelative_index(scores), abs=1e-12)


def test_a_stack_gives_the_same_result_as_each_matrix_alone():
    rng = np.random.default_rng(5)
    masks = np.stack([CAUSAL, CAUSAL, SLIDING, np.ones((S, S)), CAUSAL, SLIDING]).reshape(2, 3, S, S)
    stack = masks * (planted(np.ones((S, S))) + rng.standard_normal((2, 3, S, S)))
    together = decompose(stack)
    shares = variance_shares(stack)
    assert together.residual.shape == (2, 3, S, S) and together.query_offset.shape == (2, 3, S)
    for index in np.ndindex(2, 3):
        alone = decompose(stack[index])
        for field in ("query_offset", "relative", "residual", "fitted"):
            np.testing.assert_allclose(getattr(together, field)[index], getattr(alone, field), atol=1e-12)
        for name, value in variance_shares(stack[index]).items():
            assert shares[name][index] == pytest.approx(value, abs=1e-12)
    np.testing.assert_allclose(sink(together.residual, S // 2)[1, 0], sink(decompose(stack[1, 0]).residual, S // 2))


def test_relative_matrix_is_the_toeplitz_matrix_of_the_offsets():
    matrix = relative_matrix(RELATIVE)
    np.testing.assert_array_equal(matrix[OFFSETS > 0], RELATIVE[OFFSETS[OFFSETS > 0]])
    assert np.isnan(matrix[OFFSETS <= 0]).all()


def test_unconnected_fitted_entries_are_refused():
    scores = np.full((8, 8), np.nan)
    scores[2, 1], scores[4, 2] = 1.0, 2.0  # two rows, two offsets, nothing shared
    with pytest.raises(ValueError, match="single constant"):
        decompose(scores, exclude_keys=())


def test_positional_leakage_sees_absolute_position_and_not_a_relative_pattern_or_what_the_offsets_carry():
    from behind_rope.maths.decompose import decompose, positional_leakage

    seq_len = 30
    query, key = np.indices((seq_len, seq_len))
    noise = 0.01 * np.random.default_rng(0).normal(size=(seq_len, seq_len))
    causal = key <= query
    relative = np.where(causal, np.exp(-(query - key) / 5) + noise, np.nan)
    key_trend = np.where(causal, 0.1 * key + noise, np.nan)   # absolute position: the later key scores higher
    stack = np.stack([relative, key_trend])
    leakage = positional_leakage(stack)
    assert abs(leakage[0]) < 0.01 and leakage[1] > 0.5
    # A linear key trend is a(i) = 0.1 i plus r(d) = -0.1 d to the softmax: with the offsets removed, nothing is left.
    assert np.all(np.abs(positional_leakage(stack, decompose(stack).query_offset)) < 0.01)
    assert positional_leakage(stack[None]).shape == (1, 2)
