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
    sees) and the attention paid to key 0 (the sink).  With ``query_offsets`` (and ``per_head``) it also
    sums each head's scores over each row and each offset i - j of the entries the decomposition fits,
    all that each head's query offset a(i) needs (:func:`behind_rope.maths.decompose.query_offsets_from_sums`),
    the part of log Z the softmax cannot see.  With ``leakage`` (and ``query_offsets``) it keeps each head's
    S x S score sums, for the positional leakage of each head (meant for short runs).  With ``value_paths``
    it also sums, for the early queries 0 .. S/10 (where the first key is at least a tenth of every query's
    context), each query's attention output over the concatenated heads (before the output projection) and
    the part of it that key 0's value carries, A[i, 0] v_0 (claim C7).  With ``keep_raw`` it also keeps every
    per-sequence score tensor (for tests and the small Gram-matrix check only).

    The per-head sums and the value paths are kept by group too: sequence k goes to group k mod
    ``GROUPS``, so that a claim's noise floor can come from many splits of the groups into halves rather
    than from one (behind_rope.maths.splits); the even groups are half A, the odd ones half B.  With
    ``score_groups`` the score sums themselves are kept by group, and the result holds each group's mean scores
    as their difference from the run's mean, on the lower triangle (what a split into halves needs).
    """

    GROUPS = 16  # even, so that the halves are unions of groups

    def __init__(self, layers: Iterable[int], keep_raw: bool = False, per_head: bool = False, stop: bool = True,
                 query_offsets: bool = False, value_paths: bool = False, leakage: bool = False,
                 score_groups: bool = False):
        if query_offsets and not per_head:
            raise ValueError("query_offsets are per head: they need per_head")
        if leakage and not query_offsets:
            raise ValueError("leakage is measured with and without the query offsets: it needs query_offsets")
        self.layers = sorted(set(layers))
        self.stop = stop  # stop the pass in the attention of the last layer recorded
        self.keep_raw = keep_raw
        self.per_head = per_head
        self.query_offsets = query_offsets
        self.value_paths = value_paths
        self.leakage = leakage
        self.parts = self.GROUPS if score_groups else 2  # the score sums' parts: sequence k in part k mod parts
        self.path_sums: dict[int, dict[str, torch.Tensor]] = {}  # (groups, early queries, heads x head_dim), with value_paths
        self.head_scores: dict[int, torch.Tensor] = {}  # (heads, S, S) per layer, with leakage
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
        # Sequence k of the whole run goes to part k mod parts (half A holds the even sequences, the even parts);
        # each is added on its own, in sequence order and in float64, so the sums do not depend on the batch size.
        groups = (torch.arange(batch, device=query.device) + self.first_sequence) % self.GROUPS
        parts = [(self.first_sequence + row) % self.parts for row in range(batch)]
        if layer not in self.sums:
            self.sums[layer] = torch.zeros(self.parts, queries, keys, dtype=torch.float64, device=query.device)
            self.counts[layer] = torch.zeros(self.parts, queries, keys, dtype=torch.float32, device=query.device)
        if self.per_head:
            log_z = torch.full((batch, heads, queries), -torch.inf, device=query.device)
            sink = torch.zeros(batch, heads, queries, device=query.device)
            if self.query_offsets:  # each sequence's sums over the fitted entries of each row and each offset i - j
                row_sums = torch.zeros(batch, heads, queries, dtype=torch.float64, device=query.device)
                offset_sums = torch.zeros(batch, heads, queries, dtype=torch.float64, device=query.device)
            if self.leakage and layer not in self.head_scores:
                self.head_scores[layer] = torch.zeros(heads, queries, keys, dtype=torch.float64, device=query.device)
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
                    self._add_fit_sums(scores, hidden[:, start:stop, :seen], start, keys - queries, row_sums, offset_sums)
                if self.leakage:
                    visible = scores.masked_fill(hidden[:, None, start:stop, :seen], 0.0)
                    self.head_scores[layer][:, start:stop, :seen] += visible.sum(0, dtype=torch.float64)
                scores.masked_fill_(hidden[:, None, start:stop, :seen], -torch.inf)
                log_z[:, :, start:stop] = torch.logsumexp(scores, dim=-1)
                sink[:, :, start:stop] = torch.exp(scores[..., 0] - log_z[:, :, start:stop])
            else:
                head_sum = torch.matmul(query_all[:, start:stop], key_all[:, :seen].transpose(1, 2)) * scaling
            head_sum.masked_fill_(hidden[:, start:stop, :seen], 0.0)
            block_sums = self.sums[layer][:, start:stop, :seen]
            for row, part in enumerate(parts):  # row by row: as fast as a sum over the rows, and in sequence order
                block_sums[part] += head_sum[row]
        if self.value_paths:
            self._add_value_paths(layer, query, key, value, scaling, allowed, groups)
        allowed = allowed[:, 0].expand(batch, queries, keys)
        if allowed.stride(0) == 0:  # one mask for the whole batch, as transformers makes it
            seen_once = allowed[0].to(torch.float32) * heads
            for part in set(parts):
                self.counts[layer][part] += seen_once * parts.count(part)
        else:
            for row, part in enumerate(parts):
                self.counts[layer][part] += allowed[row].to(torch.float32) * heads
        if self.per_head:
            self._add_by_group(self.head_sums, layer, {"log_z": log_z, "sink": sink} | (
                {"row_sums": row_sums, "offset_sums": offset_sums} if self.query_offsets else {}), groups)
        if self.keep_raw:
            scores = torch.matmul(query, key.transpose(2, 3)) * scaling
            self.raw[layer].append(torch.where(allowed[:, None], scores, torch.nan).cpu())
        if self.stop and layer == self.layers[-1]:
            raise StopForward

    def _add_by_group(self, store: dict, layer: int, values: dict[str, torch.Tensor], groups: torch.Tensor) -> None:
        """Add per-sequence ``values`` (batch, ...) into ``store[layer]``, summed by group, and count the sequences."""
        sums = store.setdefault(layer, {})
        for name, value in values.items():
            if name not in sums:
                sums[name] = torch.zeros((self.GROUPS, *value.shape[1:]), dtype=torch.float64, device=value.device)
            sums[name].index_add_(0, groups, value.to(torch.float64))
        if "count" not in sums:
            sums["count"] = torch.zeros(self.GROUPS, dtype=torch.float64, device=groups.device)
        sums["count"].index_add_(0, groups, torch.ones(len(groups), dtype=torch.float64, device=groups.device))

    @staticmethod
    def _add_fit_sums(scores, hidden, start: int, shift: int, row_sums, offset_sums) -> None:
        """Add one block of queries' scores (batch, heads, rows, keys), over the entries the decomposition fits
        (visible, key before query, key 0 left out), to each row's sum and each offset's."""
        rows, keys = scores.shape[-2:]
        offset = (torch.arange(start, start + rows, device=scores.device)[:, None] + shift
                  - torch.arange(keys, device=scores.device)[None, :])
        fitted = hidden.logical_not() & (offset > 0)
        fitted[..., 0] = False
        values = scores.double().masked_fill(fitted.logical_not()[:, None], 0.0)
        row_sums[:, :, start:start + rows] += values.sum(-1)
        index = offset.clamp(min=0).flatten().expand(*values.shape[:2], -1)
        offset_sums.scatter_add_(2, index, values.flatten(2))

    def _add_value_paths(self, layer: int, query, key, value, scaling: float, allowed, groups) -> None:
        """For the early queries, summed by group: the attention output and key 0's part of it, per head
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
        # (batch, heads, queries, head_dim) -> (batch, queries, heads x head_dim)
        self._add_by_group(self.path_sums, layer, {name: path.transpose(1, 2).flatten(2) for name, path in paths.items()},
                           groups)

    def result(self) -> dict[str, np.ndarray]:
        """``mean_scores``, ``half_a`` and ``half_b``, each (layers, S, S), NaN where masked."""
        def mean(total, count):
            return torch.where(count > 0, total / count.clamp(min=1), torch.nan).cpu().numpy()

        missing = [layer for layer in self.layers if layer not in self.sums]
        if missing:
            raise RuntimeError(f"layers {missing} never reached the score recorder; does the model have them?")
        result = {
            "mean_scores": np.stack([mean(self.sums[layer].sum(0), self.counts[layer].sum(0)) for layer in self.layers]),
            "half_a": np.stack([mean(self.sums[layer][0::2].sum(0), self.counts[layer][0::2].sum(0)) for layer in self.layers]),
            "half_b": np.stack([mean(self.sums[layer][1::2].sum(0), self.counts[layer][1::2].sum(0)) for layer in self.layers]),
            "layers": np.asarray(self.layers) + 1,
        }
        if self.parts == self.GROUPS:
            result |= self._score_groups(result["mean_scores"])
        if self.per_head:  # (layers, heads, queries) each, for all sequences, per half and per group
            result |= self._by_group(self.head_sums, ("log_z", "sink"))
        if self.query_offsets:
            result |= self._query_offsets()
        if self.leakage:  # (layers, heads): each head's positional leakage, and with its offsets a(i) removed
            from behind_rope.maths.decompose import positional_leakage

            heads = np.stack([mean(self.head_scores[layer], self.counts[layer].sum(0)[None] / self.head_scores[layer].shape[0])
                              for layer in self.layers])
            result["leakage"] = positional_leakage(heads)
            result["leakage_without_offset"] = positional_leakage(heads, result["query_offset"])
        if self.value_paths:  # (layers, early queries, heads x head_dim), for all sequences, per half and per group
            result |= self._by_group(self.path_sums, ("attention_path", "key0_path"))
        return result

    def _score_groups(self, mean_scores: np.ndarray) -> dict[str, np.ndarray]:
        """Each group's mean scores minus the run's, (layers, groups, entries) in float16, at the entries of the
        lower triangle (diagonal included) where the run's mean is finite, row by row (``score_group_entries``, the
        flat indices of one S x S matrix): all that the difference of two halves' means needs, whatever the split,
        since the groups' weights in it sum to zero.  The lower triangle is what a causal run has and what claim
        C5c reads of a run without the mask.  Float16 keeps a part in 2,000 of a difference that is noise-sized;
        the sums stay float64."""
        used = self.counts[self.layers[0]].flatten(1).amax(1) > 0
        seq_len = mean_scores.shape[-1]
        lower = np.tril(np.ones((seq_len, seq_len), dtype=bool))
        entries = np.flatnonzero(np.isfinite(mean_scores).all(0) & lower)
        deviations = []
        for k, layer in enumerate(self.layers):
            sums, counts = self.sums[layer][used].flatten(1), self.counts[layer][used].flatten(1)
            index = torch.from_numpy(entries).to(sums.device)
            group_means = sums[:, index] / counts[:, index].clamp(min=1)
            deviations.append((group_means.cpu().numpy() - mean_scores[k].ravel()[entries]).astype(np.float16))
        sizes = torch.bincount(torch.arange(self.sequences) % self.GROUPS, minlength=self.GROUPS)[used.cpu()]
        return {"score_group_deviations": np.stack(deviations), "score_group_entries": entries,
                "score_group_sizes": sizes.numpy()}

    def _group_means(self, store: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A per-group sum's means, (groups, layers, ...), over the groups that hold a sequence, and their sizes."""
        count = store[self.layers[0]]["count"]
        used = count > 0
        sums = torch.stack([store[layer][name] for layer in self.layers], dim=1)[used]
        shape = (-1,) + (1,) * (sums.dim() - 1)
        return (sums / count[used].view(shape)).cpu().numpy(), count[used].cpu().numpy()

    def _by_group(self, store: dict, names) -> dict[str, np.ndarray]:
        """Each name's mean over all sequences, over each half (the even groups and the odd ones) and over each
        group (``<name>_groups``, float32: they give noise floors), with ``group_sizes``."""
        result = {}
        for name in names:
            means, sizes = self._group_means(store, name)
            result[name] = np.average(means, axis=0, weights=sizes)
            for half, part in (("_half_a", slice(0, None, 2)), ("_half_b", slice(1, None, 2))):
                result[f"{name}{half}"] = np.average(means[part], axis=0, weights=sizes[part])
            result[f"{name}_groups"] = means.astype(np.float32)
            result["group_sizes"] = sizes
        return result

    def _query_offsets(self) -> dict[str, np.ndarray]:
        """a(i) of each head's mean scores, (layers, heads, S), over all sequences, each half and each group."""
        from behind_rope.maths.decompose import query_offsets_from_sums

        sums = {name: self._group_means(self.head_sums, name)[0] for name in ("row_sums", "offset_sums")}
        sizes = self._group_means(self.head_sums, "log_z")[1]
        parts = {"": slice(None), "_half_a": slice(0, None, 2), "_half_b": slice(1, None, 2)}
        result = {f"query_offset{half}": [] for half in parts} | {"query_offset_groups": []}
        for k, layer in enumerate(self.layers):
            queries, keys = self.counts[layer].shape[-2:]
            offset = torch.arange(queries)[:, None] + keys - queries - torch.arange(keys)[None, :]
            fitted = (self.counts[layer].sum(0).cpu() > 0) & (offset > 0)
            fitted[:, 0] = False
            by_group = {name: value[:, k] for name, value in sums.items()}  # (groups, heads, S)
            for half, part in parts.items():
                mean_sums = {name: np.average(value[part], axis=0, weights=sizes[part]) for name, value in by_group.items()}
                result[f"query_offset{half}"].append(query_offsets_from_sums(fitted.numpy(), **mean_sums))
            result["query_offset_groups"].append(query_offsets_from_sums(fitted.numpy(), **by_group))
        result = {name: np.stack(values) for name, values in result.items()}
        result["query_offset_groups"] = result["query_offset_groups"].swapaxes(0, 1).astype(np.float32)
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
                  progress=None, inputs_embeds=None, **recorded: bool) -> ScoreRecorder:
    """Run ``model`` over token batches and return the recorder holding the scores of ``layers`` (0-based).

    ``inputs_embeds``, a function of a token batch, feeds the model embeddings instead of tokens (an
    intervention on the input, e.g. :func:`behind_rope.llm.score_run.embedding_replacement`).  ``recorded``: what
    the recorder keeps besides the mean scores, :class:`ScoreRecorder`'s options (``keep_raw`` the raw scores,
    ``per_head`` log Z and the sink per head, ``query_offsets`` each head's query offset a(i), ``leakage`` each
    head's positional leakage, ``value_paths`` the early queries' attention outputs and key 0's part of them,
    ``score_groups`` each group's mean scores).
    """
    model.set_attn_implementation(SCORES if causal else SCORES_NONCAUSAL)
    device = next(model.parameters()).device
    recorder = ScoreRecorder(layers, **recorded)
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
