"""The twins: the NoPE switch, the RoPE twin as plain Llama, the score capture, the Gram recomputation."""

import numpy as np
import pytest
import torch

from behind_rope.capture.scores import ScoreRecorder, record_scores, recording
from behind_rope.twins.gram import PANELS, RecomputationMismatch, gram_matrices
from behind_rope.twins.model import TwinSize, build_twin, load_twin, save_twin, uses_rope

TINY = TwinSize(vocab_size=50, hidden_size=64, layers=3, heads=4, kv_heads=1, head_dim=16,
                intermediate_size=96, max_positions=64)


def layer_scores_at(model, hidden, positions):
    """Scores of layer 1's attention called directly with the rotary embedding of ``positions``."""
    attention = model.model.layers[0].self_attn
    rotary = model.model.rotary_emb(hidden, positions[None])
    recorder = ScoreRecorder([0], keep_raw=True)
    causal = torch.full((len(positions), len(positions)), torch.finfo(torch.float32).min).triu(1)[None, None]
    with recording(recorder):
        try:
            attention(hidden, position_embeddings=rotary, attention_mask=causal)
        except Exception as stop:  # the recorder stops the forward after its last layer
            assert type(stop).__name__ == "StopForward"
    return recorder.raw[0][0]


@pytest.mark.parametrize("positional", ["nope", "rope"])
def test_nope_scores_ignore_positions_and_rope_scores_do_not(positional):
    model = build_twin(TINY, positional, seed=0).eval()
    model.set_attn_implementation("behind_rope_scores")
    hidden = torch.randn(1, 12, TINY.hidden_size, generator=torch.Generator().manual_seed(1))
    base = layer_scores_at(model, hidden, torch.arange(12))
    shifted = layer_scores_at(model, hidden, torch.arange(12) + 100)
    stretched = layer_scores_at(model, hidden, torch.arange(12) * 7 + 3)
    assert uses_rope(model) == (positional == "rope")
    torch.testing.assert_close(shifted, base, equal_nan=True, atol=1e-4, rtol=1e-4)  # RoPE is relative
    if positional == "nope":
        assert torch.equal(stretched.nan_to_num(), base.nan_to_num())
    else:
        assert (stretched - base).nan_to_num().abs().max() > 1e-2


def test_twins_start_from_the_same_weights():
    nope, rope = build_twin(TINY, "nope", seed=3), build_twin(TINY, "rope", seed=3)
    for (name, a), (_, b) in zip(nope.state_dict().items(), rope.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_the_rope_twin_is_exactly_transformers_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    twin = build_twin(TINY, "rope", seed=0).eval()
    fields = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "head_dim", "max_position_embeddings", "rope_parameters", "tie_word_embeddings",
              "rms_norm_eps")
    llama = LlamaForCausalLM(LlamaConfig(**{f: getattr(twin.config, f) for f in fields}, pad_token_id=None,
                                         bos_token_id=None, eos_token_id=None)).eval()
    llama.load_state_dict(twin.state_dict())
    tokens = torch.randint(0, TINY.vocab_size, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(llama(tokens).logits, twin(tokens).logits)


def test_recorded_mean_scores_are_masked_and_split_into_halves():
    model = build_twin(TINY, "rope", seed=0).eval()
    tokens = torch.randint(0, TINY.vocab_size, (6, 9), generator=torch.Generator().manual_seed(0))
    recorder = record_scores(model, tokens.split(4), layers=[0, 2], keep_raw=True)
    result = recorder.result()
    assert result["mean_scores"].shape == (2, 9, 9)
    assert np.isnan(result["mean_scores"][:, 0, 1:]).all() and np.isfinite(result["mean_scores"][:, 1, :2]).all()
    raw = torch.cat(recorder.raw[2]).double()  # (sequences, heads, S, S)
    np.testing.assert_allclose(result["mean_scores"][1], raw.mean((0, 1)).numpy(), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(result["half_a"][1], raw[0::2].mean((0, 1)).numpy(), rtol=1e-6, atol=1e-8)
    noncausal = record_scores(model, tokens.split(4), layers=[0], causal=False).result()
    assert np.isfinite(noncausal["mean_scores"]).all()


def test_gram_recomputation_agrees_with_the_forward_pass():
    model = build_twin(TINY, "nope", seed=0)
    tokens = torch.randint(0, TINY.vocab_size, (4, 12), generator=torch.Generator().manual_seed(0))
    panels, check = gram_matrices(model, tokens)
    assert set(panels) == set(PANELS) and check["passed"]
    assert all(gap < 1e-4 for gap in check["max_abs_gap"].values())
    assert np.isnan(panels["e"][0, 1]) and np.isfinite(panels["e"][1, 0])


def test_gram_recomputation_catches_a_forward_pass_that_differs():
    model = build_twin(TINY, "nope", seed=0)
    tokens = torch.randint(0, TINY.vocab_size, (4, 12), generator=torch.Generator().manual_seed(0))
    # The forward pass's layer 1 returns something else than its modules compute step by step.
    model.model.layers[0].register_forward_hook(lambda module, args, output: output + 1e-2)
    with pytest.raises(RecomputationMismatch, match="layer1_output_vs_hidden_state"):
        gram_matrices(model, tokens)


def test_saved_twins_load_back_identically(tmp_path):
    model = build_twin(TINY, "nope", seed=0).eval()
    save_twin(model, tmp_path, {"twin": "nope"})
    loaded = load_twin(tmp_path)
    tokens = torch.randint(0, TINY.vocab_size, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(tokens).logits, loaded(tokens).logits)
    assert not uses_rope(loaded)
    with pytest.raises(FileNotFoundError, match="run its training rule"):
        load_twin(tmp_path / "missing")
