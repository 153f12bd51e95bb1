"""Split a mean score matrix into a query offset, a relative part and a softmax-visible residual.

The paper's diagonal normalisation (:func:`behind_rope.maths.metrics.diagonal_normalise`) subtracts
each diagonal's mean, i.e. a relative part r(i - j), and calls the rest non-relative.  That rest
still holds a per-query offset a(i), and adding a constant to one query's scores changes none of
its softmax weights.  So part of the paper's "non-relative" residual is invisible to attention.
Here the model

    M[i, j] = a(i) + r(i - j) + e[i, j]

is fitted by least squares to the finite entries of the strict lower triangle (key j < query i,
the entries that :mod:`behind_rope.maths.metrics` uses; unmasked matrices are cut to the same entries,
so runs with and without the causal mask are compared on equal terms), leaving out the columns of
``exclude_keys``: by default key 0, the attention sink, whose huge scores would otherwise leak into
every diagonal it lies on.  Then

- a(i), the query offset, is invisible to the softmax;
- r(d), d = 1 .. S - 1, is the relative part;
- e, the residual, is the softmax-visible non-relative part.  Absolute preferences for some keys
  (key profiles) land here; study them as the residual's column means (:func:`key_profile`).

Identifiability.  a(i) + r(i - j) is identified only up to one shared constant (a + c, r - c fit
equally well); the convention here is that a has mean 0 over the rows it is fitted on, so r
carries the overall level.  There is deliberately no free key term b(j): a(i) + b(j) + r(i - j)
is not identifiable on the triangle, because c*i - c*j - c*(i - j) = 0 (the age-period-cohort
problem).  A consequence: a purely linear key trend c*j equals a(i) = c*i plus r(d) = -c*d, so
the fit absorbs it into the query offset and the relative part.  That is not a flaw of the fit but
a fact about the softmax: for a fixed query i, the weights exp(c*j) / Z equal exp(-c*(i - j)) / Z',
so a linear key trend cannot be told apart from a relative decay by attention either.  Non-linear
key profiles (a step at the first keys, a sink at key 0, a bump) are identifiable and stay in e.

Undefined parts are NaN: a(i) for rows with no fitted entry (row 0, and row 1 when key 0 is
excluded), r(d) for offsets with no fitted entry (always d = 0).  The residual M - a - r is given
on every finite strict-lower entry whose a and r are defined, the excluded key columns included,
so the sink's own residual can be read off (:func:`sink`).

Efficiency.  The normal equations (size about 2S) are reduced to S unknowns by eliminating a(i),
built once per set of fitted entries and solved by one LU factorisation for all the matrices of a
stack that share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The reduced normal matrix of a connected set of fitted entries has a condition number of about
# 3.4 S (causal mask) or less; far beyond that, the entries split into groups the fit cannot tie.
MAX_CONDITION = 1e12


@dataclass(frozen=True)
class Decomposition:
    """Parts of one score matrix (or a stack): shapes (..., S) and (..., S, S), NaN where undefined.

    ``relative`` is indexed by the offset d = i - j (``relative[..., 0]`` is NaN); ``fitted`` marks
    the entries the least-squares fit used.
    """

    query_offset: np.ndarray
    relative: np.ndarray
    residual: np.ndarray
    fitted: np.ndarray


@dataclass(frozen=True)
class _Design:
    """The fit's normal equations for one set of fitted entries, reduced to the relative part."""

    flat: np.ndarray  # flat indices of the fitted entries, in row order
    rows: np.ndarray
    offsets: np.ndarray
    row_counts: np.ndarray
    offset_counts: np.ndarray
    incidence: np.ndarray  # (rows, offsets) 1 where a fitted entry has that row and offset
    normal: np.ndarray  # reduced normal matrix on the fitted offsets, constant direction pinned


def fitted_entries(scores: np.ndarray, exclude_keys: Sequence[int] = (0,)) -> np.ndarray:
    """Boolean mask of the entries the fit uses: finite, strict lower triangle, key not excluded."""
    scores = np.asarray(scores)
    seq_len = scores.shape[-1]
    keep = np.tril(np.ones((seq_len, seq_len), dtype=bool), -1)
    keep[:, list(exclude_keys)] = False
    return keep & np.isfinite(scores)


