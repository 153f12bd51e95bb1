"""Version 2's parameter-free stack and its recency probability RP (../shared/PAPER_V2.md).

The layer, the same at every depth and without weights: ``Y = X`` (``norm: none``) or ``Y = LayerNorm(X)``
(no affine parameters, eps 1e-12); scores ``S = Y Yᵀ / √d`` with the strict upper triangle masked; output
``softmax(S) Y``, plus ``X`` with the residual.  Inputs ``X = (z_i + l z_shared) / √d`` with
``l = √(α / (1 − α))``, so that α is the expected cosine of two tokens.  :func:`layer` is that definition
in d dimensions.

The runs compute the same layer without ever forming a d-dimensional vector.  Every token of every layer
is a combination of the S + 2 vectors ``z_1 .. z_S, z_shared`` and the all-ones vector ``u`` (LayerNorm
subtracts a multiple of ``u``), so a token is its coefficients ``C`` over that basis, and everything the layer
needs, inner products and means over coordinates, comes from the basis' Gram matrix ``G``
(:func:`gram_layer`).  ``G`` is drawn exactly from its distribution (:func:`sample_gram`: the Bartlett
decomposition of a Wishart matrix, after rotating ``u`` onto the first axis), so the cost of a sequence does
not grow with d, and the authors' B = 10⁷ at d = 1,024 takes minutes, where their inputs alone are 400 GB.
tests/test_revision.py checks that both layers give the same scores on the same vectors.

RP of a layer is the share of (sequence, triple) pairs, over every 0-based triple ``j < k < i``, whose scores
satisfy ``S[i, k] > S[i, j]``: a later key scored above an earlier one; a tie counts one half.  Ties happen
only where a stack has collapsed its tokens onto one vector (without the mask and without normalisation,
layer 4's scores tie in about a quarter of the comparisons even in float64, nearly all of them in float32),
and a strict comparison would count each as a bias toward earlier keys; the half keeps the no-mask stack at
exactly 0.5 in expectation by symmetry.  Everything is computed in float64, and the share of ties is kept.
A sequence's comparisons share its tokens, so the sequences are the independent draws: :func:`recency`
keeps each sequence's frequency, and their covariance across layers, from which every standard error in
behind_rope.claims.revision comes.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch
from tqdm import tqdm

NORMS = ("none", "layernorm")
EPS = 1e-12
# Bytes one sequence holds at once, per float of its (S + 2) x (S + 2) Gram matrix, with headroom for the
# coefficients, scores and their copies: what max_chunk_mb divides by.
BYTES_PER_GRAM_FLOAT = 8 * 16


@dataclass(frozen=True)
class Setting:
    norm: str
    alpha: float
    dim: int
    residual: bool = False
    causal: bool = True

    def __post_init__(self):
        if self.norm not in NORMS:
            raise ValueError(f"unknown norm {self.norm!r}; expected one of {NORMS}")
        if not 0 <= self.alpha < 1:
            raise ValueError(f"alpha must be in [0, 1), not {self.alpha}")


def setting_seed(seed: int, name: str) -> int:
    """Each setting draws its own sequences, so that two settings' RP are independent."""
    return (seed * 1_000_003 + zlib.crc32(name.encode())) % 2**63


def _mask(scores: torch.Tensor, causal: bool) -> torch.Tensor:
    if not causal:
        return scores
    hidden = torch.ones(scores.shape[-1], scores.shape[-1], dtype=torch.bool).triu(1)
    return scores.masked_fill(hidden, -math.inf)


