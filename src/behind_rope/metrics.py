"""Summaries of a mean score matrix (queries on rows, keys on columns; NaN where masked).

Only the lower triangle (key j < query i) enters the metrics: the diagonal is a self-score,
which the L2 variants fix at 1, and the upper triangle is masked in causal models.
"""

from __future__ import annotations

import numpy as np


def diagonal_normalise(scores: np.ndarray) -> np.ndarray:
    """Subtract from every diagonal (fixed offset i - j) its own mean: what is left is not relative."""
    scores = np.asarray(scores, dtype=float)
    seq_len = scores.shape[-1]
    rows, cols = np.indices((seq_len, seq_len))
    out = scores.copy()
    for offset in range(-(seq_len - 1), seq_len):
        on_diagonal = rows - cols == offset
        values = scores[..., on_diagonal]
        if np.isfinite(values).any():
            out[..., on_diagonal] = values - np.nanmean(values, axis=-1, keepdims=True)
    return out


def strictly_lower(seq_len: int) -> np.ndarray:
    return np.tril(np.ones((seq_len, seq_len), dtype=bool), -1)


def split_half_reliability(half_a: np.ndarray, half_b: np.ndarray) -> float:
    """Correlation over the strict lower triangle of the diagonal-normalised halves.

    Near 1 when the non-relative residual is systematic, near 0 when it is sampling noise.
    """
    lower = strictly_lower(half_a.shape[-1])
    a = diagonal_normalise(half_a)[lower]
    b = diagonal_normalise(half_b)[lower]
    return float(np.corrcoef(a, b)[0, 1])


def nonrelative_index(scores: np.ndarray) -> float:
    """Share of the strict-lower-triangle variance that the per-diagonal means leave unexplained.

    0 for a Toeplitz (purely relative) matrix, 1 when the diagonal means explain nothing.
    """
    lower = strictly_lower(scores.shape[-1])
    total = np.var(scores[lower])
    if total == 0:
        return 0.0
    return float(np.var(diagonal_normalise(scores)[lower]) / total)


def start_deficit(scores: np.ndarray, start_keys: int | None = None) -> float:
    """Mean residual at keys near the start minus the mean at mid-context keys, for late queries.

    Late queries are the second half of positions; start keys are the first ``start_keys``
    positions (default: a tenth of the sequence, at least one).  Mid-context keys lie between
    the start keys and the query's own neighbourhood (the ``start_keys`` keys just before it),
    whose residual reflects how the near-diagonal scores drift from query to query.  Negative
    when early keys score lower than their offset alone predicts.
    """
    seq_len = scores.shape[-1]
    start_keys = start_keys or max(1, seq_len // 10)
    residual = diagonal_normalise(scores)
    rows, cols = np.indices((seq_len, seq_len))
    late = rows >= seq_len // 2
    near_start = residual[late & (cols < start_keys) & (cols < rows)]
    mid_context = residual[late & (cols >= start_keys) & (cols < rows - start_keys)]
    if near_start.size == 0 or mid_context.size == 0:
        raise ValueError(f"sequence of {seq_len} positions is too short for a start deficit")
    return float(near_start.mean() - mid_context.mean())


def key_slopes(scores: np.ndarray) -> np.ndarray:
    """Per query (with at least two earlier keys): the least-squares slope of score against key position."""
    return np.array([np.polyfit(np.arange(query), scores[query, :query], 1)[0] for query in range(2, scores.shape[-1])])


def locality(scores: np.ndarray) -> float:
    """Share of query rows whose score rises with key position (a positive slope over earlier keys)."""
    return float(np.mean(key_slopes(scores) > 0))


def key_slope(scores: np.ndarray) -> float:
    """Mean over queries of the score slope per key position: how strongly scores favour nearby keys.

    Scores are pre-softmax logits, so the slope is the extra log-weight a key gains per position
    closer to its query; it ignores per-query offsets, as the softmax does.
    """
    return float(key_slopes(scores).mean())


def layer_metrics(mean: np.ndarray, half_a: np.ndarray, half_b: np.ndarray) -> dict[str, float]:
    return {
        "split_half_reliability": split_half_reliability(half_a, half_b),
        "nonrelative_index": nonrelative_index(mean),
        "start_deficit": start_deficit(mean),
        "locality": locality(mean),
        "key_slope": key_slope(mean),
    }
