"""Per-head measures of where absolute position comes from (claims C6, C8b and C9); numpy only.

A score run with ``per_head`` (behind_rope.capture.scores.ScoreRecorder) records, per layer, head and
query, the mean log-normaliser log Z(i) (the log-sum-exp of the query's pre-softmax scores over the
keys it sees) and the mean attention paid to key 0, for all sequences and for two halves.

- **The mask's part (C6).** Under the causal mask query i sees i + 1 keys, so with equal scores
  log Z(i) = log(i + 1) + const: the slope of log Z against log(i + 1) is 1.  Our measure is that
  slope per head, fitted by least squares over queries i >= ``min_query``, of log Z(i) - a(i): a(i), the
  query offset of the decomposition (behind_rope.maths.decompose), shifts all of query i's scores alike,
  so the softmax cannot see it, yet it moves log Z one for one.  A head that puts its weight on one key
  (a sink) has a slope near 0, and without the mask every query sees the same keys.
- **Beyond a sliding window (C8b).** At queries past the window every query of a sliding-window
  layer sees the same number of keys, so the mask can no longer make log Z depend on i; what is left
  comes from the states themselves (the residual stream).
- **Sink heads (C9).** A head whose mean attention to key 0 over queries i >= ``from_query`` is at
  least ``min_attention``.
"""

from __future__ import annotations

import numpy as np


def log_z_slopes(log_z: np.ndarray, min_query: int) -> np.ndarray:
    """Least-squares slope of log Z(i) against log(i + 1) over queries i >= ``min_query``: (..., S) -> (...);
    NaN when fewer than two queries are left."""
    seq_len = log_z.shape[-1]
    if seq_len - min_query < 2:
        return np.full(log_z.shape[:-1], np.nan)
    x = np.log(np.arange(min_query, seq_len) + 1.0)
    x = x - x.mean()
    y = log_z[..., min_query:]
    return ((y - y.mean(axis=-1, keepdims=True)) * x).sum(axis=-1) / (x**2).sum()


def slopes_with_floor(arrays: dict, min_query: int, floor_splits: int, floor_quantile: float,
                      key: str = "log_z") -> dict[str, np.ndarray]:
    """The slopes of a run's mean log Z and of each half, and the noise floor: the ``floor_quantile`` of
    |b_A - b_B| over ``floor_splits`` random splits of the run's groups of sequences into halves
    (behind_rope.maths.splits; a slope is linear in log Z, so each group's own slope is all a split needs)."""
    from behind_rope.maths.splits import split_floor

    slopes = {name: log_z_slopes(np.asarray(arrays[name]), min_query) for name in (key, f"{key}_half_a", f"{key}_half_b")}
    by_group = log_z_slopes(np.asarray(arrays[f"{key}_groups"], dtype=float), min_query)
    return {"slope": slopes[key], "halves": np.stack([slopes[f"{key}_half_a"], slopes[f"{key}_half_b"]]),
            "floor": split_floor(by_group, arrays["group_sizes"], floor_splits, floor_quantile),
            "groups": len(by_group)}


HALVES = ("", "_half_a", "_half_b")  # the mean over all sequences, and each half's


def visible_log_z(arrays: dict) -> dict[str, np.ndarray]:
    """log Z(i) - a(i), the part of the log-normaliser the softmax sees, for the mean, both halves and each group
    (``log_z_visible``, ``log_z_visible_half_a``, ``log_z_visible_half_b``, ``log_z_visible_groups``, with
    ``group_sizes``).

    Subtracting a(i) is exact per sequence: a constant added to one query's scores moves its log Z and
    its fitted a(i) alike.  Since the fit is linear, the mean over sequences of log Z - a is the mean
    log Z minus the a(i) of the mean scores.  A score run recorded with ``query_offsets`` has each head's
    a(i); a run with one matrix per layer (the parameter-free simulation) has it fitted here, to its
    mean score matrices.
    """
    parts = (*HALVES, "_groups")
    if "query_offset" in arrays:
        offsets = {part: np.asarray(arrays[f"query_offset{part}"]) for part in parts}
    elif np.asarray(arrays["log_z"]).ndim == np.asarray(arrays["mean_scores"]).ndim - 1:
        from behind_rope.maths.decompose import decompose

        offsets = {part: decompose(arrays[matrix]).query_offset
                   for part, matrix in zip(parts, ("mean_scores", "half_a", "half_b", "chunk_means"), strict=True)}
    else:
        raise KeyError("this score file has per-head log Z but no query offsets: record it with query_offsets "
                       "(llm.inputs.<set>.query_offsets)")
    return {f"log_z_visible{part}": np.asarray(arrays[f"log_z{part}"]) - offsets[part] for part in parts} | {
        "group_sizes": arrays["group_sizes"]}


def sink_attention(sink: np.ndarray, from_query: int) -> np.ndarray:
    """Mean attention to key 0 over queries i >= ``from_query``: (layers, heads, S) -> (layers, heads)."""
    return np.asarray(sink)[..., from_query:].mean(axis=-1)


def sink_heads(sink: np.ndarray, from_query: int, min_attention: float) -> np.ndarray:
    """Which heads are sink heads: (layers, heads) booleans."""
    return sink_attention(sink, from_query) >= min_attention


def spearman(x, y) -> float:
    """Rank correlation of two sequences (NaN with fewer than three points or no spread)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        return float("nan")
    ranks = [np.argsort(np.argsort(v)).astype(float) for v in (x, y)]
    if min(r.std() for r in ranks) == 0:
        return float("nan")
    return float(np.corrcoef(*ranks)[0, 1])
