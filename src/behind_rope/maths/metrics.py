"""Summaries of a mean score matrix (queries on rows, keys on columns; NaN where masked).

Only the lower triangle (key j < query i) enters the metrics: the diagonal is a self-score,
which the L2 variants fix at 1, and the upper triangle is masked in causal models.  The constants
that define them (grids, which queries are late, how many keys are start keys) are the
pre-registration's ``measures:`` (config/claims.yaml), handed over as :class:`Measures`.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from behind_rope.maths.blocks import block_mean
from behind_rope.maths.decompose import key_group_contrast, late_key_sums


@dataclass(frozen=True)
class Measures:
    """The shared definitions of config/claims.yaml's ``measures:``, with the positions they name."""

    block_grid: int
    drawn_grid: int
    late_query_fraction: float
    start_key_fraction: float
    early_query_fraction: float
    first_keys: int
    quantiles: tuple[float, float]
    floor_splits: int
    floor_quantile: float

    @classmethod
    def of(cls, measures: dict) -> Measures:
        """From the ``measures:`` mapping of the config."""
        return cls(**{**measures, "quantiles": tuple(measures["quantiles"])})

    @staticmethod
    def _count(seq_len: int, fraction: float) -> int:
        return int(seq_len * fraction + 1e-9)

    def late_from(self, seq_len: int) -> int:
        """The first late query."""
        return self._count(seq_len, self.late_query_fraction)

    def start_keys(self, seq_len: int) -> int:
        """How many keys are start keys (at least one)."""
        return max(1, self._count(seq_len, self.start_key_fraction))

    def early_queries(self, seq_len: int) -> np.ndarray:
        """Queries 1 .. S x early_query_fraction (at least query 1)."""
        return np.arange(1, max(2, self._count(seq_len, self.early_query_fraction) + 1))

    def late_queries(self, seq_len: int) -> np.ndarray:
        return np.arange(self.late_from(seq_len), seq_len)


@dataclass(frozen=True)
class SplitNoise:
    """A run's groups of sequences, for noise from many splits into halves instead of one: each group's mean
    scores minus the run's, (groups, S, S), at the lower triangle (what a causal run has; a run without the mask
    has its noise read there too) and NaN elsewhere; and each group's weight in (half A - half B) / 2 for each
    split, (splits, groups) (behind_rope.maths.splits)."""

    deviations: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, data: dict, layer: int, measures: Measures) -> SplitNoise | None:
        """Layer ``layer`` (0-based) of a score file that kept its groups (``score_group_deviations``), else None."""
        if "score_group_deviations" not in data:
            return None
        from behind_rope.maths.splits import half_weights

        seq_len = data["mean_scores"].shape[-1]
        groups = data["score_group_deviations"].shape[1]
        deviations = np.full((groups, seq_len * seq_len), np.nan)
        deviations[:, data["score_group_entries"]] = data["score_group_deviations"][layer]
        weights_a, weights_b = half_weights(data["score_group_sizes"], measures.floor_splits)
        return cls(deviations.reshape(groups, seq_len, seq_len), (weights_a - weights_b) / 2)

    def floor(self, per_group: np.ndarray, statistic, quantile: float) -> float:
        """The ``quantile`` over the splits of ``statistic`` (a function of one row: the values of one split's
        noise) of the noise ``per_group`` (groups, n) makes in each split: the values are linear in the scores, so
        a split's noise is its weights times each group's.  Columns that are not finite in every group are left
        out."""
        per_group = per_group.reshape(len(per_group), -1)
        kept = per_group[:, np.isfinite(per_group).all(0)]
        return float(np.quantile(statistic(self.weights @ kept), quantile))


def noise_floor_record(data: dict, measures: Measures) -> dict:
    """How a metrics file's split-half noise was taken: over ``floor_splits`` splits of the run's groups, or, for
    a run that kept no groups, from its one split into halves (even and odd sequences)."""
    if "score_group_deviations" in data:
        return {"splits": measures.floor_splits, "quantile": measures.floor_quantile,
                "groups": int(len(data["score_group_sizes"]))}
    return {"splits": 1, "quantile": None, "groups": 2}