def relative_matrix(relative: np.ndarray) -> np.ndarray:
    """The (..., S, S) matrix r(i - j) of a relative part indexed by offset; NaN on and above the diagonal.

    A read-only strided view for a single vector (no S x S copy is made).
    """
    relative = np.asarray(relative, dtype=float)
    seq_len = relative.shape[-1]
    padded = np.concatenate([relative[..., ::-1], np.full(relative.shape[:-1] + (seq_len - 1,), np.nan)], axis=-1)
    padded[..., seq_len - 1] = np.nan  # offset 0: the self-score is not part of the fit
    # Row i of the Toeplitz matrix is padded[S - 1 - i : 2S - 1 - i].
    return np.lib.stride_tricks.sliding_window_view(padded, seq_len, axis=-1)[..., ::-1, :]


def _design(fitted: np.ndarray) -> _Design | None:
    """Eliminate a(i) from the normal equations (None when nothing is fitted).

    With n_i fitted entries in row i, m_d on offset d and C the 0/1 row-by-offset incidence,
    a = (row sums - C r) / n and (diag(m) - C' diag(1/n) C) r = offset sums - C' (row sums / n).
    That matrix K is singular along r = constant (the shared constant); adding a multiple of 11'
    makes it invertible without changing the solution, as the right-hand side is orthogonal to 1.
    """
    seq_len = fitted.shape[-1]
    flat = np.flatnonzero(fitted)
    if flat.size == 0:
        return None
    rows = flat // seq_len
    offsets = rows - flat % seq_len
    row_counts = np.bincount(rows, minlength=seq_len)
    offset_counts = np.bincount(offsets, minlength=seq_len)
    used = offset_counts > 0
    incidence = np.zeros((seq_len, seq_len))
    incidence[rows, offsets] = 1.0
    counts = offset_counts[used].astype(float)
    normal = np.diag(counts) - (incidence[:, used] / np.maximum(row_counts, 1)[:, None]).T @ incidence[:, used]
    normal += counts.mean() / counts.size
    return _Design(flat, rows, offsets, row_counts, offset_counts, incidence, normal)


