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
from functools import lru_cache

import numpy as np
import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.masking_utils import eager_mask

from behind_rope.capture.kernels import onednn_linears

SCORES = "behind_rope_scores"
SCORES_NONCAUSAL = "behind_rope_scores_noncausal"
_ACTIVE_RECORDER: ContextVar[ScoreRecorder | None] = ContextVar("active_score_recorder", default=None)


class StopForward(Exception):
    """Raised after the last layer a recorder needs, so deeper layers and the LM head never run.

    Whoever runs the model's forward pass under :func:`recording` catches it (:func:`record_scores` does).
    """


class ScoreRecorder:
    """Float64 running sums of pre-softmax scores per layer: over all sequences, and two halves.

    Sequences alternate between half A (even index) and half B (odd index).  Entries that a
    layer's mask hides are counted out, and come back as NaN.  With ``per_head`` it also sums, per
    head and query, the log-normaliser log Z (the log-sum-exp of the scores over the keys the query
    sees) and the attention paid to key 0 (the sink), for the same halves.  With ``query_offsets`` (and
    ``per_head``) it also keeps each head's score sums, so that ``result`` gives each head's query offset
    a(i) (:func:`behind_rope.maths.decompose.decompose`), the part of log Z the softmax cannot see: an
    S x S matrix per head and layer, so meant for short runs.  With ``value_paths`` it also sums, for the
    early queries 0 .. S/10 (where the first key is at least a tenth of every query's context), each query's
    attention output over the concatenated heads (before the output projection) and the part of it that key
    0's value carries, A[i, 0] v_0 (claim C7).  With ``keep_raw`` it also keeps every per-sequence score
    tensor (for tests and the small Gram-matrix check only).
    """

    def __init__(self, layers: Iterable[int], keep_raw: bool = False, per_head: bool = False, stop: bool = True,
                 query_offsets: bool = False, value_paths: bool = False):
        if query_offsets and not per_head:
            raise ValueError("query_offsets are per head: they need per_head")
        self.layers = sorted(set(layers))
        self.stop = stop  # stop the pass in the attention of the last layer recorded
        self.keep_raw = keep_raw
        self.per_head = per_head
        self.query_offsets = query_offsets
        self.value_paths = value_paths
        self.path_sums: dict[int, dict[str, torch.Tensor]] = {}  # (2, early queries, heads x head_dim), with value_paths
        self.head_scores: dict[int, torch.Tensor] = {}  # (2, heads, S, S) per layer, with query_offsets
        self.sums: dict[int, torch.Tensor] = {}
        self.counts: dict[int, torch.Tensor] = {}
        self.head_sums: dict[int, dict[str, torch.Tensor]] = {}
        self.raw: dict[int, list[torch.Tensor]] = {layer: [] for layer in self.layers}
        self.first_sequence = 0
        self.sequences = 0
        self.block_rows = 32  # the fewest queries in a block of a causal run (smaller blocks, slower products)

    def add(self, layer: int, query: torch.Tensor, key: torch.Tensor, scaling: float,
            allowed: torch.Tensor | None, lower_triangular: bool = False, value: torch.Tensor | None = None) -> None:
        """Add one layer's scores ``query @ key^T * scaling`` (key and value GQA-expanded); ``allowed`` is its
        bool mask; ``value`` is needed with ``value_paths``.

        ``lower_triangular`` says the mask hides every key after its query (any causal mask, windowed
        or not): the scores are then computed in blocks of queries against only the keys up to the
        block's last query, about half the products of the whole matrix at 1,024 tokens.
        """
        if layer not in self.layers:
            return
        batch, heads, queries, head_dim = query.shape
        keys = key.shape[-2]
        query, key = query.float(), key.float()
        if allowed is None:
            allowed = torch.ones(1, 1, queries, keys, dtype=torch.bool, device=query.device)
        hidden = allowed[:, 0].logical_not()
        # Half A holds the even sequences of the whole run, so every other row of the batch (views, no
        # copies); the sums are over rows in order, in float64, so they do not depend on the batch size.
        rows = [slice((self.first_sequence + h) % 2, None, 2) for h in (0, 1)]
        if layer not in self.sums:
            self.sums[layer] = torch.zeros(2, queries, keys, dtype=torch.float64, device=query.device)
            self.counts[layer] = torch.zeros(2, queries, keys, dtype=torch.float64, device=query.device)
        if self.per_head:
            log_z = torch.full((batch, heads, queries), -torch.inf, device=query.device)
            sink = torch.zeros(batch, heads, queries, device=query.device)
            if self.query_offsets and layer not in self.head_scores:
                self.head_scores[layer] = torch.zeros(2, heads, queries, keys, dtype=torch.float64, device=query.device)
        else:
            # The sum over heads of Q_h K_h^T is one matmul over the concatenated heads; it never
            # materialises the (batch, heads, S, S) scores.
            query_all = query.transpose(1, 2).reshape(batch, queries, heads * head_dim)
            key_all = key.transpose(1, 2).reshape(batch, keys, heads * head_dim)
        block = queries if not lower_triangular else max(self.block_rows, -(-queries // 8))
        for start in range(0, queries, block):
            stop = min(start + block, queries)
            seen = keys if not lower_triangular else min(keys, stop + keys - queries)  # keys after the block: hidden
            if self.per_head:  # the block's scores per head, whose sum over heads is the head sum
                scores = torch.matmul(query[:, :, start:stop], key[:, :, :seen].transpose(2, 3)) * scaling
                head_sum = scores.sum(1)
                if self.query_offsets:
                    visible = scores.masked_fill(hidden[:, None, start:stop, :seen], 0.0)
                    self.head_scores[layer][:, :, start:stop, :seen] += torch.stack(
                        [visible[row].sum(0, dtype=torch.float64) for row in rows])
                scores.masked_fill_(hidden[:, None, start:stop, :seen], -torch.inf)
                log_z[:, :, start:stop] = torch.logsumexp(scores, dim=-1)
                sink[:, :, start:stop] = torch.exp(scores[..., 0] - log_z[:, :, start:stop])
            else:
                head_sum = torch.matmul(query_all[:, start:stop], key_all[:, :seen].transpose(1, 2)) * scaling
            head_sum.masked_fill_(hidden[:, start:stop, :seen], 0.0)
            self.sums[layer][:, start:stop, :seen] += torch.stack([head_sum[row].sum(0, dtype=torch.float64) for row in rows])
        if self.value_paths:
            self._add_value_paths(layer, query, key, value, scaling, allowed, rows)
        allowed = allowed[:, 0].expand(batch, queries, keys)
        if allowed.stride(0) == 0:  # one mask for the whole batch, as transformers makes it
            count_by_half = torch.stack([allowed[0].to(torch.float64) * (len(range(batch)[row]) * heads) for row in rows])
        else:
            count_by_half = torch.stack([allowed[row].sum(0, dtype=torch.float64) * heads for row in rows])
        self.counts[layer] += count_by_half
        if self.per_head:
            self._add_per_head(layer, log_z, sink, rows)
        if self.keep_raw:
            scores = torch.matmul(query, key.transpose(2, 3)) * scaling
            self.raw[layer].append(torch.where(allowed[:, None], scores, torch.nan).cpu())
        if self.stop and layer == self.layers[-1]:
            raise StopForward

    def _add_per_head(self, layer: int, log_z: torch.Tensor, sink: torch.Tensor, rows) -> None:
        """Per head and query, summed by half: log Z over the visible keys, and the attention weight of key 0."""
        sums = self.head_sums.setdefault(layer, {})
        for name, values in (("log_z", log_z), ("sink", sink)):
            by_half = torch.stack([values[row].sum(0, dtype=torch.float64) for row in rows])
            sums[name] = sums[name] + by_half if name in sums else by_half
        counts = torch.tensor([len(range(len(log_z))[row]) for row in rows], dtype=torch.float64, device=log_z.device)
        sums["count"] = sums["count"] + counts if "count" in sums else counts

    def _add_value_paths(self, layer: int, query, key, value, scaling: float, allowed, rows) -> None:
        """For the early queries, summed by half: the attention output and key 0's part of it, per head
        concatenated (batch, queries, heads x head_dim), from the same scores and mask as the layer's own."""
        if value is None:
            raise ValueError("value_paths needs the layer's values")
        early = query.shape[2] // 10 + 1
        scores = torch.matmul(query[:, :, :early], key.transpose(2, 3)) * scaling
        if allowed is not None:
            scores = scores.masked_fill(allowed[:, :, :early].logical_not(), -torch.inf)
        weights = torch.softmax(scores, dim=-1)
        value = value.float()
        paths = {"attention_path": torch.matmul(weights, value), "key0_path": weights[..., :1] * value[:, :, :1]}
        sums = self.path_sums.setdefault(layer, {})
        for name, path in paths.items():  # (batch, heads, queries, head_dim) -> (batch, queries, heads x head_dim)
            path = path.transpose(1, 2).flatten(2)
            by_half = torch.stack([path[row].sum(0, dtype=torch.float64) for row in rows])
            sums[name] = sums[name] + by_half if name in sums else by_half
        counts = torch.tensor([len(range(len(query))[row]) for row in rows], dtype=torch.float64, device=query.device)
        sums["count"] = sums["count"] + counts if "count" in sums else counts

    def result(self) -> dict[str, np.ndarray]:
        """``mean_scores``, ``half_a`` and ``half_b``, each (layers, S, S), NaN where masked."""
        def mean(total, count):
            return torch.where(count > 0, total / count.clamp(min=1), torch.nan).cpu().numpy()

        missing = [layer for layer in self.layers if layer not in self.sums]
        if missing:
            raise RuntimeError(f"layers {missing} never reached the score recorder; does the model have them?")
        result = {
            "mean_scores": np.stack([mean(self.sums[layer].sum(0), self.counts[layer].sum(0)) for layer in self.layers]),
            "half_a": np.stack([mean(self.sums[layer][0], self.counts[layer][0]) for layer in self.layers]),
            "half_b": np.stack([mean(self.sums[layer][1], self.counts[layer][1]) for layer in self.layers]),
            "layers": np.asarray(self.layers) + 1,
        }
        if self.per_head:  # (layers, heads, queries) each, for all sequences and per half
            for name in ("log_z", "sink"):
                sums = torch.stack([self.head_sums[layer][name] for layer in self.layers])  # (layers, 2, heads, S)
                count = torch.stack([self.head_sums[layer]["count"] for layer in self.layers])[:, :, None, None]
                result[name] = (sums.sum(1) / count.sum(1)).cpu().numpy()
                result[f"{name}_half_a"] = (sums[:, 0] / count[:, 0]).cpu().numpy()
                result[f"{name}_half_b"] = (sums[:, 1] / count[:, 1]).cpu().numpy()
        if self.query_offsets:  # (layers, heads, queries): a(i) of each head's mean scores, and per half
            from behind_rope.maths.decompose import decompose, positional_leakage

            for name, pick in (("", lambda t: t.sum(0)), ("_half_a", lambda t: t[0]), ("_half_b", lambda t: t[1])):
                heads = np.stack([mean(pick(self.head_scores[layer]),
                                       pick(self.counts[layer])[None] / self.head_scores[layer].shape[1])
                                  for layer in self.layers])
                result[f"query_offset{name}"] = decompose(heads).query_offset
                if not name:  # (layers, heads): each head's positional leakage, and with its offsets a(i) removed
                    result["leakage"] = positional_leakage(heads)
                    result["leakage_without_offset"] = positional_leakage(heads, result["query_offset"])
        if self.value_paths:  # (layers, early queries, heads x head_dim), for all sequences and per half
            for name in ("attention_path", "key0_path"):
                sums = torch.stack([self.path_sums[layer][name] for layer in self.layers])  # (layers, 2, queries, width)
                count = torch.stack([self.path_sums[layer]["count"] for layer in self.layers])[:, :, None, None]
                result[name] = (sums.sum(1) / count.sum(1)).cpu().numpy()
                result[f"{name}_half_a"] = (sums[:, 0] / count[:, 0]).cpu().numpy()
                result[f"{name}_half_b"] = (sums[:, 1] / count[:, 1]).cpu().numpy()
        return result


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
    if causal and attention_mask is None:
        # Attending without a mask here would make a causal run silently non-causal.
        raise RuntimeError(f"layer {module.layer_idx}: a causal score run got no attention mask from the model")
    if causal:
        mask = attention_mask[:, :, :, : key.shape[-2]]
        allowed = mask if mask.dtype == torch.bool else mask == 0
    lower_triangular = allowed is not None and skips_hidden_keys(query.device) and hides_later_keys(allowed)
    recorder = _ACTIVE_RECORDER.get()
    if recorder is not None:
        recorder.add(module.layer_idx, query, key, scaling, allowed, lower_triangular=lower_triangular, value=value)
    if allowed is not None and is_plain_causal(allowed):
        # Told the mask is causal, the fused kernel skips the blocks above the diagonal: on the CPU the
        # same output bit for bit, and a score run's CPU time 0.94 of the masked kernel's (docs/performance.md).
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling)
    elif lower_triangular:  # a sliding window: the kernel would compute every key the mask hides
        output = attend_in_blocks(query, key, value, allowed, scaling)
    else:
        output = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scaling)
    return output.transpose(1, 2).contiguous(), None


