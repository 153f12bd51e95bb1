import contextlib
import json

import numpy as np
import pytest

from behind_rope.maths import metrics

S = 30
ROWS, COLS = np.indices((S, S))
CAUSAL = np.where(COLS <= ROWS, 1.0, np.nan)
START = (S // 10, S // 2)  # start keys, first late query (measures: start_key_fraction, late_query_fraction)


def toeplitz():
    return CAUSAL * np.exp(-(ROWS - COLS) / 5.0)


def planted_absolute(strength=0.5):
    # Relative decay plus an absolute-position effect: keys near the start score lower.
    return toeplitz() - strength * CAUSAL * np.exp(-COLS / 3.0)


def test_diagonal_normalise_zeroes_every_diagonal_mean():
    residual = metrics.diagonal_normalise(planted_absolute())
    for offset in range(S):
        assert abs(np.nanmean(np.diagonal(residual, -offset))) < 1e-12
    assert np.isnan(residual[0, 1])


def test_toeplitz_matrix_is_purely_relative():
    assert metrics.nonrelative_index(toeplitz()) == pytest.approx(0.0, abs=1e-12)
    assert np.nanmax(np.abs(metrics.diagonal_normalise(toeplitz()))) < 1e-12
    assert metrics.start_deficit(toeplitz(), *START) == pytest.approx(0.0, abs=1e-12)


def test_planted_absolute_structure_scores_high():
    column_only = CAUSAL * COLS
    assert metrics.nonrelative_index(column_only) > 0.5
    assert metrics.nonrelative_index(planted_absolute()) > 0.05
    assert metrics.start_deficit(planted_absolute(), *START) < -0.05


def test_split_half_reliability_separates_structure_from_noise():
    rng = np.random.default_rng(0)

    def noise():
        return 0.01 * rng.standard_normal((S, S))

    structured = metrics.split_half_reliability(planted_absolute() + noise(), planted_absolute() + noise())
    relative_only = metrics.split_half_reliability(toeplitz() + noise(), toeplitz() + noise())
    assert structured > 0.9
    assert abs(relative_only) < 0.2


def test_locality_is_the_share_of_rows_rising_toward_the_query():
    assert metrics.locality(CAUSAL * COLS) == 1.0
    assert metrics.locality(-CAUSAL * COLS) == 0.0
    mixed = np.where(ROWS % 2 == 0, 1.0, -1.0) * CAUSAL * COLS
    assert metrics.locality(mixed) == pytest.approx(0.5, abs=0.05)


def test_the_key_slope_noise_is_the_halves_disagreement_row_by_row():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 1.0, (2, *CAUSAL.shape)) * CAUSAL
    same = 0.3 * CAUSAL * COLS
    assert metrics.key_slope_noise(same, same) == 0.0
    assert metrics.key_slope_noise(same + noise[0], same + noise[1]) > 0
    differences = metrics.key_slope_half_differences(same + noise[0], same + noise[1])
    assert len(differences) == CAUSAL.shape[0] - 2  # rows with two keys or more
    assert np.sqrt(np.mean(np.square(differences))) == pytest.approx(metrics.key_slope_noise(same + noise[0], same + noise[1]))
    assert metrics.key_slope_half_differences(same, same) == [0.0] * (CAUSAL.shape[0] - 2)


def test_key_slope_is_the_mean_score_gain_per_key_position():
    assert metrics.key_slope(0.3 * CAUSAL * COLS) == pytest.approx(0.3)
    assert metrics.key_slope(CAUSAL * (5.0 + 0 * COLS)) == pytest.approx(0.0, abs=1e-12)
    row_offsets = CAUSAL * (0.3 * COLS + ROWS**2)  # per-query offsets do not change the slope
    assert metrics.key_slope(row_offsets) == pytest.approx(0.3)


