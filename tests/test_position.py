"""Where absolute position comes from: the definitions on cases of known answer, the interventions on tiny
models, and claims C6-C8 failing on synthetic or control inputs (behind_rope.position, position_claims)."""

import numpy as np
import pytest
import torch

from behind_rope import position
from behind_rope.position_claims import claim_c6, claim_c7, claims_c8
from conftest import default_measures
from test_extract import tiny_model

S = 40


def residual_with(first_key: float, mask: float, seed: int = 0) -> np.ndarray:
    """A residual whose key 0 sits ``first_key`` above zero and whose other keys scatter with RMS ``mask``."""
    rows, cols = np.indices((S, S))
    noise = np.random.default_rng(seed).choice([-mask, mask], size=(S, S))
    residual = np.where(cols == 0, first_key, noise)
    return np.where(cols < rows, residual, np.nan)


def test_the_components_of_a_residual_of_known_parts():
    measures = default_measures()
    parts = position.components(residual_with(2.0, 0.5), measures.early_queries(S))
    assert parts["first_key"] == pytest.approx(2.0) and parts["mask"] == pytest.approx(0.5)
    assert parts["residual_stream_share"] == pytest.approx(4.0 / 4.25)
    assert position.components(residual_with(0.0, 0.5), measures.early_queries(S))["residual_stream_share"] == 0.0
    assert list(measures.early_queries(1024)) == list(range(1, 103)) and measures.late_queries(1024)[0] == 512


def test_fraction_removed_and_the_ntk_base():
    assert position.fraction_removed(2.0, 1.2) == pytest.approx(0.4)
    assert position.fraction_removed(2.0, -3.0) == pytest.approx(-0.5)  # it grew
    assert np.isnan(position.fraction_removed(0.0, 1.0))
    assert position.ntk_theta(10_000.0, 4.0, 64) == pytest.approx(10_000.0 * 4.0 ** (64 / 62))
    assert position.ntk_theta(10_000.0, 1.0, 64) == 10_000.0


def test_closed_system_gaps():
    states = np.random.default_rng(0).standard_normal((3, 1, 8)).repeat(4, axis=1)  # 4 sequences, the same state
    different = states + np.random.default_rng(1).standard_normal(states.shape)
    gaps = position.closed_system_gaps(states, different)
    assert max(gaps["same_first_token"]) == 0.0 and min(gaps["different_first_tokens"]) > 0.1


def test_position_0_is_a_closed_system_in_a_causal_model_and_the_check_can_fail():
    from behind_rope.extract import position0_states

    model = tiny_model("llama")
    tokens = torch.randint(3, 64, (4, 10), generator=torch.Generator().manual_seed(0))
    tokens[:, 0] = 1
    same = position0_states(model, tokens)
    assert np.abs(same - same[:, :1]).max() == 0.0
    different = tokens.clone()
    different[:, 0] = torch.tensor([1, 2, 3, 4])
    assert np.abs(position0_states(model, different) - same[:, :1]).max() > 1e-3


@pytest.mark.parametrize("architecture", ["llama", "gemma3_text"])
def test_replacing_an_input_embedding(architecture):
    from behind_rope.extract import embedding_replacement

    model = tiny_model(architecture)
    tokens = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = model(input_ids=tokens).logits
        identity = model(inputs_embeds=embedding_replacement(model, 0, "identity")(tokens)).logits
        swapped = model(inputs_embeds=embedding_replacement(model, 0, "mean")(tokens)).logits
        token = embedding_replacement(model, 3, "token", token_id=7)(tokens)
    assert torch.equal(identity, reference)  # the control changes nothing
    assert not torch.allclose(swapped[:, 0], reference[:, 0])
    expected = model.get_input_embeddings()(torch.tensor([7]))[0]  # Gemma's scaled embedding included
    assert torch.equal(token[:, 3], expected.expand(2, -1)) and torch.equal(token[:, 2], model.get_input_embeddings()(tokens)[:, 2])


def test_ntk_scaling_raises_every_rope_base():
    from transformers import Gemma3TextConfig, LlamaConfig

    from behind_rope.llm import scale_rope

    llama = LlamaConfig(hidden_size=64, num_attention_heads=4, head_dim=16, rope_parameters={"rope_theta": 1e4, "rope_type": "default"})
    scale_rope(llama, 2.0)
    assert llama.rope_parameters["rope_theta"] == pytest.approx(1e4 * 2 ** (16 / 14))
    gemma = Gemma3TextConfig(head_dim=32)
    bases = {kind: rope["rope_theta"] for kind, rope in gemma.rope_parameters.items()}
    scale_rope(gemma, 4.0)
    assert {kind: rope["rope_theta"] for kind, rope in gemma.rope_parameters.items()} == pytest.approx(
        {kind: base * 4 ** (32 / 30) for kind, base in bases.items()})


