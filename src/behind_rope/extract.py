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

    def add(self, layer: int, scores: torch.Tensor, allowed: torch.Tensor | None) -> None:
        if layer not in self.layers:
            return
        batch, heads, queries, keys = scores.shape
        if allowed is None:
            allowed = torch.ones(batch, 1, queries, keys, dtype=torch.bool, device=scores.device)
        allowed = allowed.expand(batch, heads, queries, keys)
        values = torch.where(allowed, scores.double(), 0.0).sum(dim=1)
        counts = allowed.sum(dim=1, dtype=torch.float64)
        half = (torch.arange(batch, device=scores.device) + self.first_sequence) % 2
        by_half = torch.stack([values[half == h].sum(0) for h in (0, 1)])
        count_by_half = torch.stack([counts[half == h].sum(0) for h in (0, 1)])
        if layer not in self.sums:
            self.sums[layer] = torch.zeros_like(by_half)
            self.counts[layer] = torch.zeros_like(count_by_half)
        self.sums[layer] += by_half
        self.counts[layer] += count_by_half
        if self.keep_raw:
            self.raw[layer].append(torch.where(allowed, scores, torch.nan).detach().cpu())
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
            "mean_scores": np.stack([mean(self.sums[l].sum(0), self.counts[l].sum(0)) for l in self.layers]),
            "half_a": np.stack([mean(self.sums[l][0], self.counts[l][0]) for l in self.layers]),
            "half_b": np.stack([mean(self.sums[l][1], self.counts[l][1]) for l in self.layers]),
            "layers": np.asarray(self.layers) + 1,
        }


def repeat_kv(states: torch.Tensor, query_heads: int) -> torch.Tensor:
    """GQA: give every query head its key/value head (heads on axis 1)."""
    groups = query_heads // states.shape[1]
    return states if groups == 1 else states.repeat_interleave(groups, dim=1)


def _scores_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, causal=True, **kwargs):
    key, value = repeat_kv(key, query.shape[1]), repeat_kv(value, query.shape[1])
    scaling = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    mask = attention_mask[:, :, :, : key.shape[-2]] if causal and attention_mask is not None else None
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros_like(mask, dtype=scores.dtype).masked_fill(~mask, torch.finfo(scores.dtype).min)
    recorder = _ACTIVE_RECORDER.get()
    if recorder is not None:
        recorder.add(module.layer_idx, scores, None if mask is None else mask == 0)
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    output = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return output, weights


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