def test_the_key_slope_relative_to_each_rows_spread_is_the_same_on_every_scale():
    """C3's amplification compares a trained twin's logits with the simulation's scores of unit vectors and an
    untrained twin's small logits: its slope, relative to each row's score spread, is the correlation of a row's
    scores with key position, and no common scale of the scores moves it."""
    rng = np.random.default_rng(0)
    scores = np.where(CAUSAL > 0, 0.3 * COLS + rng.normal(size=COLS.shape), np.nan)
    relative = metrics.key_slopes(scores, relative=True)
    assert np.allclose(relative, metrics.key_slopes(1e-3 * scores, relative=True))  # an untrained twin's scale
    assert not np.allclose(metrics.key_slopes(scores), metrics.key_slopes(1e-3 * scores))  # the raw slope moves
    row = scores[10, :10]  # query 10's earlier keys
    assert relative[-(scores.shape[0] - 10)] == pytest.approx(np.corrcoef(np.arange(10), row)[0, 1])
    assert np.all(np.abs(relative) <= 1 + 1e-12)
    assert np.allclose(metrics.key_slopes(np.where(CAUSAL > 0, 5.0, np.nan), relative=True), 0.0)  # flat rows


def test_start_deficit_needs_room_for_start_and_mid_context_keys():
    with pytest.raises(ValueError, match="too short"):
        metrics.start_deficit(np.ones((3, 3)), 1, 2)


def test_within_a_layer_each_matrix_is_normalised_once_and_the_metrics_stay_the_same(monkeypatch):
    from conftest import default_measures

    rng = np.random.default_rng(0)
    halves = [planted_absolute() + 0.1 * rng.standard_normal((S, S)) * CAUSAL for _ in range(2)]
    data = {"mean_scores": np.stack([(halves[0] + halves[1]) / 2] * 2), "half_a": np.stack([halves[0]] * 2),
            "half_b": np.stack([halves[1]] * 2), "metadata": np.array("{}")}
    with metrics.normalising_once():
        first = metrics.diagonal_normalise(halves[0])
        assert metrics.diagonal_normalise(halves[0]) is first and not first.flags.writeable
        assert metrics.diagonal_normalise(halves[0].copy()) is not first  # another array, computed anew
    assert metrics.diagonal_normalise(halves[0]) is not first  # outside, nothing is kept

    computed = []
    normalise = metrics._diagonal_normalise
    monkeypatch.setattr(metrics, "_diagonal_normalise", lambda scores: computed.append(1) or normalise(scores))
    once = metrics.score_file_metrics(data, default_measures())
    calls_once = len(computed)
    monkeypatch.setattr(metrics, "normalising_once", contextlib.nullcontext)
    every_time = metrics.score_file_metrics(data, default_measures())
    assert json.dumps(once) == json.dumps(every_time)  # the same numbers, bit for bit (NaN included)
    seq_len = data["mean_scores"].shape[-1]  # the ranges the measures took, for the figures to draw
    assert once["positions"] == {"start_keys": default_measures().start_keys(seq_len),
                                 "late_from": default_measures().late_from(seq_len)}
    assert calls_once < (len(computed) - calls_once) / 2  # and far fewer normalisations


def test_a_floor_from_many_splits_is_a_quantile_of_the_split_half_gaps_and_shrinks_with_the_noise():
    from behind_rope.maths.metrics import split_half_floor

    rng = np.random.default_rng(0)
    noisy, quiet = rng.normal(0, 1.0, 20), rng.normal(0, 0.1, 20)
    sizes = [100] * 20
    wide, narrow = (split_half_floor(v, sizes, splits=400, quantile=0.95) for v in (noisy, quiet))
    assert 0 < narrow < wide
    # The gap of one split of equal halves estimates the noise of the mean: sd / sqrt(n), here 1 / sqrt(20).
    assert 0.5 / 20**0.5 < split_half_floor(noisy, sizes, splits=400, quantile=0.5) < 1.5 / 20**0.5
    assert np.isnan(split_half_floor([0.3], [100], splits=10, quantile=0.95))