def attend_in_blocks(query, key, value, allowed: torch.Tensor, scaling: float, rows: int = 128) -> torch.Tensor:
    """The fused attention of each block of ``rows`` queries over only the keys some query of the block sees.

    For a mask that hides every key after its query: under a sliding window of 512 keys at 1,024 tokens
    this computes about half the products of one masked call, with the same output up to float32's
    rounding (the kernel sums the keys in other blocks).
    """
    queries, keys = allowed.shape[-2:]
    outputs = []
    for start in range(0, queries, rows):
        stop = min(start + rows, queries)
        block = allowed[:, :, start:stop, : stop + keys - queries]
        seen = block.any(dim=(0, 1, 2)).nonzero()
        first = int(seen[0]) if len(seen) else 0  # the keys before it: hidden from every query of the block
        outputs.append(torch.nn.functional.scaled_dot_product_attention(
            query[:, :, start:stop], key[:, :, first:block.shape[-1]], value[:, :, first:block.shape[-1]],
            attn_mask=block[..., first:], scale=scaling))
    return torch.cat(outputs, dim=2)


def skips_hidden_keys(device: torch.device) -> bool:
    """Whether the capture on ``device`` computes in blocks that skip the keys a causal mask hides.

    On a CPU the products are the time, and the blocks skip about half of them (docs/performance.md: a
    per-head run 0.58 of the CPU time).  On a GPU the products are cheap, and what the blocks add costs
    as much as they save or more: their many small launches and the host's reads of the mask
    (benchmarks/gpu_path.py on an H200, against one product over the whole matrix: 1.1 to 1.6 times its time in
    batches of 4; in batches of 16, 1.2 to 1.3 for Gemma-3's windows and 0.86 to 0.98 for SmolLM2's shapes),
    so there it is one product.
    """
    return device.type == "cpu"