@lru_cache(maxsize=4)
def _offsets(seq_len: int) -> np.ndarray:
    """Diagonal index of every entry, flat: i - j + (S - 1), from 0 (top right) to 2S - 2 (bottom left).
    Built once per size (read-only: every call shares it)."""
    positions = np.arange(seq_len)
    index = (positions[:, None] - positions[None, :] + seq_len - 1).ravel()
    index.flags.writeable = False
    return index


# While a score file's layer is measured, each of its matrices is normalised once (normalising_once).
_NORMALISED: ContextVar[dict | None] = ContextVar("normalised_matrices", default=None)


@contextmanager
def normalising_once():
    """Within it, :func:`diagonal_normalise` of the same array returns the result it computed before, read-only.

    A layer's metrics ask for the normalised mean and halves several times each.  The cache holds the
    arrays it was given, so no other array can take their place in memory while it lives."""
    token = _NORMALISED.set({})
    try:
        yield
    finally:
        _NORMALISED.reset(token)


def diagonal_normalise(scores: np.ndarray) -> np.ndarray:
    """Subtract from every diagonal (fixed offset i - j) the mean of its finite entries.

    What is left is the non-relative part.  NaN (masked) entries stay NaN.
    """
    scores = np.asarray(scores, dtype=float)
    cache = _NORMALISED.get()
    if cache is None:
        return _diagonal_normalise(scores)
    key = (scores.__array_interface__["data"][0], scores.shape, scores.strides)
    if key not in cache:
        normalised = _diagonal_normalise(scores)
        normalised.flags.writeable = False
        cache[key] = (scores, normalised)
    return cache[key][1]


def _diagonal_normalise(scores: np.ndarray) -> np.ndarray:
    seq_len = scores.shape[-1]
    index = _offsets(seq_len)
    flat = scores.reshape(-1, seq_len * seq_len)
    out = np.empty_like(flat)
    for row, values in enumerate(flat):
        finite = np.isfinite(values)
        sums = np.bincount(index, weights=np.where(finite, values, 0.0), minlength=2 * seq_len - 1)
        counts = np.bincount(index, weights=finite, minlength=2 * seq_len - 1)
        out[row] = values - (sums / np.maximum(counts, 1))[index]
    return out.reshape(scores.shape)


def strictly_lower(seq_len: int) -> np.ndarray:
    return np.tril(np.ones((seq_len, seq_len), dtype=bool), -1)


def split_half_reliability(half_a: np.ndarray, half_b: np.ndarray, grid: int | None = None) -> float:
    """Correlation over the unmasked strict lower triangle of the diagonal-normalised halves.

    Near 1 when the non-relative residual is systematic, near 0 when it is sampling noise.  With
    ``grid``, the halves are first reduced to block means on a ``grid`` x ``grid`` grid.
    """
    a, b = diagonal_normalise(half_a), diagonal_normalise(half_b)
    if grid is not None:
        a, b = block_mean(a, grid), block_mean(b, grid)
    keep = strictly_lower(a.shape[-1]) & np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[keep], b[keep])[0, 1])


def block_reliability(half_a: np.ndarray, half_b: np.ndarray, grid: int) -> float:
    """Split-half reliability after block means on a ``grid`` x ``grid`` grid.

    With few sequences each of a million entries is mostly sampling noise, so entry-level
    reliability understates a smooth systematic residual; block means keep the residual and
    average the noise out.  Without systematic structure it stays near 0 at any grid size.
    """
    return split_half_reliability(half_a, half_b, grid)


def nonrelative_index(scores: np.ndarray) -> float:
    """Share of the (unmasked) strict-lower-triangle variance that the per-diagonal means leave unexplained.

    0 for a Toeplitz (purely relative) matrix, 1 when the diagonal means explain nothing.
    """
    keep = strictly_lower(scores.shape[-1]) & np.isfinite(scores)
    total = np.var(scores[keep])
    if total == 0:
        return 0.0
    return float(np.var(diagonal_normalise(scores)[keep]) / total)