def _grouped_run(group_means: np.ndarray, sizes=None) -> dict:
    """A score file's arrays for runs whose 16 groups have the mean scores ``group_means`` (groups, S, S), as the
    recorder writes them with score_groups: the halves are the even and the odd groups."""
    sizes = np.full(len(group_means), 4) if sizes is None else np.asarray(sizes)
    mean = np.tensordot(sizes / sizes.sum(), group_means, axes=1)
    halves = [np.tensordot(sizes[part] / sizes[part].sum(), group_means[part], axes=1) for part in (slice(0, None, 2),
                                                                                                    slice(1, None, 2))]
    entries = np.flatnonzero(np.isfinite(mean))
    deviations = (group_means.reshape(len(group_means), -1)[:, entries] - mean.ravel()[entries]).astype(np.float16)
    return {"mean_scores": mean[None], "half_a": halves[0][None], "half_b": halves[1][None],
            "score_group_deviations": deviations[None], "score_group_entries": entries, "score_group_sizes": sizes}


def _noise_metrics(data: dict, measures) -> dict:
    noise = metrics.SplitNoise.of(data, 0, measures)
    mean, half_a, half_b = data["mean_scores"][0], data["half_a"][0], data["half_b"][0]
    return metrics.spread_ratio(mean, half_a, half_b, measures, noise) | metrics.first_keys(mean, half_a, half_b,
                                                                                            measures, noise)


def test_a_noise_floor_from_many_splits_sees_noise_that_one_split_misses():
    """Groups whose noise cancels between the even and the odd ones: the one split (the halves) sees none, many
    splits see it.  The floor of C5b's spread ratio and of C5c's first keys must come from the splits."""
    import dataclasses

    from conftest import default_measures

    measures = dataclasses.replace(default_measures(), drawn_grid=16)  # panels of 4 x 4 tokens, as at S = 1,024
    seq_len, rng = 64, np.random.default_rng(3)
    causal = np.where(np.tril(np.ones((seq_len, seq_len), dtype=bool)), 1.0, np.nan)
    pattern = causal * np.exp(-np.subtract.outer(np.arange(seq_len), np.arange(seq_len)).clip(0) / 5.0)
    pairs = rng.normal(size=(8, seq_len, seq_len))
    group_means = pattern + 0.2 * np.repeat(pairs, 2, axis=0) * causal  # group 2j == group 2j + 1
    data = _grouped_run(group_means)
    one_split = _noise_metrics({k: v for k, v in data.items() if not k.startswith("score_group")}, measures)
    many = _noise_metrics(data, measures)
    assert max(one_split[key] for key in ("noise_spread_ratio", "first_keys_noise", "sink_noise")) < 1e-6
    assert many["noise_spread_ratio"] > 0.05 and many["first_keys_noise"] > 1e-3 and many["sink_noise"] > 1e-3
    assert many["spread_ratio"] == one_split["spread_ratio"]  # the statistic itself is the mean's, as before
    # Two groups are the two halves: every split is that split, and the floor is the one split's noise.
    two = _grouped_run(np.stack([group_means[0], group_means[2]]), sizes=[8, 8])
    with_splits, halves = _noise_metrics(two, measures), _noise_metrics(
        {k: v for k, v in two.items() if not k.startswith("score_group")}, measures)
    for key in ("noise_spread_ratio", "first_keys_noise", "sink_noise"):
        assert with_splits[key] == pytest.approx(halves[key], rel=2e-3)  # the deviations are float16


def test_the_metrics_say_how_their_noise_was_taken():
    from conftest import default_measures

    measures = default_measures()
    grouped = _grouped_run(np.random.default_rng(0).normal(size=(16, 8, 8)))
    assert metrics.noise_floor_record(grouped, measures) == {"splits": measures.floor_splits,
                                                              "quantile": measures.floor_quantile, "groups": 16}
    assert metrics.noise_floor_record({"mean_scores": grouped["mean_scores"]}, measures)["splits"] == 1


def test_block_means_of_a_stack_are_each_matrixs_own():
    from behind_rope.maths.blocks import block_mean

    stack = np.random.default_rng(1).normal(size=(3, 10, 10)) * CAUSAL[:10, :10]
    np.testing.assert_array_equal(block_mean(stack, 4), np.stack([block_mean(m, 4) for m in stack]))
