"""Parameter-free decoder stacks in simulation (claims C2 and C4).

Each layer is ``X <- Softmax(mask(scale * q kᵀ)) Y + X`` with ``Y = norm(X)`` and ``q = k = Y``
(rotated by RoPE in the RoPE variant).  The recorded quantity per layer is the pre-softmax score
matrix ``scale * q kᵀ``, averaged over sequences.

A variant is one entry under ``simulation.variants`` in the config (:class:`behind_rope.simulation.variants.Variant`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from tqdm import tqdm

from behind_rope.maths.rope import apply_rope
from behind_rope.maths.rope_base import ntk_theta
from behind_rope.simulation.variants import SimulationSize, Variant

NORMS = ("l2", "layernorm", "none")
SCORE_SCALES = {"one": lambda dim: 1.0, "sqrt_d": lambda dim: 1 / math.sqrt(dim), "d": lambda dim: 1 / dim}


def sample_inputs(n: int, seq_len: int, dim: int, alpha: float, generator: torch.Generator) -> torch.Tensor:
    """Unit vectors x = normalize(z_i + l z_shared), l = sqrt(alpha / (1 - alpha)): E<x_i, x_j> ≈ alpha."""
    z = torch.randn(n, seq_len, dim, generator=generator, dtype=torch.float64)
    shared = torch.randn(n, 1, dim, generator=generator, dtype=torch.float64)
    x = z + math.sqrt(alpha / (1 - alpha)) * shared
    return torch.nn.functional.normalize(x, dim=-1)


def normalise(x: torch.Tensor, norm: str) -> torch.Tensor:
    if norm == "l2":
        return torch.nn.functional.normalize(x, dim=-1)
    if norm == "layernorm":  # no affine parameters
        return torch.nn.functional.layer_norm(x, x.shape[-1:])
    if norm == "none":  # version 1's layer with its L2 normalisation removed (version 2's question)
        return x
    raise ValueError(f"unknown norm {norm!r}; expected one of {NORMS}")


def hidden_keys(seq_len: int, variant: Variant) -> np.ndarray | None:
    """True where the mask hides key j from query i: the future, and keys beyond a sliding window."""
    if not variant.causal:
        return None
    query, key = np.indices((seq_len, seq_len))
    hidden = key > query
    if variant.window is not None:
        hidden |= query - key >= variant.window
    return hidden


def _layer(x: torch.Tensor, variant: Variant, hidden: torch.Tensor | None):
    """One parameter-free layer: (pre-softmax scores, the same with hidden keys at -inf, layer output)."""
    y = normalise(x, variant.norm)
    qk = apply_rope(y, ntk_theta(variant.rope_theta, variant.ntk_factor, x.shape[-1])) if variant.rope else y
    scores = SCORE_SCALES[variant.score_scale](x.shape[-1]) * (qk @ qk.transpose(-1, -2))
    logits = scores if hidden is None else scores.masked_fill(hidden, -math.inf)
    return scores, logits, torch.softmax(logits, dim=-1) @ y + x


def layer_scores(x: torch.Tensor, variant: Variant) -> tuple[torch.Tensor, torch.Tensor]:
    """One parameter-free layer: return (pre-softmax scores, layer output)."""
    hidden = hidden_keys(x.shape[-2], variant)
    scores, _, output = _layer(x, variant, None if hidden is None else torch.from_numpy(hidden))
    return scores, output


def simulate(variant: Variant, size: SimulationSize, seed: int, progress: bool = True) -> dict[str, np.ndarray]:
    """Mean pre-softmax scores per layer over B sequences, plus the means of the two halves; and each
    query's mean log-normaliser log Z (log-sum-exp over the keys it sees), (layers, S), likewise.

    B is processed in chunks so memory does not grow with B; each chunk's first half of
    sequences goes to half "a" and its second half to half "b".  Each chunk's own mean scores are kept too
    (``chunk_means``, with ``chunk_sizes``), and their mean log Z (``log_z_groups``, with ``group_sizes``, as a
    score run keeps its groups): independent replicates, whose many splits give a statistic's sampling noise
    (behind_rope.maths.splits).
    """
    generator = torch.Generator().manual_seed(seed)
    shape = (size.layers, size.seq_len, size.seq_len)
    sums = {"a": torch.zeros(shape, dtype=torch.float64), "b": torch.zeros(shape, dtype=torch.float64)}
    log_z = {"a": torch.zeros(shape[:2], dtype=torch.float64), "b": torch.zeros(shape[:2], dtype=torch.float64)}
    hidden = hidden_keys(size.seq_len, variant)
    hidden_mask = None if hidden is None else torch.from_numpy(hidden)
    counts = {"a": 0, "b": 0}
    chunk_means, chunk_sizes, chunk_log_z = [], [], []
    chunks = range(0, size.batch_size, size.chunk_size)
    for start in tqdm(chunks, desc="simulate", unit="chunk", disable=not progress):
        n = min(size.chunk_size, size.batch_size - start)
        x = sample_inputs(n, size.seq_len, size.dim, variant.alpha, generator).float()
        half = n // 2 if n > 1 else 1
        chunk_mean = torch.empty(shape, dtype=torch.float64)
        chunk_normaliser = torch.empty(shape[:2], dtype=torch.float64)
        for layer in range(size.layers):
            scores, logits, x = _layer(x, variant, hidden_mask)
            part_a, part_b = scores[:half].sum(0, dtype=torch.float64), scores[half:].sum(0, dtype=torch.float64)
            sums["a"][layer] += part_a
            sums["b"][layer] += part_b
            chunk_mean[layer] = (part_a + part_b) / n
            normaliser = torch.logsumexp(logits, dim=-1)
            log_z["a"][layer] += normaliser[:half].sum(0, dtype=torch.float64)
            log_z["b"][layer] += normaliser[half:].sum(0, dtype=torch.float64)
            chunk_normaliser[layer] = normaliser.sum(0, dtype=torch.float64) / n
        counts["a"] += half
        counts["b"] += n - half
        chunk_means.append(chunk_mean)
        chunk_log_z.append(chunk_normaliser)
        chunk_sizes.append(n)
    if min(counts.values()) == 0:
        raise ValueError("batch_size must be at least 2 so that both half-samples are non-empty")
    mean = (sums["a"] + sums["b"]) / (counts["a"] + counts["b"])
    out = {"mean_scores": mean, "half_a": sums["a"] / counts["a"], "half_b": sums["b"] / counts["b"],
           "chunk_means": torch.stack(chunk_means)}
    out = {key: value.numpy() if hidden is None else np.where(hidden, np.nan, value.numpy()) for key, value in out.items()}
    return out | {"chunk_sizes": np.array(chunk_sizes), "group_sizes": np.array(chunk_sizes),
                  "log_z_groups": torch.stack(chunk_log_z).numpy(), "log_z": ((log_z["a"] + log_z["b"]) / (counts["a"] + counts["b"])).numpy(),
                  "log_z_half_a": (log_z["a"] / counts["a"]).numpy(), "log_z_half_b": (log_z["b"] / counts["b"]).numpy()}


def monte_carlo_layer2_error(
    alphas, dims, samples: int, seq_len: int, chunk_size: int, seed: int, progress: bool = True, causal: bool = True
) -> list[dict]:
    """Compare the closed-form layer-2 scores with a Monte-Carlo run of the same layer (``causal=False``: the
    layer without its mask, a control the closed form must not match)."""
    from behind_rope.theory.derivation import layer2_score_matrix

    rows = []
    for dim in dims:
        for alpha in alphas:
            size = SimulationSize(samples, seq_len, dim, layers=2, chunk_size=chunk_size)
            simulated = simulate(Variant(alpha=alpha, causal=causal), size, seed, progress)["mean_scores"][1]
            gap = np.abs(simulated - layer2_score_matrix(seq_len, alpha))
            rows.append(
                {"dim": dim, "alpha": alpha, "samples": samples, "seq_len": seq_len,
                 "max_abs_error": float(np.nanmax(gap)), "mean_abs_error": float(np.nanmean(gap))}
            )
    return rows