def _solve(normal: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve ``normal`` x = b for every row b of ``rhs`` with one LU factorisation.

    A random probe rides along as an extra right-hand side: its solution's size bounds the
    condition number from below, which explodes when the fitted entries split into groups that
    share no row or offset (a(i) + r(i - j) is then not determined up to a single constant).
    """
    probe = np.random.default_rng(0).standard_normal(normal.shape[0])
    try:
        solution = np.linalg.solve(normal, np.column_stack([rhs.T, probe]))
    except np.linalg.LinAlgError:
        solution = np.full((normal.shape[0], rhs.shape[0] + 1), np.inf)
    condition = np.abs(normal).sum(0).max() * np.abs(solution[:, -1]).sum() / np.abs(probe).sum()
    if not condition < MAX_CONDITION:
        raise ValueError("the fitted entries fall into groups that share no row or offset, so a(i) + r(i - j) "
                         "is not determined up to a single constant; exclude fewer keys")
    return solution[:, :-1].T


def _fit_sums(design: _Design, row_sums: np.ndarray, offset_sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a (B, S) and r (B, S) of matrices known by their sums over the fitted entries of each row and of each
    offset i - j, (B, S) each: all the least-squares fit reads.  One LU factorisation solves them all."""
    used = design.offset_counts > 0
    fitted_rows = design.row_counts > 0
    inverse_counts = 1.0 / np.maximum(design.row_counts, 1)
    rhs = (offset_sums - (row_sums * inverse_counts) @ design.incidence)[:, used]
    relative = np.full(row_sums.shape, np.nan)
    relative[:, used] = _solve(design.normal, rhs)
    absorbed = np.where(used, relative, 0.0) @ design.incidence.T  # each row's sum of r over its fitted offsets
    offset = (row_sums - absorbed) * inverse_counts
    shift = offset[:, fitted_rows].mean(axis=1, keepdims=True)  # convention: a has mean 0 over its fitted rows
    query_offset = np.full(row_sums.shape, np.nan)
    query_offset[:, fitted_rows] = offset[:, fitted_rows] - shift
    relative[:, used] += shift
    return query_offset, relative


def _fit_group(design: _Design, matrices: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """a (B, S) and r (B, S) for matrices that share ``design``."""
    seq_len = design.row_counts.size
    row_sums, offset_sums = np.empty((len(matrices), seq_len)), np.empty((len(matrices), seq_len))
    for k, matrix in enumerate(matrices):
        values = matrix.ravel()[design.flat]
        row_sums[k] = np.bincount(design.rows, values, seq_len)
        offset_sums[k] = np.bincount(design.offsets, values, seq_len)
    return _fit_sums(design, row_sums, offset_sums)


def query_offsets_from_sums(fitted: np.ndarray, row_sums: np.ndarray, offset_sums: np.ndarray) -> np.ndarray:
    """The query offsets a(i) of :func:`decompose` for matrices known only by their sums over the ``fitted`` entries
    (S, S) of each row and of each offset d = i - j, (..., S) each (``offset_sums[..., d]``).  The fit is linear in
    the matrix, so sums collected while the scores stream by (behind_rope.capture.scores) give each head's a(i)
    without keeping its S x S matrix.  NaN where undefined, as in :func:`decompose`."""
    row_sums, offset_sums = np.asarray(row_sums, dtype=float), np.asarray(offset_sums, dtype=float)
    design = _design(np.asarray(fitted, dtype=bool))
    if design is None:
        return np.full(row_sums.shape, np.nan)
    seq_len = row_sums.shape[-1]
    query_offset, _ = _fit_sums(design, row_sums.reshape(-1, seq_len), offset_sums.reshape(-1, seq_len))
    return query_offset.reshape(row_sums.shape)


def decompose(scores: np.ndarray, exclude_keys: Sequence[int] = (0,)) -> Decomposition:
    """Fit M[i, j] = a(i) + r(i - j) + e[i, j] to one S x S matrix or a stack (..., S, S).

    Matrices of a stack that share their fitted entries (the mean and both halves of every layer
    of a score file) share one normal matrix, built and solved once for all of them, so a stack
    costs little more than its matrices' sums.  See the module docstring for the convention on the shared constant.
    """
    scores = np.asarray(scores)
    shape, seq_len = scores.shape, scores.shape[-1]
    stack = scores.reshape(-1, seq_len, seq_len)
    fitted = np.empty(stack.shape, dtype=bool)
    groups: dict[bytes, list[int]] = {}
    for k, matrix in enumerate(stack):
        fitted[k] = fitted_entries(matrix, exclude_keys)
        groups.setdefault(np.packbits(fitted[k]).tobytes(), []).append(k)
    query_offset = np.full(stack.shape[:2], np.nan)
    relative = np.full(stack.shape[:2], np.nan)
    residual = np.full(stack.shape, np.nan)
    for members in groups.values():
        design = _design(fitted[members[0]])
        if design is None:
            continue
        matrices = [stack[k].astype(float, copy=False) for k in members]
        query_offset[members], relative[members] = _fit_group(design, matrices)
        for k, matrix in zip(members, matrices, strict=True):
            residual[k] = matrix - query_offset[k][:, None] - relative_matrix(relative[k])
    return Decomposition(query_offset.reshape(shape[:-1]), relative.reshape(shape[:-1]), residual.reshape(shape),
                         fitted.reshape(shape))


def _shares(matrix: np.ndarray, residual: np.ndarray, fitted: np.ndarray) -> tuple[float, float, float]:
    """(relative, query_offset, visible_nonrelative) for one matrix; see :func:`variance_shares`."""
    flat = np.flatnonzero(fitted)
    if flat.size == 0:
        return np.nan, np.nan, np.nan
    seq_len = matrix.shape[-1]
    values = matrix.ravel()[flat].astype(float)
    offsets = flat // seq_len - flat % seq_len
    offset_means = np.bincount(offsets, values, seq_len) / np.maximum(np.bincount(offsets, minlength=seq_len), 1)
    total = np.sum((values - values.mean()) ** 2)
    if total == 0:
        return 1.0, 0.0, 0.0
    within_offsets = np.sum((values - offset_means[offsets]) ** 2)
    visible = np.sum(residual.ravel()[flat] ** 2)
    return 1.0 - within_offsets / total, (within_offsets - visible) / total, visible / total


def variance_shares(scores: np.ndarray, exclude_keys: Sequence[int] = (0,),
                    parts: Decomposition | None = None) -> dict[str, float | np.ndarray]:
    """Sequential (type I) split of the variance of the fitted entries; the first three shares sum to 1.

    The order follows the paper: ``relative`` is the share that the per-offset (diagonal) means
    explain alone, i.e. what the paper's normalisation removes (it equals 1 -
    :func:`behind_rope.maths.metrics.nonrelative_index` when no key is excluded).  ``query_offset`` is
    the extra share explained once a(i) is added: the part of the paper's "non-relative" residual
    that the softmax cannot see.  ``visible_nonrelative`` is the residual's share, what attention
    can see of the non-relative structure.  ``paper_nonrelative`` = 1 - relative = query_offset +
    visible_nonrelative.  Relative goes first because that is the quantity the paper reports, so
    the split shows how much of its non-relative share survives the softmax.  Floats for one
    matrix, arrays of shape (...) for a stack; NaN where nothing is fitted.
    """
    scores = np.asarray(scores)
    parts = parts or decompose(scores, exclude_keys)  # pass the decomposition when you already have it
    seq_len = scores.shape[-1]
    stack, residual, fitted = (x.reshape(-1, seq_len, seq_len) for x in (scores, parts.residual, parts.fitted))
    shares = np.array([_shares(*triple) for triple in zip(stack, residual, fitted, strict=True)]).reshape(-1, 3)
    relative, query_offset, visible = (shares[:, k].reshape(scores.shape[:-2]) for k in range(3))
    out = {"relative": relative, "query_offset": query_offset, "visible_nonrelative": visible,
           "paper_nonrelative": 1.0 - relative}
    return {name: float(value) if value.ndim == 0 else value for name, value in out.items()}


def key_profile(residual: np.ndarray) -> np.ndarray:
    """Column means of a residual (..., S, S) over the queries that see each key; NaN for unseen keys.

    A key profile is an absolute preference for some keys, the part of the residual that the same
    key carries for every query.  It is determined only up to a linear trend in the key (which
    a(i) + r(i - j) absorbs, see the module docstring): a planted step at the first keys comes back
    as the step plus a gentle slope across the other keys, so compare shapes after removing a line.
    """
    finite = np.isfinite(residual)
    counts = finite.sum(axis=-2)
    sums = np.where(finite, residual, 0.0).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def key_profile_share(residual: np.ndarray, exclude_keys: Sequence[int] = (0,)) -> float | np.ndarray:
    """Share of the residual's variance that its key profile explains (NaN for a residual without variance).

    Pass the ``exclude_keys`` given to :func:`decompose`: those columns (the sink) are left out,
    so the share is over the fitted entries and a huge sink does not swamp it.
    """
    residual = np.array(residual, dtype=float)
    residual[..., list(exclude_keys)] = np.nan
    finite = np.isfinite(residual)
    count = finite.sum(axis=(-2, -1))
    mean = np.where(finite, residual, 0.0).sum(axis=(-2, -1)) / np.maximum(count, 1)
    total = np.where(finite, residual - mean[..., None, None], 0.0)
    left = np.where(finite, residual - key_profile(residual)[..., None, :], 0.0)
    total_ss, left_ss = (total**2).sum(axis=(-2, -1)), (left**2).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total_ss > 0, 1.0 - left_ss / total_ss, np.nan)
    return float(share) if share.ndim == 0 else share


def sink(residual: np.ndarray, late_from: int, key: int = 0) -> float | np.ndarray:
    """Mean residual of ``key`` over late queries (i >= ``late_from``): the sink as its own quantity.

    With key 0 excluded from the fit, this is the sink's score above what the query offset and
    the relative part predict at its position.  NaN when no late query sees the key.
    """
    column = residual[..., max(late_from, key + 1):, key]
    finite = np.isfinite(column)
    count = finite.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.where(finite, column, 0.0).sum(axis=-1) / count, np.nan)
    return float(mean) if mean.ndim == 0 else mean


