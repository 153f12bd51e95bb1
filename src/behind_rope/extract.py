"""Pre-softmax attention scores of any transformers decoder, through a registered attention function.

``SCORES`` (causal, each layer's own mask) and ``SCORES_NONCAUSAL`` (mask switched off) are
registered in transformers' ``AttentionInterface``; a model loaded with either as its
``attn_implementation`` hands every layer's query and key (after RoPE) to ``scores_attention``,
which computes eager attention and passes ``QK^T * scale`` (GQA expanded) to the active
``ScoreRecorder``.  Nothing in transformers is patched.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import eager_mask

SCORES = "behind_rope_scores"
SCORES_NONCAUSAL = "behind_rope_scores_noncausal"
_ACTIVE_RECORDER: ContextVar[ScoreRecorder | None] = ContextVar("active_score_recorder", default=None)


class _StopForward(Exception):
    """Raised after the last layer a recorder needs, so deeper layers and the LM head never run."""


class ScoreRecorder:
    """Float64 running sums of pre-softmax scores per layer: over all sequences, and two halves.

    Sequences alternate between half A (even index) and half B (odd index).  Entries that a
    layer's mask hides are counted out, and come back as NaN.  With ``keep_raw`` it also keeps
    every per-sequence score tensor (for tests and the small Gram-matrix check only).
    """

    def __init__(self, layers: Iterable[int], keep_raw: bool = False):
        self.layers = sorted(set(layers))
        self.keep_raw = keep_raw
        self.sums: dict[int, torch.Tensor] = {}
        self.counts: dict[int, torch.Tensor] = {}
        self.raw: dict[int, list[torch.Tensor]] = {layer: [] for layer in self.layers}
        self.first_sequence = 0
        self.sequences = 0

    def add(self, layer: int, query: torch.Tensor, key: torch.Tensor, scaling: float,
            allowed: torch.Tensor | None) -> None:
        """Add one layer's scores ``query @ key^T * scaling`` (key GQA-expanded); ``allowed`` is its bool mask."""
        if layer not in self.layers:
            return
        batch, heads, queries, head_dim = query.shape
        keys = key.shape[-2]
        query, key = query.float(), key.float()
        # The sum over heads of Q_h K_h^T is one matmul over the concatenated heads; it never
        # materialises the (batch, heads, S, S) scores.
        head_sum = torch.matmul(query.transpose(1, 2).reshape(batch, queries, heads * head_dim),
                                key.transpose(1, 2).reshape(batch, keys, heads * head_dim).transpose(1, 2)) * scaling
        if allowed is None:
            allowed = torch.ones(batch, 1, queries, keys, dtype=torch.bool, device=query.device)
        allowed = allowed[:, 0].expand(batch, queries, keys)
        values = torch.where(allowed, head_sum.double(), 0.0)
        counts = allowed.to(torch.float64) * heads
        half = (torch.arange(batch, device=query.device) + self.first_sequence) % 2
        by_half = torch.stack([values[half == h].sum(0) for h in (0, 1)])
        count_by_half = torch.stack([counts[half == h].sum(0) for h in (0, 1)])
        if layer not in self.sums:
            self.sums[layer] = torch.zeros_like(by_half)
            self.counts[layer] = torch.zeros_like(count_by_half)
        self.sums[layer] += by_half
        self.counts[layer] += count_by_half
        if self.keep_raw:
            scores = torch.matmul(query, key.transpose(2, 3)) * scaling
            self.raw[layer].append(torch.where(allowed[:, None], scores, torch.nan).cpu())
        if layer == self.layers[-1]:
            raise _StopForward

    def result(self) -> dict[str, np.ndarray]:
        """``mean_scores``, ``half_a`` and ``half_b``, each (layers, S, S), NaN where masked."""
        def mean(total, count):
            return torch.where(count > 0, total / count.clamp(min=1), torch.nan).cpu().numpy()

        missing = [layer for layer in self.layers if layer not in self.sums]
        if missing:
            raise RuntimeError(f"layers {missing} never reached the score recorder; does the model have them?")
        return {
            "mean_scores": np.stack([mean(self.sums[layer].sum(0), self.counts[layer].sum(0)) for layer in self.layers]),
            "half_a": np.stack([mean(self.sums[layer][0], self.counts[layer][0]) for layer in self.layers]),
            "half_b": np.stack([mean(self.sums[layer][1], self.counts[layer][1]) for layer in self.layers]),
            "layers": np.asarray(self.layers) + 1,
        }


def repeat_kv(states: torch.Tensor, query_heads: int) -> torch.Tensor:
    """GQA: give every query head its key/value head (heads on axis 1)."""
    groups = query_heads // states.shape[1]
    return states if groups == 1 else states.repeat_interleave(groups, dim=1)


def _scores_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, causal=True,
                      softcap=None, **kwargs):
    """Record ``QK^T * scale`` for the active recorder, then attend with the same (or no) mask.

    The layer's own mask arrives in ``attention_mask`` (sliding-window layers get their window).
    The output comes from PyTorch's fused ``scaled_dot_product_attention``; with the same mask and
    scale it equals eager attention, and it is several times faster at 1,024 tokens.
    """
    if softcap is not None:
        raise NotImplementedError("attention logit soft-capping (Gemma 2) is not supported by the score capture")
    key, value = repeat_kv(key, query.shape[1]), repeat_kv(value, query.shape[1])
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    allowed = None
    if causal and attention_mask is not None:
        mask = attention_mask[:, :, :, : key.shape[-2]]
        allowed = mask if mask.dtype == torch.bool else mask == 0
    recorder = _ACTIVE_RECORDER.get()
    if recorder is not None:
        recorder.add(module.layer_idx, query, key, scaling, allowed)
    output = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scaling)
    return output.transpose(1, 2).contiguous(), None


def scores_attention(module, query, key, value, attention_mask, **kwargs):
    return _scores_attention(module, query, key, value, attention_mask, causal=True, **kwargs)


def scores_attention_noncausal(module, query, key, value, attention_mask, **kwargs):
    return _scores_attention(module, query, key, value, attention_mask, causal=False, **kwargs)


AttentionInterface.register(SCORES, scores_attention)
AttentionInterface.register(SCORES_NONCAUSAL, scores_attention_noncausal)
AttentionMaskInterface.register(SCORES, eager_mask)
AttentionMaskInterface.register(SCORES_NONCAUSAL, eager_mask)


@contextmanager
def recording(recorder: ScoreRecorder):
    token = _ACTIVE_RECORDER.set(recorder)
    try:
        yield recorder
    finally:
        _ACTIVE_RECORDER.reset(token)


def pick_device(requested: str = "auto") -> tuple[torch.device, torch.dtype]:
    """CUDA with bf16 when a GPU is there (or asked for), else CPU with float32."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    return device, torch.bfloat16 if device.type == "cuda" else torch.float32


@torch.no_grad()
def record_scores(model, batches: Iterable[torch.Tensor], layers: Iterable[int], causal: bool = True,
                  keep_raw: bool = False, progress=None) -> ScoreRecorder:
    """Run ``model`` over token batches and return the recorder holding the scores of ``layers`` (0-based)."""
    model.set_attn_implementation(SCORES if causal else SCORES_NONCAUSAL)
    device = next(model.parameters()).device
    recorder = ScoreRecorder(layers, keep_raw=keep_raw)
    with recording(recorder):
        for batch in batches:
            try:
                model.base_model(input_ids=batch.to(device), use_cache=False)
            except _StopForward:
                pass
            recorder.first_sequence += len(batch)
            recorder.sequences += len(batch)
            if progress is not None:
                progress.update(len(batch))
    return recorder