def is_plain_causal(allowed: torch.Tensor) -> bool:
    """Whether a (batch, 1, S, S) bool mask is the causal mask of every sequence: no window, no padding."""
    queries, keys = allowed.shape[-2:]
    return queries == keys and torch.equal(allowed, _causal(queries, allowed.device).expand_as(allowed))


def hides_later_keys(allowed: torch.Tensor) -> bool:
    """Whether a (batch, 1, queries, keys) bool mask hides every key after its query (the queries being the
    last positions), as every causal mask does, with a window, padding or neither."""
    queries, keys = allowed.shape[-2:]
    mask = allowed[:1] if allowed.stride(0) == 0 else allowed  # one mask expanded over the batch: check it once
    return not bool(mask.triu(keys - queries + 1).any())


@lru_cache(maxsize=4)
def _causal(size: int, device: torch.device) -> torch.Tensor:
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


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


@torch.no_grad()
def record_scores(model, batches: Iterable[torch.Tensor], layers: Iterable[int], causal: bool = True,
                  keep_raw: bool = False, progress=None, inputs_embeds=None, per_head: bool = False,
                  query_offsets: bool = False, value_paths: bool = False) -> ScoreRecorder:
    """Run ``model`` over token batches and return the recorder holding the scores of ``layers`` (0-based).

    ``inputs_embeds``, a function of a token batch, feeds the model embeddings instead of tokens (an
    intervention on the input, e.g. :func:`behind_rope.llm.score_run.embedding_replacement`); ``per_head``
    records log Z and the sink per head too, ``query_offsets`` each head's query offset a(i), and ``value_paths``
    the early queries' attention outputs and key 0's part of them (:class:`ScoreRecorder`).
    """
    model.set_attn_implementation(SCORES if causal else SCORES_NONCAUSAL)
    device = next(model.parameters()).device
    recorder = ScoreRecorder(layers, keep_raw=keep_raw, per_head=per_head, query_offsets=query_offsets,
                             value_paths=value_paths)
    running = model.base_model.layers[: recorder.layers[-1] + 1]  # the pass stops in the last layer recorded
    with recording(recorder), onednn_linears(running):
        for batch in batches:
            batch = batch.to(device)
            inputs = {"input_ids": batch} if inputs_embeds is None else {"inputs_embeds": inputs_embeds(batch)}
            try:
                model.base_model(**inputs, use_cache=False)
            except StopForward:
                pass
            recorder.first_sequence += len(batch)
            recorder.sequences += len(batch)
            if progress is not None:
                progress.update(len(batch))
    return recorder
