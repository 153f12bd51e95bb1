"""Figure 3: the nine Gram matrices that follow layer 1 of a trained twin into layer 2.

They are recomputed from the model's own modules (its weights), step by step, and the
recomputation is checked against the model's forward pass: the layer-1 output against its
hidden state, and both score matrices against what the registered attention function saw.
"""

from __future__ import annotations

import numpy as np
import torch

from behind_rope.capture.kernels import onednn_linears
from behind_rope.capture.scores import record_scores, repeat_kv

PANELS = "abcdefghi"  # in the paper's order; what each shows: workflow/scripts/fig3_nope_gram.py


class RecomputationMismatch(AssertionError):
    """The step-by-step recomputation disagrees with the model's forward pass."""


def _gram(states: torch.Tensor) -> torch.Tensor:
    """Mean over the leading (batch, and heads if present) axes of states @ states^T."""
    gram = states @ states.transpose(-1, -2)
    return gram.reshape(-1, *gram.shape[-2:]).mean(0)


def _heads(states: torch.Tensor, head_dim: int) -> torch.Tensor:
    batch, seq_len, _ = states.shape
    return states.view(batch, seq_len, -1, head_dim).transpose(1, 2)


def _query_key(layer, normed: torch.Tensor, position_embeddings):
    """Per-head query and key (GQA expanded), rotated when the layer uses RoPE."""
    from transformers.models.smollm3.modeling_smollm3 import apply_rotary_pos_emb

    attention = layer.self_attn
    query = _heads(attention.q_proj(normed), attention.head_dim)
    key = _heads(attention.k_proj(normed), attention.head_dim)
    if attention.use_rope:
        query, key = apply_rotary_pos_emb(query, key, *position_embeddings)
    return query, repeat_kv(key, query.shape[1])


@torch.no_grad()
def gram_matrices(model, input_ids: torch.Tensor, tolerance: float = 1e-4) -> tuple[dict[str, np.ndarray], dict]:
    """The nine panels (each S x S, upper triangle NaN) and the agreement with the forward pass."""
    model = model.float().eval()
    # The forward pass computes its linear layers with oneDNN on a CPU (record_scores): the recomputation
    # takes the same kernels, so that the check compares the two computations, not two summation orders.
    with onednn_linears(model.model.layers[:2]):
        return _gram_matrices(model, input_ids, tolerance)


def _gram_matrices(model, input_ids: torch.Tensor, tolerance: float) -> tuple[dict[str, np.ndarray], dict]:
    decoder = model.model
    first, second = decoder.layers[0], decoder.layers[1]
    seq_len = input_ids.shape[1]
    positions = torch.arange(seq_len)[None].expand(len(input_ids), -1)
    position_embeddings = decoder.rotary_emb(decoder.embed_tokens.weight[:1], positions)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()

    x = decoder.embed_tokens(input_ids)
    y = first.input_layernorm(x)
    query, key = _query_key(first, y, position_embeddings)
    scores = query @ key.transpose(-1, -2) * first.self_attn.scaling
    weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    value = _heads(first.self_attn.v_proj(y), first.self_attn.head_dim)
    attended = weights @ repeat_kv(value, query.shape[1])
    projected = first.self_attn.o_proj(attended.transpose(1, 2).reshape(*x.shape[:2], -1))
    o = projected + x
    normed_o = first.post_attention_layernorm(o)
    x_next = first.mlp(normed_o) + o
    y_next = second.input_layernorm(x_next)
    query_2, key_2 = _query_key(second, y_next, position_embeddings)
    scores_2 = query_2 @ key_2.transpose(-1, -2) * second.self_attn.scaling

    # One pass of the model's own forward, stopped in layer 2's attention: layer 1's output (a hook on the
    # layer) and both layers' scores (the recorder).  Layers 3 and up, and the LM head, never run.
    forward = {}

    def keep_output(module, args, output):
        forward["layer1_output"] = (output[0] if isinstance(output, tuple) else output).detach()

    handle = first.register_forward_hook(keep_output)
    try:
        recorded = record_scores(model, [input_ids], layers=[0, 1], keep_raw=True)
    finally:
        handle.remove()
    checks = {
        "layer1_output_vs_hidden_state": (x_next - forward["layer1_output"]).abs().max().item(),
        "layer1_scores_vs_forward": (scores.masked_fill(~causal, 0) - recorded.raw[0][0].nan_to_num()).abs().max().item(),
        "layer2_scores_vs_forward": (scores_2.masked_fill(~causal, 0) - recorded.raw[1][0].nan_to_num()).abs().max().item(),
    }
    failed = {name: gap for name, gap in checks.items() if not gap <= tolerance}
    if failed:
        raise RecomputationMismatch(f"the recomputed Gram panels disagree with the forward pass (max |gap| {failed}, tolerance {tolerance})")

    states = {"a": y, "c": attended, "d": projected, "e": o, "f": normed_o, "g": x_next, "h": y_next}
    panels = {name: _gram(value) for name, value in states.items()}
    panels["b"] = scores.reshape(-1, seq_len, seq_len).mean(0)
    panels["i"] = scores_2.reshape(-1, seq_len, seq_len).mean(0)
    upper = ~causal.numpy()
    out = {}
    for name in PANELS:
        matrix = panels[name].double().numpy()
        matrix[upper] = np.nan
        out[name] = matrix
    return out, {"max_abs_gap": checks, "tolerance": tolerance, "passed": True}
