"""Figure 3, panel by panel: each statement Section 4.2 of the paper makes of a panel, as a statistic.

The panels are the mean Gram matrices that follow layer 1 of the trained NoPE twin into layer 2
(behind_rope.twins.gram), queries on rows, NaN above the diagonal.  The thresholds and their directions
are pre-registered (config/claims.yaml, ``claims.C3.criteria.panels``); each statistic is decided
over the seeds by the seed rule (behind_rope.claims.seeds).  What the paper says, and what we measure:

- (a) "close to zero except along the main diagonal": ``offdiag_over_diag``, the mean off-diagonal
  entry over the mean diagonal entry;
- (b) "the ratio of off-diagonal to diagonal values increases substantially": the rise of that
  ratio from (a); "a vivid line [...] at the 0th column": ``sink_column_z``, key 0's mean over the
  queries after it, in standard deviations of the other off-diagonal entries above their mean;
- (c) "the main diagonal values decrease with increasing i": ``diagonal_trend_correlation``, the
  correlation of the diagonal with i; "the off-diagonal values remain nearly uniform":
  ``offdiag_spread_over_diag_spread``, the standard deviation of the off-diagonal entries over that
  of the diagonal;
- (d) "the ratio between the diagonal and off-diagonal elements is significantly increased compared
  to (c)": the fall of the off-diagonal/diagonal ratio from (c);
- (e) "the trend is almost identical to (d)": the correlation of its lower triangle with (d)'s;
- (f), (h), (i) "attention increases strictly with j for fixed i", "restores it", "the expected
  pattern": ``locality`` (behind_rope.maths.metrics), the share of query rows whose entries rise with j;
- (g) "appears to laterally invert the pattern": ``locality`` again, which must be low.
"""

from __future__ import annotations

import numpy as np

from behind_rope.maths.metrics import locality

PANELS = "abcdefghi"


def _parts(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(diagonal, strict lower triangle) of a panel."""
    return np.diag(matrix), matrix[np.tril_indices(matrix.shape[-1], -1)]


def offdiag_over_diag(matrix: np.ndarray) -> float:
    diagonal, off = _parts(matrix)
    return float(np.mean(off) / np.mean(diagonal))


def sink_column_z(matrix: np.ndarray) -> float:
    seq_len = matrix.shape[-1]
    rows, cols = np.tril_indices(seq_len, -1)
    first = matrix[rows[cols == 0], 0]
    others = matrix[rows[cols > 0], cols[cols > 0]]
    return float((first.mean() - others.mean()) / others.std())


def diagonal_trend_correlation(matrix: np.ndarray) -> float:
    diagonal = np.diag(matrix)
    return float(np.corrcoef(np.arange(diagonal.size), diagonal)[0, 1])


def offdiag_spread_over_diag_spread(matrix: np.ndarray) -> float:
    diagonal, off = _parts(matrix)
    return float(np.std(off) / np.std(diagonal))


def lower_triangle_correlation(a: np.ndarray, b: np.ndarray) -> float:
    keep = np.tril(np.ones(a.shape, dtype=bool))
    return float(np.corrcoef(a[keep], b[keep])[0, 1])


def panel_statistics(panels: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Every statistic of every panel, by panel letter (the names config/claims.yaml uses)."""
    ratio = {name: offdiag_over_diag(panels[name]) for name in "abcd"}
    return {
        "a": {"offdiag_over_diag": ratio["a"]},
        "b": {"offdiag_over_diag_rise_from_a": ratio["b"] - ratio["a"], "sink_column_z": sink_column_z(panels["b"])},
        "c": {"diagonal_trend_correlation": diagonal_trend_correlation(panels["c"]),
              "offdiag_spread_over_diag_spread": offdiag_spread_over_diag_spread(panels["c"])},
        "d": {"offdiag_over_diag_fall_from_c": ratio["c"] - ratio["d"]},
        "e": {"correlation_with_d": lower_triangle_correlation(panels["e"], panels["d"])},
        **{name: {"locality": locality(panels[name])} for name in "fghi"},
    }
