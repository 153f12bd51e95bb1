"""What a simulation is: one entry under ``simulation.variants``, and the shared sizes.

The defaults of every field live here and nowhere else: the config is filled from them
(:func:`behind_rope.config.validate`), and the schema lists the same fields (tested).  A new
variant is one config entry; a new kind of operation is a field here plus its code in
:mod:`behind_rope.simulation.simulate`.
"""

from __future__ import annotations

from dataclasses import dataclass

from behind_rope.maths.rope_base import NTK_FACTOR, ROPE_THETA


@dataclass(frozen=True)
class Variant:
    alpha: float  # the mean inner product of the inputs, in [0, 1)
    norm: str = "l2"  # l2, layernorm (no affine parameters) or none
    causal: bool = True  # the causal mask; False is the no-mask control
    rope: bool = False  # rotate queries and keys by RoPE
    score_scale: str = "one"  # scores times 1, 1/sqrt(E) or 1/E
    rope_theta: float = ROPE_THETA  # the RoPE base
    ntk_factor: float = NTK_FACTOR  # NTK-aware scaling: the base raised by factor^(E / (E - 2))
    window: int | None = None  # a sliding-window causal mask: query i sees keys i - window + 1 .. i


@dataclass(frozen=True)
class SimulationSize:
    batch_size: int  # B, number of sequences
    seq_len: int  # S
    dim: int  # E
    layers: int
    chunk_size: int