def start_deficit(scores: np.ndarray, start_keys: int, late_from: int) -> float:
    """Mean residual at keys near the start minus the mean at mid-context keys, for late queries.

    On the diagonal-normalised scores; the start keys are the first ``start_keys`` positions (key 0
    included), and mid-context keys lie between them and the query's own neighbourhood (the
    ``start_keys`` keys just before it).  Negative when early keys score lower than their offset alone
    predicts.  NaN when the mask hides every start key from the late queries (a sliding window shorter
    than half the sequence).
    """
    return key_group_contrast(diagonal_normalise(scores), np.arange(start_keys), start_keys, start_keys, late_from)


def split_half_floor(values, sizes, splits: int, quantile: float, seed: int = 0) -> float:
    """The sampling noise of a mean over replicates, from many splits rather than one: over ``splits`` random
    splits of the replicates into two halves, the ``quantile`` of |mean A - mean B| / 2 (each half's mean weighted
    by the replicates' ``sizes``), which estimates the noise of the mean of all of them.  For a statistic linear in
    the scores (a start deficit), each replicate's own value is all it needs.  NaN with fewer than two replicates."""
    from behind_rope.maths.splits import split_floor

    return float(split_floor(values, sizes, splits, quantile, seed=seed)) / 2


def key_slopes(scores: np.ndarray, relative: bool = False) -> np.ndarray:
    """Per query (with at least two earlier unmasked keys): the least-squares slope of score against key position.

    With ``relative``, the slope in units of the row's own spread: the correlation of score with key position
    over the row's earlier keys (the slope x the keys' spread / the scores' spread; 0 for a flat row).  It does
    not change when every score is multiplied by one number, so it compares runs whose scores come on different
    scales: a trained twin's logits and the parameter-free simulation's scores of unit vectors."""
    seq_len = scores.shape[-1]
    keys = np.broadcast_to(np.arange(seq_len, dtype=float), (seq_len, seq_len))
    use = strictly_lower(seq_len) & np.isfinite(scores)
    n = use.sum(1)
    values = np.where(use, scores, 0.0)
    key_mean = np.where(use, keys, 0.0).sum(1) / np.maximum(n, 1)
    centred = np.where(use, keys - key_mean[:, None], 0.0)
    covariance = (centred * values).sum(1)
    if relative:
        score_mean = values.sum(1) / np.maximum(n, 1)
        score_squares = np.where(use, (values - score_mean[:, None]) ** 2, 0.0).sum(1)
        spread = np.sqrt((centred**2).sum(1) * score_squares)
        slopes = np.where(spread > 0, covariance / np.maximum(spread, 1e-300), 0.0)
    else:
        slopes = covariance / np.maximum((centred**2).sum(1), 1e-300)
    return slopes[n >= 2]


def locality(scores: np.ndarray) -> float:
    """Share of query rows whose score rises with key position (a positive slope over earlier keys)."""
    return float(np.mean(key_slopes(scores) > 0))


def key_slope(scores: np.ndarray) -> float:
    """Mean over queries of the score slope per key position: how strongly scores favour nearby keys.

    Scores are pre-softmax logits, so the slope is the extra log-weight a key gains per position
    closer to its query; it ignores per-query offsets, as the softmax does.
    """
    return float(key_slopes(scores).mean())


def key_slope_noise(half_a: np.ndarray, half_b: np.ndarray) -> float:
    """The sampling noise of one query's key slope in the mean of two halves: the root mean square over queries
    of (half A's slope - half B's) / 2.  Locality counts the queries whose slope is positive, so a slope well
    below this noise shows as a locality near 0.5 whatever its sign."""
    difference = (key_slopes(half_a) - key_slopes(half_b)) / 2
    return float(np.sqrt(np.mean(difference**2)))


def key_slope_half_differences(half_a: np.ndarray, half_b: np.ndarray, relative: bool = False) -> list[float]:
    """Per query row: (half A's key slope - half B's) / 2, a draw of the sampling noise of that row's slope in the
    mean of the halves (rows near the start average fewer keys and are noisier; behind_rope.claims.power)."""
    return ((key_slopes(half_a, relative) - key_slopes(half_b, relative)) / 2).tolist()