def late_key_sums(matrix: np.ndarray, late_from: int, margin: int, mid_from: int):
    """What every key contrast over late queries (i >= ``late_from``) needs, in one pass over a matrix or a stack
    (..., S, S): per key, the sum and count of its finite entries over the late queries that see it (j < i),
    and the mean of the mid-context entries (keys j >= ``mid_from`` more than ``margin`` positions before the
    query: a query's neighbourhood follows its own near-diagonal drift)."""
    matrix = np.asarray(matrix, dtype=float)
    seq_len = matrix.shape[-1]
    late = matrix[..., late_from:, :]  # only late queries count: the other rows would add zeros
    rows, cols = np.arange(late_from, seq_len)[:, None], np.arange(seq_len)[None, :]
    finite = np.isfinite(late)
    values = np.where(finite, late, 0.0)
    seen = (cols < rows) & finite
    mid = (cols >= mid_from) & (cols < rows - margin) & finite
    mid_count = mid.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        mid_mean = np.where(mid_count > 0, (values * mid).sum(axis=(-2, -1)) / mid_count, np.nan)
    return (values * seen).sum(axis=-2), seen.sum(axis=-2), mid_mean


def key_group_contrast(matrix: np.ndarray, keys: np.ndarray, mid_from: int, margin: int, late_from: int):
    """Mean of ``matrix`` at ``keys`` minus its mean at mid-context keys, over late queries (i >= late_from)
    (:func:`late_key_sums`).  Works on a stack (..., S, S); NaN when no entry of either group is finite."""
    seq_len = np.shape(matrix)[-1]
    keys = np.asarray(keys)
    if not ((keys < seq_len - 1) & (late_from < seq_len)).any() or mid_from >= seq_len - 1 - margin:
        raise ValueError(f"sequence of {seq_len} positions is too short for a key contrast")
    sums, counts, mid = late_key_sums(matrix, late_from, margin, mid_from)
    count = counts[..., keys].sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        contrast = np.where(count > 0, sums[..., keys].sum(axis=-1) / count, np.nan) - mid
    return float(contrast) if contrast.ndim == 0 else contrast


