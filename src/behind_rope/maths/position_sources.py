"""Where absolute position comes from: our measures of the two sources that a follow-up reading names.

Ruscio, Nanni and Silvestri ("Where does Absolute Position come from in decoder-only
Transformers?", 2026; only the abstract is public to us) name two sources of absolute position in
RoPE models: the causal mask (each query's softmax runs over a prefix whose length is its
position), and the residual stream (position 0 attends only to itself, so its state evolves as a
closed system from its token's embedding, and heads that read it carry position). Our definitions
(docs/methods.md) work on the softmax-visible residual e[i, j] of a layer's mean scores
(behind_rope.maths.decompose: a query offset a(i) and a relative part r(i - j) removed, fitted with key 0
left out, so e at key 0 is what the first key adds beyond its offset and its relative position):

- **early queries** are 1 .. S/10 (``measures.early_query_fraction`` of config/claims.yaml): there
  the first key is a large share of every query's context
  (at least a tenth of it), so what it carries weighs most; it is the band of the start keys in the
  direction check, and it lies inside every sliding window of the models we run.
- the **first-key (residual-stream) component** R(Q) is the mean of e[i, 0] over queries i in Q: how
  much more (or less) the first key scores than its offset and relative position predict. Over the
  late queries (i >= S/2) it is the sink of claim C5d.
- the **mask component** M(Q) is the root mean square of e[i, j] over the same queries and the
  other keys (1 <= j < i): the non-relative structure that the first key plays no part in.
- the **residual-stream share** is R^2 / (R^2 + M^2): the first key's part of what the softmax can
  see of absolute position, at those queries.

Every metrics file records these components (behind_rope.maths.metrics), so they live with the shared
maths, below behind_rope.position; the closed-system check of position 0's hidden states that the
patching makes (:func:`closed_system_gaps`) lives beside them.
"""

from __future__ import annotations

import numpy as np


def components(residual: np.ndarray, queries: np.ndarray) -> dict[str, np.ndarray]:
    """First-key component, mask component and residual-stream share of (..., S, S) residuals at ``queries``."""
    rows = residual[..., queries, :]
    first = rows[..., 0]
    seq_len = residual.shape[-1]
    others = np.where(np.arange(seq_len)[None, :] < np.asarray(queries)[:, None], rows, np.nan)[..., 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        first_key = _finite_mean(first, axis=-1)
        mask = np.sqrt(_finite_mean(others**2, axis=(-2, -1)))
        share = first_key**2 / (first_key**2 + mask**2)
    return {"first_key": first_key, "mask": mask, "residual_stream_share": share}


def _finite_mean(values: np.ndarray, axis) -> np.ndarray:
    """The mean of the finite values along ``axis``; NaN where there are none."""
    finite = np.isfinite(values)
    count = finite.sum(axis=axis)
    return np.where(count > 0, np.where(finite, values, 0.0).sum(axis=axis) / np.maximum(count, 1), np.nan)


def closed_system_gaps(same_first: np.ndarray, different_first: np.ndarray) -> dict[str, list[float]]:
    """Per layer, the spread of the position-0 hidden state across sequences: (layers, sequences, hidden).

    With the same first token, position 0 evolves as a closed system, so every sequence has the same
    state (up to float precision); with different first tokens the states differ.  Gaps are the
    largest absolute difference from the first sequence, relative to the largest absolute value.
    """
    def gap(states):
        scale = np.abs(states).max(axis=(1, 2))
        return (np.abs(states - states[:, :1]).max(axis=(1, 2)) / np.maximum(scale, 1e-30)).tolist()

    return {"same_first_token": gap(same_first), "different_first_tokens": gap(different_first)}
