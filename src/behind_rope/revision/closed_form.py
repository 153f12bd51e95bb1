"""Version 2's closed form h(j): the factor by which the layer-2 LayerNorm rescales the layer-1 output at
position j, 1 / std(o_j) (the authors' ``concept/alpha.ipynb`` plots it at d = 64 for alpha = 0 .. 0.8).

It follows from the layer's definition under one plug-in, which this derivation states rather than hides:
every inner product of two LayerNorm outputs is replaced by its large-d value (``y · y = d``,
``y_i · y_k = alpha d``), so that the scores are exactly √d on the diagonal and alpha √d elsewhere and the
softmax weights are ``e^√d / D`` and ``e^(alpha √d) / D``, ``D = e^√d + (j − 1) e^(alpha √d)``.  The output
``o_j = r y_j + w_self y_j + w_other Σ_{k<j} y_k`` (``r`` the residual's weight; 0 without it) has coordinate
mean 0, so its variance is ``|o_j|² / d``, and ``h = 1 / √var``.  :func:`derive` does this with sympy and
checks that it is, symbolically, the expression the authors' notebook codes.  It is not the d → ∞ limit (there
h → 1): it is exact as d grows at a fixed softmax temperature, so at d = 64 it is an approximation, and the
runs measure by how much (``behind_rope.revision.stack.recency``'s ``layer1_rescaling``).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import sympy as sp


@cache
def derive() -> dict:
    """{"h": h(j) as a sympy expression in d, alpha, r and n = j − 1, "matches_notebook": bool}."""
    d, alpha, r = sp.symbols("d alpha r", positive=True)
    n = sp.Symbol("n", integer=True, nonnegative=True)
    e_self, e_other = sp.exp(sp.sqrt(d)), sp.exp(alpha * sp.sqrt(d))
    total = e_self + n * e_other
    own, each_earlier = r + e_self / total, e_other / total
    # |o_j|² with y·y = d and y_i·y_k = alpha d: own² d + 2 own each n alpha d + each² (n d + n (n − 1) alpha d)
    squared_norm = own**2 * d + 2 * own * each_earlier * n * alpha * d + each_earlier**2 * (n * d + n * (n - 1) * alpha * d)
    variance = sp.simplify(squared_norm / d)
    notebook = (total**2 * (r**2 + 2 * r * alpha + alpha) + total * (1 - alpha) * (2 * r * e_self + e_other)
                + (1 - alpha) * (sp.exp(2 * sp.sqrt(d)) - sp.exp(sp.sqrt(d) * (1 + alpha)))) / total**2
    return {"h": 1 / sp.sqrt(variance), "symbols": (d, alpha, r, n),
            "matches_notebook": sp.simplify(sp.expand(variance - notebook)) == 0}


def rescaling(alpha: float, dim: int, positions: int, residual_weight: float = 0.0) -> np.ndarray:
    """h(j) for j = 1 .. positions."""
    derived = derive()
    d, a, r, n = derived["symbols"]
    # exp(√d) overflows nothing at the dims used (d <= 1,024: e^32); evaluate in floats
    function = sp.lambdify((d, a, r, n), derived["h"], "numpy")
    return np.asarray(function(float(dim), float(alpha), float(residual_weight), np.arange(positions, dtype=float)),
                      dtype=float)
