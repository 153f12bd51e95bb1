"""oneDNN's packed linear layers: the same float32 arithmetic as the stock layers, only inside the block."""

import numpy as np
import pytest
import torch

from behind_rope.capture import kernels
from behind_rope.capture.scores import record_scores
from test_extract import tiny_model

pytestmark = pytest.mark.skipif(not kernels.onednn_available(), reason="this PyTorch has no oneDNN linear operators")


def linears(model):
    return [module for module in model.modules() if isinstance(module, torch.nn.Linear)]


@torch.no_grad()
def test_inside_the_block_the_layers_compute_with_oneDNN_what_the_stock_layers_compute():
    model = tiny_model("qwen2")  # biased and unbiased projections
    layers = model.model.layers
    inputs = torch.randn(3, 7, model.config.hidden_size)
    stock = [layer.self_attn.q_proj(inputs) for layer in layers] + [layer.mlp.up_proj(inputs) for layer in layers]
    with kernels.onednn_linears(layers) as packed:
        assert packed == len(linears(layers)) > 0
        assert all("forward" in module.__dict__ for module in linears(layers))
        assert "forward" not in model.lm_head.__dict__  # outside the layers passed
        fast = [layer.self_attn.q_proj(inputs) for layer in layers] + [layer.mlp.up_proj(inputs) for layer in layers]
    for expected, got in zip(stock, fast, strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert not any("forward" in module.__dict__ for module in linears(model))  # as they were
    with kernels.onednn_linears(layers) as outer:
        with kernels.onednn_linears(layers[:1]) as inner:  # nested: the outer block keeps its packing
            assert inner == 0
        assert outer > 0 and all("forward" in module.__dict__ for module in linears(layers))
    assert not any("forward" in module.__dict__ for module in linears(model))


def test_nothing_is_packed_with_autograd_on_or_for_other_dtypes_and_autocast_takes_the_stock_path():
    model = tiny_model("llama")
    with kernels.onednn_linears(model.model.layers) as packed:  # autograd on: training must not see packed copies
        assert packed == 0
    with torch.no_grad():
        with kernels.onednn_linears(model.to(torch.bfloat16).model.layers) as packed:
            assert packed == 0
        model = model.float()
        layer = model.model.layers[0].mlp.up_proj
        inputs = torch.randn(2, 5, model.config.hidden_size)
        with kernels.onednn_linears(model.model.layers), torch.autocast("cpu", dtype=torch.bfloat16):
            inside = layer(inputs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outside = layer(inputs)
    assert inside.dtype == torch.bfloat16 and torch.equal(inside, outside)


def test_a_score_run_packs_the_layers_it_runs_and_records_what_the_stock_kernels_record(monkeypatch):
    model = tiny_model("gemma3_text")
    tokens = torch.randint(0, 64, (4, 12), generator=torch.Generator().manual_seed(2))
    packed = []
    real = kernels.packed_linear
    monkeypatch.setattr(kernels, "packed_linear", lambda weight, bias: packed.append(weight) or real(weight, bias))
    fast = record_scores(model, tokens.split(2), range(2), per_head=True).result()
    # The pass stops in the attention of layer 2 of 3: layers 1 and 2 were packed, layer 3 was not.
    assert len(packed) == len(linears(model.model.layers[:2]))
    monkeypatch.setattr(kernels, "onednn_available", lambda: False)
    stock = record_scores(model, tokens.split(2), range(2), per_head=True).result()
    for name in ("mean_scores", "half_a", "log_z", "sink"):
        np.testing.assert_allclose(fast[name], stock[name], rtol=1e-5, atol=1e-6, equal_nan=True)
