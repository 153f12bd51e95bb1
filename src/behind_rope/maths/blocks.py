"""What a figure draws of a score matrix: block means on a grid of at most DRAWN_GRID per side.  The
metrics read the same blocks (the reliability of what is drawn); the figures import them from here, not
from the metrics, so that editing a metric reruns only the figures that use it."""

from __future__ import annotations

import numpy as np

DRAWN_GRID = 256  # pixels per side of a score panel in the figures (measures.drawn_grid must agree)


def block_mean(matrix: np.ndarray, max_size: int) -> np.ndarray:
    """Shrink an S x S matrix (or each of a stack of them) to at most ``max_size`` per side by means over square
    blocks (NaN-aware).

    Figures draw block means of 1,024-token matrices (a million entries, more than a panel can
    show), and :func:`block_reliability` correlates them.
    """
    factor = -(-matrix.shape[-1] // max_size)
    if factor == 1:
        return matrix
    size = matrix.shape[-1] // factor * factor
    blocks = matrix[..., :size, :size].reshape(*matrix.shape[:-2], size // factor, factor, size // factor, factor)
    finite = np.isfinite(blocks)
    counts = finite.sum(axis=(-3, -1))
    sums = np.where(finite, blocks, 0.0).sum(axis=(-3, -1))
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