# --- The claims fail on synthetic and control inputs ------------------------------------------------

def _metrics(rows):
    return {"layers": [{"layer": k, **row} for k, row in enumerate(rows, start=1)]}


def _row(first=1.0, mask=0.5, share=None, reliability=0.9, layer_type=None):
    row = {"first_key_early": first, "mask_early": mask, "visible_reliability": reliability,
           "residual_stream_share_early": first**2 / (first**2 + mask**2) if share is None else share,
           "first_key_late": first, "residual_stream_share_late": 0.5}
    return row | ({"layer_type": layer_type} if layer_type else {})


def test_c6_needs_structure_with_the_mask_and_none_without():
    metrics = {"m/random_causal": _metrics([_row(reliability=0.1)] + [_row(reliability=0.8)] * 3),
               "m/random_noncausal": _metrics([_row(reliability=0.1)] * 4),
               "simulation/causal": _metrics([_row(reliability=0.95)] * 4),
               "simulation/control": _metrics([_row(reliability=0.2)] * 4)}
    settings = dict(layers=[2, 3, 4], min_reliability=0.5, min_layers=2, simulation_variants=["causal"],
                    simulation_controls=["control"], simulation_from_layer=3, simulation_min_reliability=0.9)
    runs = {"m": {"causal": "m/random_causal", "noncausal": "m/random_noncausal"}}
    assert claim_c6(metrics, runs, **settings)["passed"]
    metrics["m/random_noncausal"] = metrics["m/random_causal"]  # the no-mask run as structured: C6 fails
    assert not claim_c6(metrics, runs, **settings)["passed"]


def _c7(first_key_after: dict):
    runs = {"m": {"original": "m/orig", **{name: f"m.{name}/orig" for name in first_key_after}}}
    metrics = {"m/orig": _metrics([_row(first=2.0)] * 4)}
    metrics |= {f"m.{name}/orig": _metrics([_row(first=value)] * 4) for name, value in first_key_after.items()}
    closed = {"m": {"same_first_token": [0.0], "different_first_tokens": [0.0, 0.3], "first_token": "<s>"}}
    return claim_c7(metrics, runs, closed, {"m": {"bos_identity": 0.0}}, layers=[2, 3, 4], replacement="bos_mean",
                    control_replacements=["late_mean", "bos_identity"], recorded_replacements=[], min_fraction_removed=0.2,
                    max_closed_system_gap=1e-5)


def test_c7_needs_the_bos_swap_to_remove_the_component_and_its_controls_not_to():
    assert _c7({"bos_mean": 1.0, "late_mean": 1.9, "bos_identity": 2.0})["passed"]
    assert not _c7({"bos_mean": 1.9, "late_mean": 1.9, "bos_identity": 2.0})["passed"]   # too little removed
    assert not _c7({"bos_mean": 1.0, "late_mean": 1.0, "bos_identity": 2.0})["passed"]   # the later swap does the same
    assert not _c7({"bos_mean": 1.0, "late_mean": 1.9, "bos_identity": 1.0})["passed"]   # the identity swap does it


def test_c8_needs_a_lower_share_under_ntk_and_a_rising_share_with_depth_in_sliding_layers():
    runs = {"ntk": {"m": {"1": "m/first", "2": "m.ntk2/first", "4": "m.ntk4/first"}}, "simulation_ntk": {},
            "sliding": "g/text", "simulation_window": {}}
    types = ["sliding_attention"] * 5 + ["full_attention"]
    metrics = {"m/first": _metrics([_row(share=0.6)] * 4), "m.ntk2/first": _metrics([_row(share=0.5)] * 4),
               "m.ntk4/first": _metrics([_row(share=0.4)] * 4),
               "g/text": _metrics([_row(share=0.1 * k, layer_type=t) for k, t in enumerate(types, start=1)])}
    result = claims_c8(metrics, runs, layers=[2, 3, 4], min_depth_correlation=0.5)
    assert result["C8a"]["passed"] and result["C8b"]["passed"]
    metrics["m.ntk4/first"] = _metrics([_row(share=0.7)] * 4)  # scaling raises the share: C8a fails
    metrics["g/text"] = _metrics([_row(share=1 - 0.1 * k, layer_type=t) for k, t in enumerate(types, start=1)])
    result = claims_c8(metrics, runs, layers=[2, 3, 4], min_depth_correlation=0.5)
    assert not result["C8a"]["passed"] and not result["C8b"]["passed"]  # ... and a share falling with depth fails C8b