def layer_metrics(mean: np.ndarray, half_a: np.ndarray, half_b: np.ndarray, measures: Measures) -> dict:
    seq_len = mean.shape[-1]
    return {
        "split_half_reliability": split_half_reliability(half_a, half_b),
        "block_reliability": block_reliability(half_a, half_b, measures.block_grid),
        "nonrelative_index": nonrelative_index(mean),
        "start_deficit": start_deficit(mean, measures.start_keys(seq_len), measures.late_from(seq_len)),
        "locality": locality(mean),
        "key_slope": key_slope(mean),
        "key_slope_noise": key_slope_noise(half_a, half_b),
        "key_slope_half_differences": key_slope_half_differences(half_a, half_b),
        # the same slope relative to each row's score spread (C3's amplification, in units the twin and the
        # simulation share), and its rows' half differences (C3's power)
        "key_trend": float(key_slopes(mean, relative=True).mean()),
        "key_trend_half_differences": key_slope_half_differences(half_a, half_b, relative=True),
    }


def drawn_reliability(half_a: np.ndarray, half_b: np.ndarray, grid: int) -> float:
    """Split-half reliability of exactly what a score panel draws: the diagonal-normalised matrix as
    block means on a ``grid`` x ``grid`` grid, every cell that has a finite value (diagonal included)."""
    a, b = (block_mean(diagonal_normalise(half), grid) for half in (half_a, half_b))
    keep = np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[keep], b[keep])[0, 1])


def residual_reliability(residual_a: np.ndarray, residual_b: np.ndarray, grid: int) -> float:
    """Split-half reliability of the softmax-visible residual with the first key left out (block means):
    a systematic non-relative part that the first key plays no part in (claim C6)."""
    a, b = (block_mean(np.where(np.arange(r.shape[-1]) > 0, r, np.nan), grid) for r in (residual_a, residual_b))
    keep = strictly_lower(a.shape[-1]) & np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[keep], b[keep])[0, 1]) if keep.sum() > 2 else float("nan")


def _quantile_width(matrix: np.ndarray, quantiles) -> float:
    values = matrix[np.isfinite(matrix)]
    low, high = np.quantile(values, quantiles) if values.size else (np.nan, np.nan)
    return float(high - low)


def spread_ratio(mean: np.ndarray, half_a: np.ndarray, half_b: np.ndarray, measures: Measures,
                 split_noise: SplitNoise | None = None) -> dict[str, float]:
    """How large the non-relative pattern is against the raw scores, as the paper reads it off Figure 5's
    colour bars (claim C5b): the width between the ``quantiles`` of the diagonal-normalised scores over
    the same width of the raw scores, both as drawn (``drawn_grid`` block means, diagonal and key 0
    included).  The split-half noise, (half A - half B) / 2 diagonal-normalised, gives the same ratio for
    sampling noise alone: with ``split_noise``, the ``floor_quantile`` of that ratio over the splits."""
    def drawn(matrix):
        return block_mean(matrix, measures.drawn_grid)

    raw = _quantile_width(drawn(mean), measures.quantiles)
    pattern = _quantile_width(drawn(diagonal_normalise(mean)), measures.quantiles)
    if split_noise is None:
        noise = _quantile_width(drawn(diagonal_normalise((half_a - half_b) / 2)), measures.quantiles)
    else:  # diagonal normalising and block means are linear, so each group's drawn matrix is all a split needs
        low, high = measures.quantiles
        noise = split_noise.floor(drawn(diagonal_normalise(split_noise.deviations)),
                                  lambda rows: np.quantile(rows, high, axis=1) - np.quantile(rows, low, axis=1),
                                  measures.floor_quantile)
    return {"raw_spread": raw, "pattern_spread": pattern, "spread_ratio": pattern / raw, "noise_spread_ratio": noise / raw}


