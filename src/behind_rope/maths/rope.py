"""Llama-style rotary position embedding (rotate-half convention, as in transformers)."""

from __future__ import annotations

import torch


def rope_cos_sin(seq_len: int, dim: int, theta: float, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate (..., S, dim) vectors by their position 0..S-1."""
    cos, sin = rope_cos_sin(x.shape[-2], x.shape[-1], theta, x.dtype)
    return x * cos + rotate_half(x) * sin