def start_deficit(matrix: np.ndarray, start_keys: int, late_from: int) -> float | np.ndarray:
    """Mean of ``matrix`` at start keys minus its mean at mid-context keys, over late queries (i >= ``late_from``).

    Start keys are 1 .. ``start_keys``; key 0 is left out, so the sink, measured by :func:`sink`, does
    not pass for a start effect.  Mid-context keys come after the start keys and lie more than
    ``start_keys`` positions before the query (:func:`key_group_contrast`).  Pass
    the diagonal-normalised matrix for the paper's measure, the residual of :func:`decompose` for the
    softmax-visible one.  Negative when early keys score lower; NaN when the mask hides every start key
    from the late queries.
    """
    return key_group_contrast(matrix, np.arange(1, start_keys + 1), start_keys + 1, start_keys, late_from)


def softmax_weights(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the finite entries of each row; NaN where masked (and in rows with none)."""
    scores = np.asarray(scores, dtype=float)
    finite = np.isfinite(scores)
    top = np.where(finite, scores, -np.inf).max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.where(finite, np.exp(scores - top), 0.0)
        return np.where(finite, weights / weights.sum(axis=-1, keepdims=True), np.nan)


def _r_squared(design: np.ndarray, values: np.ndarray) -> float:
    fitted = design @ np.linalg.lstsq(design, values, rcond=None)[0]
    total = np.sum((values - values.mean()) ** 2)
    return float(1 - np.sum((values - fitted) ** 2) / total) if total > 0 else float("nan")


def positional_leakage(scores: np.ndarray, query_offset: np.ndarray | None = None) -> np.ndarray:
    """Ruscio et al.'s positional leakage of each matrix of ``scores`` (..., S, S): delta R^2 = R^2(scores ~ [i - j,
    i, j, 1]) - R^2(scores ~ [i - j, 1]), least squares over the causal pairs j <= i with finite scores, the share of
    the variance that absolute position explains beyond the offset.  ([i - j, i, j] span what [i, j] span.)

    Its i term also takes up each query's offset a(i), which the softmax cannot see.  With ``query_offset`` (..., S),
    the offsets of :func:`decompose` are removed from their rows first (rows without one are left out), so what
    stays is position the softmax can see.  Returns an array of the leading shape; NaN where a matrix is constant."""
    seq_len = scores.shape[-1]
    stack = scores.reshape(-1, seq_len, seq_len)
    offsets = None if query_offset is None else query_offset.reshape(-1, seq_len)
    query, key = np.tril_indices(seq_len)
    relative = np.column_stack([np.ones(len(query)), query - key]).astype(float)
    absolute = np.column_stack([np.ones(len(query)), query, key]).astype(float)
    out = np.full(len(stack), np.nan)
    for k, matrix in enumerate(stack):
        values = matrix[query, key] - (0.0 if offsets is None else offsets[k][query])
        keep = np.isfinite(values)
        if keep.sum() > 3:
            out[k] = _r_squared(absolute[keep], values[keep]) - _r_squared(relative[keep], values[keep])
    return out.reshape(scores.shape[:-2])