def first_keys(mean: np.ndarray, half_a: np.ndarray, half_b: np.ndarray, measures: Measures,
               split_noise: SplitNoise | None = None) -> dict:
    """Whether the first few keys stand apart (claim C5c), and key 0, the sink, on its own.

    On the diagonal-normalised scores cut to the lower triangle (so runs with and without the mask are
    read on the same entries), late queries: the contrast of keys 1 .. ``first_keys`` (and of key 0)
    against mid-context keys (:func:`key_group_contrast`), for the mean and each half.  Its noise floor
    is the standard deviation of the same contrast over placebo groups of as many mid-context keys, on
    the split-half noise (half A - half B) / 2: what sampling alone makes of a group of keys.  With
    ``split_noise``, the ``floor_quantile`` of that standard deviation over the splits.
    """
    seq_len, count = mean.shape[-1], measures.first_keys
    late_from = measures.late_from(seq_len)
    lower = np.tril(np.ones((seq_len, seq_len), dtype=bool))
    # Under the mask the upper triangle is NaN already: the matrix itself, normalised once for the layer.
    def lower_only(m):
        return m if np.isnan(m[..., ~lower]).all() else np.where(lower, m, np.nan)

    mean, half_a, half_b = (diagonal_normalise(lower_only(m)) for m in (mean, half_a, half_b))
    noise = (half_a - half_b) / 2

    def contrasts(matrix):
        sums, counts, mid = late_key_sums(matrix, late_from, count, count + 1)

        def of(keys):
            with np.errstate(invalid="ignore", divide="ignore"):
                return float(sums[keys].sum() / counts[keys].sum() - mid)

        return of

    first, sink = np.arange(1, count + 1), np.array([0])
    # Placebo groups lie before every late query's own neighbourhood, so each is seen whole by every late query.
    placebos = [np.arange(start, start + count) for start in range(count + 1, late_from - 2 * count, count)]
    singles = [np.array([key]) for key in range(count + 1, late_from - count)]

    def spread(values):
        values = [v for v in values if v == v]
        return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")

    of_mean, of_a, of_b, of_noise = (contrasts(m) for m in (mean, half_a, half_b, noise))
    if split_noise is None:
        first_noise, sink_noise = (spread([of_noise(keys) for keys in groups]) for groups in (placebos, singles))
    else:  # each group's contrasts, then each split's: a contrast is linear in the scores
        sums, counts, mid = late_key_sums(diagonal_normalise(lower_only(split_noise.deviations)), late_from, count,
                                          count + 1)

        def by_group(key_groups):
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.stack([sums[:, keys].sum(1) / counts[:, keys].sum(1) - mid for keys in key_groups], axis=1)

        def spread_by_split(rows):
            return np.std(rows, axis=1, ddof=1)

        first_noise, sink_noise = (split_noise.floor(by_group(groups), spread_by_split, measures.floor_quantile)
                                   for groups in (placebos, singles))
    return {
        "first_keys_contrast": of_mean(first),
        "first_keys_contrast_halves": [of_a(first), of_b(first)],
        "first_keys_noise": first_noise,
        "sink_contrast": of_mean(sink),
        "sink_contrast_halves": [of_a(sink), of_b(sink)],
        "sink_noise": sink_noise,
    }