def layer(x: torch.Tensor, setting: Setting) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer on d-dimensional tokens ``x`` (..., S, d): (its pre-softmax scores, its output)."""
    y = torch.nn.functional.layer_norm(x, x.shape[-1:], eps=EPS) if setting.norm == "layernorm" else x
    scores = (y @ y.transpose(-1, -2)) / math.sqrt(x.shape[-1])
    out = torch.softmax(_mask(scores, setting.causal), dim=-1) @ y
    return scores, out + x if setting.residual else out


def input_coefficients(n: int, seq_len: int, dim: int, alpha: float) -> torch.Tensor:
    """The inputs (z_i + l z_shared) / √d as coefficients over the basis z_1 .. z_S, z_shared, u: (n, S, S + 2)."""
    coefficients = torch.zeros(seq_len, seq_len + 2, dtype=torch.float64)
    coefficients[:, :seq_len] = torch.eye(seq_len, dtype=torch.float64)
    coefficients[:, seq_len] = math.sqrt(alpha / (1 - alpha))
    return (coefficients / math.sqrt(dim)).expand(n, -1, -1)


def _coordinate_moments(coefficients: torch.Tensor, projected: torch.Tensor, dim: int):
    """Each token's mean over its coordinates, x · u / d, and 1 / √(variance + eps): what a LayerNorm subtracts
    and multiplies by (``projected``: the tokens' inner products with the basis, ``coefficients @ gram``)."""
    mean = projected[..., -1] / dim
    return mean, torch.rsqrt((projected * coefficients).sum(-1) / dim - mean**2 + EPS)


def gram_layer(coefficients: torch.Tensor, gram: torch.Tensor, dim: int, setting: Setting):
    """:func:`layer` on tokens given as ``coefficients`` (n, S, p) over a basis whose last vector is the
    all-ones u, with the basis' Gram matrix ``gram`` (n, p, p): (scores, the output's coefficients)."""
    y, projected = coefficients, coefficients @ gram  # projected: each token's inner products with the basis
    if setting.norm == "layernorm":
        mean, scale = _coordinate_moments(coefficients, projected, dim)
        scale = scale.unsqueeze(-1)
        y = coefficients.clone()
        y[..., -1] -= mean
        y = y * scale
        projected = (projected - mean.unsqueeze(-1) * gram[:, -1:, :]) * scale
    scores = (projected @ y.transpose(-1, -2)) / math.sqrt(dim)
    out = torch.softmax(_mask(scores, setting.causal), dim=-1) @ y
    return scores, out + coefficients if setting.residual else out


def layernorm_rescaling(coefficients: torch.Tensor, gram: torch.Tensor, dim: int) -> torch.Tensor:
    """1 / std over coordinates of each token (n, S): the factor by which a LayerNorm rescales it (version 2's
    h(j) for the layer-1 output; behind_rope.revision.closed_form)."""
    return _coordinate_moments(coefficients, coefficients @ gram, dim)[1]


def sample_gram(n: int, seq_len: int, dim: int, rng: np.random.Generator) -> torch.Tensor:
    """Gram matrices (n, S + 2, S + 2) of z_1 .. z_S, z_shared ~ N(0, I_d) and u = (1, ..., 1), drawn exactly.

    Rotate coordinates so that u / √d is the first axis: the z stay standard normal, their first coordinates
    g give z · u = √d g, and the other d − 1 coordinates give a Wishart(d − 1, I) matrix W independent of g,
    drawn by the Bartlett decomposition; so z zᵀ = g gᵀ + W.  Below d = S + 2 the vectors are drawn directly.
    """
    q = seq_len + 1
    if dim - 1 < q:
        z = torch.from_numpy(rng.standard_normal((n, q, dim)))
        basis = torch.cat([z, torch.ones(n, 1, dim, dtype=torch.float64)], dim=1)
        return basis @ basis.transpose(-1, -2)
    first = rng.standard_normal((n, q))
    bartlett = np.tril(rng.standard_normal((n, q, q)), -1)
    bartlett[:, np.arange(q), np.arange(q)] = np.sqrt(rng.chisquare(dim - 1 - np.arange(q), size=(n, q)))
    gram = np.empty((n, q + 1, q + 1))
    gram[:, :q, :q] = first[:, :, None] * first[:, None, :] + bartlett @ bartlett.transpose(0, 2, 1)
    gram[:, :q, q] = gram[:, q, :q] = math.sqrt(dim) * first
    gram[:, q, q] = dim
    return torch.from_numpy(gram)


def triples(seq_len: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(i, j, k) index arrays of every 0-based triple j < k < i."""
    rows = [(i, j, k) for j, k, i in combinations(range(seq_len), 3)]
    return tuple(torch.tensor(column) for column in zip(*rows, strict=True))


def later_wins(scores: torch.Tensor, index: tuple[torch.Tensor, torch.Tensor, torch.Tensor]):
    """Per sequence, the share of its triples whose later key scores higher, S[i, k] > S[i, j], a tie counting
    one half; and the share of ties."""
    i, j, k = index
    later, earlier = scores[:, i, k], scores[:, i, j]
    ties = (later == earlier).double().mean(-1)
    return (later > earlier).double().mean(-1) + 0.5 * ties, ties


def chunk_sequences(seq_len: int, max_chunk_mb: int) -> int:
    return max(1, max_chunk_mb * 2**20 // ((seq_len + 2) ** 2 * BYTES_PER_GRAM_FLOAT))


def recency(setting: Setting, seq_len: int, layers: int, batch_size: int, max_chunk_mb: int, seed: int,
            progress: bool = True) -> dict:
    """RP per layer over ``batch_size`` sequences, with the covariance across layers of the sequences' own
    frequencies (so a layer's standard error, and that of two layers' difference, follow), the share of ties,
    the mean pre-softmax scores per layer (the revision's Figure 1), and the mean factor by which a LayerNorm
    would rescale each position of the layer-1 output (the closed form h(j) of behind_rope.revision.closed_form)."""
    rng = np.random.default_rng(seed)
    index = triples(seq_len)
    sums = torch.zeros(layers, dtype=torch.float64)
    products = torch.zeros(layers, layers, dtype=torch.float64)
    score_sums = torch.zeros(layers, seq_len, seq_len, dtype=torch.float64)
    tie_sums = torch.zeros(layers, dtype=torch.float64)
    rescaling_sums = torch.zeros(seq_len, dtype=torch.float64)
    step = chunk_sequences(seq_len, max_chunk_mb)
    for start in tqdm(range(0, batch_size, step), desc="recency", unit="chunk", disable=not progress):
        n = min(step, batch_size - start)
        gram = sample_gram(n, seq_len, setting.dim, rng)
        tokens = input_coefficients(n, seq_len, setting.dim, setting.alpha)
        frequencies = torch.empty(n, layers, dtype=torch.float64)
        for depth in range(layers):
            scores, tokens = gram_layer(tokens, gram, setting.dim, setting)
            if depth == 0:
                rescaling_sums += layernorm_rescaling(tokens, gram, setting.dim).sum(0)
            frequencies[:, depth], ties = later_wins(scores, index)
            tie_sums[depth] += ties.sum()
            score_sums[depth] += scores.sum(0)
        sums += frequencies.sum(0)
        products += frequencies.T @ frequencies
    mean = sums / batch_size
    covariance = (products - batch_size * torch.outer(mean, mean)) / max(batch_size - 1, 1)
    return {"sequences": batch_size, "triples": len(index[0]), "rp": mean.tolist(),
            "standard_error": (covariance.diagonal().clamp(min=0) / batch_size).sqrt().tolist(),
            "covariance": covariance.tolist(), "tie_share": (tie_sums / batch_size).tolist(),
            "layer1_rescaling": (rescaling_sums / batch_size).tolist(),
            "mean_scores": (score_sums / batch_size).numpy(), "chunk_sequences": step}
