"""The RoPE base: its default, and NTK-aware scaling of it.  The one home of both defaults, read by the
simulations, the twins and the LLMs' variants alike (no torch here: the config checks import it, and
editing the rotary embedding itself reruns no LLM)."""

from __future__ import annotations

ROPE_THETA = 10_000.0  # the RoPE base of the paper's simulations and of our twins
NTK_FACTOR = 1.0  # no NTK-aware scaling


def ntk_theta(theta: float, factor: float, head_dim: int) -> float:
    """NTK-aware scaling: the RoPE base raised by factor^(d / (d - 2)), d the rotated dimension."""
    return float(theta * factor ** (head_dim / (head_dim - 2)))