def decomposition_metrics(stack: np.ndarray, measures: Measures) -> list[dict]:
    """Per layer of a (layers, 3, S, S) stack of (mean, half A, half B): what the softmax can see of the
    non-relative part, the sink apart (behind_rope.maths.decompose, key 0 left out of the fit).

    - the variance shares of the relative part, the query offset (invisible to the softmax), the
      softmax-visible residual, and the paper's non-relative share (offset and residual together);
    - the sink: key 0's residual for late queries; the share of the residual that key profiles explain;
    - the start deficit with the sink excluded (keys 1 .. start keys against mid-context keys, late
      queries), the paper's way (on the diagonal-normalised scores) and on the softmax-visible residual,
      for the mean and each half;
    - the split-half reliability of the residual with the first key left out, and the first-key and
      mask components with the residual-stream share at early and late queries
      (behind_rope.maths.position_sources).
    """
    from behind_rope.maths import decompose, position_sources

    parts = decompose.decompose(stack)
    seq_len = stack.shape[-1]
    start_keys, late_from = measures.start_keys(seq_len), measures.late_from(seq_len)
    early = position_sources.components(parts.residual[:, 0], measures.early_queries(seq_len))
    early_halves = [position_sources.components(parts.residual[:, half], measures.early_queries(seq_len)) for half in (1, 2)]
    late = position_sources.components(parts.residual[:, 0], measures.late_queries(seq_len))
    visible = [residual_reliability(parts.residual[k, 1], parts.residual[k, 2], measures.block_grid)
               for k in range(len(stack))]
    mean_residual = parts.residual[:, 0]
    shares = decompose.variance_shares(stack[:, 0], parts=decompose.Decomposition(
        parts.query_offset[:, 0], parts.relative[:, 0], mean_residual, parts.fitted[:, 0]))
    paper_deficit = decompose.start_deficit(diagonal_normalise(stack), start_keys, late_from)
    visible_deficit = decompose.start_deficit(parts.residual, start_keys, late_from)
    sink, profile_share = decompose.sink(mean_residual, late_from), decompose.key_profile_share(mean_residual)
    return [{"relative_share": float(shares["relative"][k]), "query_offset_share": float(shares["query_offset"][k]),
             "visible_share": float(shares["visible_nonrelative"][k]),
             "paper_nonrelative_share": float(shares["paper_nonrelative"][k]),
             "key_profile_share": float(profile_share[k]), "sink": float(sink[k]),
             "start_deficit_paper": float(paper_deficit[k, 0]), "start_deficit_paper_halves": paper_deficit[k, 1:].tolist(),
             "start_deficit_visible": float(visible_deficit[k, 0]),
             "start_deficit_visible_halves": visible_deficit[k, 1:].tolist(), "visible_reliability": visible[k],
             **{f"{name}_early": float(value[k]) for name, value in early.items()},
             **{f"{name}_early_halves": [float(half[name][k]) for half in early_halves] for name in ("first_key", "mask")},
             **{f"{name}_late": float(value[k]) for name, value in late.items()}}
            for k in range(len(stack))]


def score_file_metrics(data: dict[str, np.ndarray], measures: Measures) -> dict:
    """Metrics of every layer of a score file (``mean_scores``, ``half_a``, ``half_b`` and ``metadata``).

    Files of pretrained models record each layer's attention type (full or sliding window); it is
    copied next to that layer's metrics.  ``positions`` records the key and query ranges the measures
    used (the start keys, the first late query), so a figure draws them as the measures took them.
    """
    from behind_rope.atomic import npz_metadata

    metadata = npz_metadata(data)
    stack = np.stack([data["mean_scores"], data["half_a"], data["half_b"]], axis=1)
    decomposed = decomposition_metrics(stack, measures)
    layers = []
    for k, (mean, half_a, half_b) in enumerate(stack):
        split_noise = SplitNoise.of(data, k, measures)
        with normalising_once():
            layers.append({"layer": k + 1, **layer_metrics(mean, half_a, half_b, measures),
                           "drawn_reliability": drawn_reliability(half_a, half_b, measures.drawn_grid), **decomposed[k],
                           **spread_ratio(mean, half_a, half_b, measures, split_noise),
                           **first_keys(mean, half_a, half_b, measures, split_noise)})
    for layer, layer_type in zip(layers, metadata.get("layer_types", ()), strict=False):
        layer["layer_type"] = layer_type
    if "chunk_means" in data:  # a simulation's replicates: each chunk's own start deficit (claim C4's floor)
        for k, layer in enumerate(layers):
            layer["start_deficit_replicates"] = [
                start_deficit(chunk[k], measures.start_keys(stack.shape[-1]), measures.late_from(stack.shape[-1]))
                for chunk in data["chunk_means"]]
            layer["replicate_sizes"] = [int(n) for n in data["chunk_sizes"]]
    seq_len = stack.shape[-1]
    positions = {"start_keys": measures.start_keys(seq_len), "late_from": measures.late_from(seq_len)}
    return {"metadata": metadata, "positions": positions, "noise_floor": noise_floor_record(data, measures),
            "layers": layers}
