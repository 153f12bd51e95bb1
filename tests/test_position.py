"""Where absolute position comes from: the definitions on cases of known answer, the interventions and the
per-head records on tiny models, and claims C6-C9 failing on synthetic or control inputs
(behind_rope.maths.position_sources, position.heads, patching, claims)."""

import json

import numpy as np
import pytest
import torch

from behind_rope.claims import position as claims_module
from behind_rope.claims.position import claim_c6, claim_c7, claim_c8a, claim_c8b, claim_c9
from behind_rope.maths import position_sources as position
from behind_rope.maths.rope_base import ntk_theta
from behind_rope.position import heads
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


def test_the_ntk_base():
    assert ntk_theta(10_000.0, 4.0, 64) == pytest.approx(10_000.0 * 4.0 ** (64 / 62))
    assert ntk_theta(10_000.0, 1.0, 64) == 10_000.0


def test_closed_system_gaps():
    states = np.random.default_rng(0).standard_normal((3, 1, 8)).repeat(4, axis=1)  # 4 sequences, the same state
    different = states + np.random.default_rng(1).standard_normal(states.shape)
    gaps = position.closed_system_gaps(states, different)
    assert max(gaps["same_first_token"]) == 0.0 and min(gaps["different_first_tokens"]) > 0.1


def test_position_0_is_a_closed_system_in_a_causal_model_and_the_check_can_fail():
    from behind_rope.position.patching import position0_states

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
    from behind_rope.llm.score_run import embedding_replacement

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

    from behind_rope.llm.loading import scale_rope

    llama = LlamaConfig(hidden_size=64, num_attention_heads=4, head_dim=16, rope_parameters={"rope_theta": 1e4, "rope_type": "default"})
    scale_rope(llama, 2.0)
    assert llama.rope_parameters["rope_theta"] == pytest.approx(1e4 * 2 ** (16 / 14))
    gemma = Gemma3TextConfig(head_dim=32)
    bases = {kind: rope["rope_theta"] for kind, rope in gemma.rope_parameters.items()}
    scale_rope(gemma, 4.0)
    assert {kind: rope["rope_theta"] for kind, rope in gemma.rope_parameters.items()} == pytest.approx(
        {kind: base * 4 ** (32 / 30) for kind, base in bases.items()})


def test_zero_and_random_replacements():
    from behind_rope.llm.score_run import embedding_replacement

    model = tiny_model("llama")
    tokens = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    zero = embedding_replacement(model, 0, "zero")(tokens)
    assert torch.equal(zero[:, 0], torch.zeros_like(zero[:, 0]))
    first, again = (embedding_replacement(model, 0, "random", seed=3)(tokens) for _ in range(2))
    other = embedding_replacement(model, 0, "random", seed=4)(tokens)
    assert torch.equal(first, again) and not torch.equal(first[:, 0], other[:, 0])  # the seed picks the token
    with pytest.raises(ValueError, match="unknown embedding replacement"):
        embedding_replacement(model, 0, "median")


@pytest.mark.parametrize("causal", [True, False])
def test_per_head_log_z_and_sink_match_the_raw_scores(causal):
    from behind_rope.capture.scores import record_scores

    model = tiny_model("llama")
    tokens = torch.randint(0, 64, (4, 12), generator=torch.Generator().manual_seed(0))
    recorder = record_scores(model, tokens.split(3), range(2), causal=causal, keep_raw=True, per_head=True)
    result = recorder.result()
    raw = torch.cat(recorder.raw[1]).double()  # (sequences, heads, S, S), NaN where masked
    logits = torch.nan_to_num(raw, nan=-torch.inf)
    log_z = torch.logsumexp(logits, dim=-1)
    np.testing.assert_allclose(result["log_z"][1], log_z.mean(0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(result["log_z_half_a"][1], log_z[0::2].mean(0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(result["sink"][1], torch.softmax(logits, -1)[..., 0].mean(0).numpy(), rtol=1e-5, atol=1e-7)
    if causal:  # query 0 sees key 0 only
        np.testing.assert_allclose(result["sink"][:, :, 0], 1.0, rtol=1e-6)


@pytest.mark.parametrize("causal", [True, False])
def test_query_offsets_are_the_decomposition_of_each_heads_mean_scores(causal):
    from behind_rope.capture.scores import record_scores
    from behind_rope.maths.decompose import decompose

    model = tiny_model("llama")
    tokens = torch.randint(0, 64, (4, 12), generator=torch.Generator().manual_seed(0))
    result = record_scores(model, tokens.split(3), range(2), causal=causal, keep_raw=True, per_head=True,
                           query_offsets=True)
    raw = torch.cat(result.raw[1]).double().numpy()  # (sequences, heads, S, S), NaN where masked
    arrays = result.result()
    for name, rows in (("query_offset", slice(None)), ("query_offset_half_a", slice(0, None, 2)),
                       ("query_offset_half_b", slice(1, None, 2))):
        np.testing.assert_allclose(arrays[name][1], decompose(raw[rows].mean(0)).query_offset, rtol=1e-5, atol=1e-6)
    # log Z - a(i) is what the softmax sees: the same per sequence, up to one constant per head, whatever is
    # added to a query's scores.
    visible = heads.visible_log_z(arrays)["log_z_visible"][1]
    logits = np.nan_to_num(raw, nan=-np.inf)
    per_sequence = [np.log(np.exp(logits[k]).sum(-1)) - decompose(raw[k]).query_offset for k in range(len(raw))]
    np.testing.assert_allclose(visible[:, 2:], np.mean(per_sequence, 0)[:, 2:], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="need per_head"):
        record_scores(model, [tokens], range(2), query_offsets=True)


@pytest.mark.parametrize("causal", [True, False])
def test_each_group_of_sequences_keeps_its_own_log_z_query_offsets_and_value_paths(causal):
    """The per-group records a floor from many splits reads: sequence k in group k mod 16, so with 5 sequences each
    group is one sequence, and each group's a(i) is the decomposition of its own mean scores."""
    from behind_rope.capture.scores import record_scores
    from behind_rope.maths.decompose import decompose

    model = tiny_model("llama")
    tokens = torch.randint(0, 64, (5, 30), generator=torch.Generator().manual_seed(1))
    recorder = record_scores(model, tokens.split(2), range(2), causal=causal, keep_raw=True, per_head=True,
                             query_offsets=True, value_paths=True)
    arrays = recorder.result()
    raw = torch.cat(recorder.raw[1]).double()  # (sequences, heads, S, S)
    log_z = torch.logsumexp(torch.nan_to_num(raw, nan=-torch.inf), dim=-1).numpy()
    assert arrays["group_sizes"].tolist() == [1] * 5 and arrays["log_z_groups"].shape == (5, 2, *log_z.shape[1:])
    np.testing.assert_allclose(arrays["log_z_groups"][:, 1], log_z, rtol=1e-5)
    np.testing.assert_allclose(arrays["query_offset_groups"][:, 1], decompose(raw.numpy()).query_offset, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(arrays["key0_path_groups"].mean(0), arrays["key0_path"], rtol=1e-5, atol=1e-6)
    # The halves are the even groups and the odd ones, as before the groups.
    np.testing.assert_allclose(arrays["log_z_half_b"][1], log_z[1::2].mean(0), rtol=1e-5)


def test_a_remaining_shares_floor_from_inner_products_is_the_floor_of_each_splits_shares():
    from behind_rope.maths.splits import split_floor

    rng = np.random.default_rng(2)
    original, changed = rng.normal(size=(16, 3, 5, 4)), rng.normal(size=(16, 3, 5, 4))
    sizes = rng.integers(1, 4, size=16)
    direct = split_floor(np.stack([original, changed], 1), sizes, 200, 0.5,
                         statistic=lambda both: claims_module.remaining_share(both[0], both[1]))
    assert claims_module.share_floor(original, changed, sizes, 200, 0.5) == pytest.approx(direct, rel=1e-9)


def test_a_floor_from_many_splits_does_not_rest_on_one_lucky_draw():
    from behind_rope.maths.splits import random_halves, split_floor, split_gaps

    halves = random_halves(16, 200, seed=3)
    assert halves.sum(1).tolist() == [8] * 200 and len({row.tobytes() for row in halves}) > 150
    # Groups whose even and odd members mirror each other: the one even/odd split sees no noise at all,
    # while the groups plainly differ; many splits see it.
    values = np.repeat(np.random.default_rng(0).normal(size=8), 2)
    assert abs(values[0::2].mean() - values[1::2].mean()) == 0
    assert split_floor(values, np.ones(16), 500, 0.5) > 0.1
    # Of i.i.d. groups of unit spread, |mean A - mean B| has a spread of sqrt(2 / 8): its median is near 0.674 x 0.5.
    noise = np.random.default_rng(1).normal(size=(16, 2000))
    assert np.median(split_floor(noise, np.ones(16), 200, 0.5)) == pytest.approx(0.674 * 0.5, rel=0.05)
    # A statistic that is not linear (a ratio) is computed on each half's means; sizes weight the groups.
    ratio = split_gaps(np.stack([np.ones(4), [1.0, 3.0, 1.0, 3.0]], 1), [1, 1, 1, 1], 10,
                       statistic=lambda m: m[1] / m[0])
    assert set(np.round(ratio, 6)) <= {0.0, 2.0}
    assert np.isnan(split_floor([1.0], [1], 10, 0.5))


@pytest.mark.parametrize("causal", [True, False])
def test_value_paths_are_the_layers_own_attention_output_and_key_0s_part_of_it(causal):
    from behind_rope.capture.scores import record_scores, repeat_kv

    model = tiny_model("llama")
    attention = model.model.layers[0].self_attn
    seen = {}
    hooks = [attention.o_proj.register_forward_pre_hook(lambda _m, args: seen.setdefault("out", []).append(args[0])),
             attention.v_proj.register_forward_hook(lambda _m, _a, out: seen.setdefault("v", []).append(out))]
    tokens = torch.randint(0, 64, (5, 30), generator=torch.Generator().manual_seed(0))
    recorder = record_scores(model, tokens.split(2), range(2), causal=causal, keep_raw=True, value_paths=True)
    for hook in hooks:
        hook.remove()
    arrays = recorder.result()
    early = 30 // 10 + 1
    output = torch.cat(seen["out"]).double()[:, :early]  # (sequences, queries, heads x head_dim)
    np.testing.assert_allclose(arrays["attention_path"][0], output.mean(0).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arrays["attention_path_half_b"][0], output[1::2].mean(0).numpy(), rtol=1e-5, atol=1e-6)
    heads, kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
    values = torch.cat(seen["v"]).double().unflatten(-1, (kv_heads, -1)).transpose(1, 2)
    values = repeat_kv(values, heads)  # (sequences, heads, S, head_dim)
    weights = torch.softmax(torch.nan_to_num(torch.cat(recorder.raw[0]).double(), nan=-torch.inf), -1)
    key0 = (weights[:, :, :early, :1] * values[:, :, :1]).transpose(1, 2).flatten(2)
    np.testing.assert_allclose(arrays["key0_path"][0], key0.mean(0).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arrays["key0_path_half_a"][0], key0[0::2].mean(0).numpy(), rtol=1e-5, atol=1e-6)
    if causal:  # query 0 sees key 0 only: all of its output is key 0's
        np.testing.assert_allclose(arrays["key0_path"][:, 0], arrays["attention_path"][:, 0], rtol=1e-5, atol=1e-6)


def test_a_query_offset_moves_log_z_but_not_the_part_the_softmax_sees():
    """The simulation's way (one matrix per layer): a(i) fitted to its mean scores, here a per-query shift of
    known size, comes out of log Z exactly."""
    rng = np.random.default_rng(0)
    scores = np.where(np.tril(np.ones((S, S), bool)), rng.standard_normal((2, S, S)), np.nan)  # 2 layers
    shifted = scores + np.log(np.arange(S) + 1.0)[:, None] * 3.0  # query i's scores all up by 3 log(i + 1)

    def arrays(matrices):
        log_z = np.log(np.nansum(np.exp(matrices), -1))
        return {"mean_scores": matrices, "half_a": matrices, "half_b": matrices, "log_z": log_z,
                "log_z_half_a": log_z, "log_z_half_b": log_z, "chunk_means": matrices[None],
                "log_z_groups": log_z[None], "group_sizes": np.array([1])}

    before, after = heads.visible_log_z(arrays(scores)), heads.visible_log_z(arrays(shifted))
    assert heads.log_z_slopes(arrays(shifted)["log_z"], 16) == pytest.approx(
        heads.log_z_slopes(arrays(scores)["log_z"], 16) + 3.0)  # the raw log Z takes the shift one for one
    moved = (after["log_z_visible"] - before["log_z_visible"])[:, 2:]  # rows 0 and 1 have no a(i) (key 0 left out)
    assert np.ptp(moved, axis=-1) == pytest.approx([0, 0], abs=1e-9)  # one constant: a's mean-zero convention
    with pytest.raises(KeyError, match="query offsets"):
        heads.visible_log_z({"log_z": np.zeros((2, 3, S)), "mean_scores": scores})


def test_patching_every_layer_records_the_effects_and_the_sink_attention():
    from behind_rope.capture.scores import record_scores
    from behind_rope.position.patching import patching_effects

    model = tiny_model("llama")  # 3 layers
    tokens = torch.randint(3, 64, (4, 16), generator=torch.Generator().manual_seed(0))
    tokens[:, 0] = 1  # one BOS
    effects = patching_effects(model, tokens, from_layer=2, control_position=8, sink_from_query=4)
    assert effects["layers"] == [2, 3] and set(effects["patches"]) == {"position0", "middle"}
    for layer in ("2", "3"):
        changes = {name: max(patch["layers"][layer]["head_output_change"]) for name, patch in effects["patches"].items()}
        assert changes["position0"] > 1e-3 and changes["middle"] > 1e-3, layer
    assert effects["queries_from"] == 9 and len(effects["patches"]["middle"]["layers"]["2"]["log_z_change"]) == 4
    # In batches, each donor comes from its own pass; in one batch, from the batch itself: the same effects.
    in_batches = patching_effects(model, tokens, from_layer=2, control_position=8, sink_from_query=4, batch_size=3)
    for name, patch in effects["patches"].items():
        for layer in ("2", "3"):
            for key in ("head_output_change", "head_output_change_halves"):
                np.testing.assert_allclose(in_batches["patches"][name]["layers"][layer][key], patch["layers"][layer][key],
                                           rtol=1e-4, atol=1e-6)
    # Each half alone (the even sequences, then the odd ones, each with its own donors) gives its own change.
    halves = effects["patches"]["position0"]["layers"]["2"]["head_output_change_halves"]
    assert halves[0] != halves[1]
    whole = np.asarray(effects["patches"]["position0"]["layers"]["2"]["head_output_change"])
    assert np.all((whole >= np.minimum(*halves) - 1e-6) & (whole <= np.maximum(*halves) + 1e-6))
    # The sink heads' attention, at every layer, is the score recorder's, over all sequences and half A.
    recorded = record_scores(model, [tokens], range(3), per_head=True).result()
    for k, layer in enumerate(("1", "2", "3")):
        for name, key in (("all", "sink"), ("half_a", "sink_half_a")):
            np.testing.assert_allclose(effects["sink_attention"][name][layer], recorded[key][k][:, 4:].mean(-1), rtol=1e-5)
            np.testing.assert_allclose(in_batches["sink_attention"][name][layer], recorded[key][k][:, 4:].mean(-1),
                                       rtol=1e-5)


@pytest.mark.parametrize("architecture", ["llama", "qwen2", "gemma3_text"])
def test_a_pass_started_at_a_layer_computes_what_the_whole_pass_computes(architecture):
    from behind_rope.capture.scores import SCORES
    from behind_rope.position.patching import _forward, decoder_layers, patched

    model = tiny_model(architecture)  # Gemma-3's layers: sliding window, full, sliding window (window 4)
    model.set_attn_implementation(SCORES)  # as patching_effects sets it: the per-head log Z is recorded
    tokens = torch.randint(3, 64, (2, 16), generator=torch.Generator().manual_seed(0))
    inputs, _, _ = _forward(model, tokens, 2)
    for layer in (0, 1, 2):  # 2, the model's last, as well
        changed = patched(inputs[layer], 0, inputs[layer][:, 5])  # position 0 given position 5's state

        def enter_changed(module, args, kwargs, changed=changed):
            if args:
                return (changed, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": changed}

        handle = decoder_layers(model)[layer].register_forward_pre_hook(enter_changed, with_kwargs=True)
        try:
            _, whole_outputs, whole_log_z = _forward(model, tokens, layer)  # every layer runs
        finally:
            handle.remove()
        _, outputs, log_z = _forward(model, tokens, layer, start=(layer, changed))
        assert torch.equal(outputs[layer], whole_outputs[layer]), layer
        assert torch.equal(log_z[layer], whole_log_z[layer]), layer
        assert len(decoder_layers(model)) == 3  # the model is whole again


def test_log_z_slopes_of_known_answer():
    i = np.arange(64)
    assert heads.log_z_slopes(np.log(i + 1.0), 16) == pytest.approx(1.0)
    assert heads.log_z_slopes(np.full(64, 3.0), 16) == pytest.approx(0.0)
    assert np.isnan(heads.log_z_slopes(np.zeros(20), 19))
    assert heads.spearman([1, 2, 3, 4], [1, 3, 2, 5]) == pytest.approx(0.8)
    sink = np.zeros((2, 3, 40))
    sink[1, 2] = 0.9
    assert heads.sink_heads(sink, 16, 0.5).tolist() == [[False] * 3, [False, False, True]]


# --- The claims fail on synthetic and control inputs ------------------------------------------------

def _per_head(slope_by_layer, seq_len=64, heads_per_layer=4, noise=0.01, offset_slope=0.0):
    """A per-head record whose log Z grows as slope x log(i + 1), each half a little off, with a query offset
    a(i) = offset_slope x log(i + 1) (which the softmax cannot see)."""
    grow = np.log(np.arange(seq_len) + 1.0)
    rows = np.array([[[s * grow for _ in range(heads_per_layer)]] for s in slope_by_layer])[:, 0]
    wobble = noise * np.sin(np.arange(seq_len))
    offset = np.broadcast_to(offset_slope * grow, rows.shape)
    return {"log_z": rows + offset, "log_z_half_a": rows + offset + wobble, "log_z_half_b": rows + offset - wobble,
            "query_offset": offset, "query_offset_half_a": offset, "query_offset_half_b": offset,
            "layers": np.arange(1, len(slope_by_layer) + 1)} | _two_groups(
        {"log_z": (rows + offset + wobble, rows + offset - wobble), "query_offset": (offset, offset)})


def _two_groups(halves: dict) -> dict:
    """Groups of a score file that are its two halves: every split of them is the one split, so the floor from many
    splits is the split-half difference, whatever its quantile."""
    return {f"{name}_groups": np.stack(pair) for name, pair in halves.items()} | {"group_sizes": np.array([8, 8])}


FLOOR = {"floor_splits": 50, "floor_quantile": 0.5}


def _with_metadata(files: dict, **metadata) -> dict:
    """Score files' arrays as a claim reads them: each with the metadata a score file carries, as JSON text."""
    return {run: arrays | {"metadata": np.array(json.dumps(metadata))} for run, arrays in files.items()}


def _c6(no_mask_slope, probe_slope=1.0, probe_noise=0.01, sim_slope=0.9, sim_no_mask_slope=0.0, offset_slope=0.0,
        no_mask_noise=0.01):
    from behind_rope.claims.outcome import settle

    arrays = {"m/probe": _per_head([probe_slope] * 4, noise=probe_noise, offset_slope=offset_slope),
              "m/no_mask": _per_head([no_mask_slope] * 4, noise=no_mask_noise, offset_slope=offset_slope),
              "sim/probe": _per_head([sim_slope] * 4, heads_per_layer=1),
              "sim/no_mask": _per_head([sim_no_mask_slope] * 4, heads_per_layer=1)}
    arrays = {k: v if not k.startswith("sim") else {n: (a[..., 0, :] if a.ndim >= 3 else a) for n, a in v.items()}
              for k, v in arrays.items()}
    return settle(claim_c6(_with_metadata(arrays, sequences=16), {"m": {"probe": "m/probe", "no_mask": "m/no_mask"}},
                           {"probe": "sim/probe", "no_mask": "sim/no_mask"},
                           dict(layers=[2, 3, 4], min_query=16, min_slope_ratio=0.25, floor_multiple=2.0,
                                min_head_share=0.5, min_layers=2, min_resolvable_slope_ratio=0.25, **FLOOR)))


def test_c6_needs_log_z_to_grow_with_the_mask_and_not_without():
    passed = _c6(no_mask_slope=0.0)
    assert passed["outcome"] == "PASS" and not any(c["passed"] for c in passed["controls"].values())
    failed = _c6(no_mask_slope=1.0)  # the no-mask run grows the same: the control passes, the claim fails
    assert failed["outcome"] == "FAIL" and failed["controls"]["m without the mask"]["passed"]
    # The probe itself can fail: log Z growing at under 0.25 x the simulation's slope, within a noise that
    # could see a head at the bound (2 floors <= 0.25 x 0.9).
    assert _c6(no_mask_slope=0.0, probe_slope=0.2)["outcome"] == "FAIL"
    # The simulation is checked too: its no-mask control must fail, and its own log Z must grow.
    growing_without_mask = _c6(no_mask_slope=0.0, sim_no_mask_slope=0.9)
    assert growing_without_mask["outcome"] == "FAIL"
    assert growing_without_mask["controls"]["simulation without the mask"]["passed"]
    with np.errstate(invalid="ignore", divide="ignore"):  # the heads' slopes over the simulation's zero
        assert _c6(no_mask_slope=0.0, sim_slope=0.0)["outcome"] == "FAIL"


def test_c6_reads_log_z_without_the_query_offset():
    # All of log Z's growth in a(i), with the mask and without it: the raw slopes (recorded) would carry it,
    # the part the softmax sees does not, so the probe fails while its control fails too.
    offset_only = _c6(no_mask_slope=0.0, probe_slope=0.0, offset_slope=1.0)
    assert offset_only["outcome"] == "FAIL"
    layer = offset_only["measured"]["models"]["m"]["probe"]["layers"]["2"]
    assert layer["heads_carrying"] == 0 and layer["raw_slopes"] == pytest.approx([1.0] * 4)
    # A query offset that grows on top of the mask's part changes nothing.
    assert _c6(no_mask_slope=0.0, offset_slope=5.0)["outcome"] == "PASS"


def test_c6_is_undecided_where_its_floors_could_hide_a_head_at_the_bound():
    # Floors this large hide a head at 0.25 x b_sim: the probe's FAIL is no answer, with the sequences that
    # would resolve every unresolved head.
    noisy = _c6(no_mask_slope=0.0, probe_noise=5.0)
    assert noisy["outcome"] == "UNDECIDED" and not noisy["passed"]
    power = noisy["measured"]["models"]["m"]["probe"]["preconditions"]["power"]
    assert not power["passed"] and power["sequences_to_resolve"] > 16
    assert f"{power['sequences_to_resolve']:,} sequences" in noisy["undecided"]["would_decide"]
    # A noisy control is undecided as well, unless the probe already fails the model.
    assert _c6(no_mask_slope=0.0, no_mask_noise=5.0)["outcome"] == "UNDECIDED"
    assert _c6(no_mask_slope=0.0, probe_slope=0.2, no_mask_noise=5.0)["outcome"] == "FAIL"
    # A control decided to pass fails the model whatever the probe's power.
    assert _c6(no_mask_slope=1.0, probe_noise=5.0)["outcome"] == "FAIL"


def _metrics(rows):
    return {"layers": [{"layer": k, **row} for k, row in enumerate(rows, start=1)]}


def _row(first=1.0, mask=0.5, halves=0.01, layer_type=None):
    row = {"first_key_early": first, "first_key_early_halves": [first + halves, first - halves],
           "mask_early": mask, "mask_early_halves": [mask + halves, mask - halves]}
    return row | ({"layer_type": layer_type} if layer_type else {})


def _paths(share: float = 1.0, spread: float = 0.0, seed: int = 0, others: float = 1.0) -> dict:
    """A score file's value paths: key 0's signal (a ramp over the early queries, in a fixed direction, plus a
    pattern of its own) scaled by ``share``, its halves by ``share`` +- ``spread``; the other keys carry the same
    signal scaled by ``others``."""
    rng = np.random.default_rng(seed)
    base = np.linspace(0, 1, 26)[None, :, None] * np.ones((4, 26, 6)) + 0.1 * np.random.default_rng(99).normal(size=(4, 26, 6))
    other = others * base + 0.01 * rng.normal(size=base.shape)
    arrays = {"layers": np.arange(1, 5), "key0_path": share * base, "attention_path": share * base + other}
    for half, sign in (("_half_a", 1), ("_half_b", -1)):
        arrays[f"key0_path{half}"] = (share + sign * spread) * base
        arrays[f"attention_path{half}"] = arrays[f"key0_path{half}"] + other
    return arrays | _two_groups({name: (arrays[f"{name}_half_a"], arrays[f"{name}_half_b"])
                                 for name in ("key0_path", "attention_path")})


def _c7(shares: dict, decided_by="m", spread: float = 0.02, sequences: int = 16, others: float = 1.0):
    runs = {model: {"original": f"{model}/orig", **{name: f"{model}.{name}/orig" for name in shares}}
            for model in ("m", "x")}
    files = {f"{model}/orig": _paths() for model in ("m", "x")}
    files |= {f"{model}.{name}/orig": _paths(share if model == "m" else 1.0, spread if model == "m" else 0.0,
                                             others=others if model == "m" else 1.0)
              for name, share in shares.items() for model in ("m", "x")}
    metrics = {run: _metrics([_row(first=2.0)] * 4) for run in files}
    return claim_c7(_with_metadata(files, sequences=sequences), metrics, runs, {"m": {}, "x": {}},
                    dict(layers=[2, 3, 4], replacement="bos_mean", decided_by=decided_by,
                         control_replacements=["late_mean", "bos_identity"], recorded_replacements=[],
                         min_fraction_removed=0.2, floor_multiple=2.0, min_resolvable_fraction=0.2,
                         reading_fraction=0.4, **FLOOR))


def test_the_remaining_share_of_key_0s_signal_is_signed_and_has_its_floor_from_the_halves():
    original = claims_module.signals(_paths(), [2, 3, 4])

    def effect(share, spread=0.02):
        changed = claims_module.signals(_paths(share, spread), [2, 3, 4])
        return claims_module.replacement_effect(original, changed, 0.2, 2.0, 0.2, 16, **FLOOR)

    halved = effect(0.5)
    assert halved["ratio"] == pytest.approx(0.5) and halved["ratio_halves"] == pytest.approx([0.52, 0.48])
    assert halved["floor"] == pytest.approx(0.04) and halved["fraction_removed"] == pytest.approx(0.5)
    assert halved["removes"] and not halved["sign_flipped"] and halved["preconditions"]["power"]["passed"]
    assert np.allclose([layer["ratio_halves"] for layer in halved["ratio_by_layer"]], [[0.52, 0.48]] * 3)
    reversed_ = effect(-0.5)  # turned around: more than all of it removed
    assert reversed_["sign_flipped"] and reversed_["removes"] and reversed_["fraction_removed"] == pytest.approx(1.5)
    assert not effect(0.9)["removes"]  # 10 % removed: less than the criterion asks
    assert not effect(0.7, spread=0.1)["removes"]  # 30 % removed, but within 2 floors (0.4)
    unpowered = effect(0.7, spread=0.1)["preconditions"]["power"]
    assert not unpowered["passed"] and unpowered["sequences_to_resolve"] == 64  # 16 x (0.4 / 0.2)^2
    # A signal that is only a constant over the early queries carries no position: nothing to keep.
    flat = claims_module.key0_signal({"layers": np.arange(1, 3), "key0_path": np.ones((2, 26, 3))}, [1, 2])
    assert np.allclose(flat, 0)


def test_c7_is_decided_by_its_model_and_its_controls_must_fail():
    passing = _c7({"bos_mean": 0.5, "late_mean": 0.95, "bos_identity": 1.0})
    assert passing["passed"] and passing["preconditions"]["power"]["passed"]
    assert passing["measured"]["models"]["m"]["outcome"] == "PASS"
    assert passing["measured"]["models"]["m"]["replacements"]["bos_mean"]["first_key_ratio"] == pytest.approx(1.0)
    assert not _c7({"bos_mean": 0.5, "late_mean": 0.95, "bos_identity": 1.0}, decided_by="x")["passed"]  # x keeps it all
    assert not _c7({"bos_mean": 0.9, "late_mean": 0.95, "bos_identity": 1.0})["passed"]   # too little removed
    failed = _c7({"bos_mean": 0.5, "late_mean": 0.5, "bos_identity": 1.0})               # the later swap does the same
    assert not failed["passed"] and failed["controls"]["late_mean"]["passed"]
    identity = _c7({"bos_mean": 1.0, "late_mean": 1.0, "bos_identity": 1.0}, spread=0.0)  # nothing changes: a control
    assert not identity["passed"] and not identity["controls"]["bos_identity"]["passed"]
    # The control that reaches position 0: the replacement cuts what the other keys carry as much, a disruption of
    # the whole pass rather than of key 0's part; the control passes and the claim fails.
    everywhere = _c7({"bos_mean": 0.5, "late_mean": 0.95, "bos_identity": 1.0}, others=0.5)
    assert not everywhere["passed"] and everywhere["controls"]["bos_mean, the other keys' signal"]["passed"]
    assert not passing["controls"]["bos_mean, the other keys' signal"]["passed"]
    # Cut too, but far less than key 0's signal: key 0's part stands out, and the control fails.
    less = _c7({"bos_mean": 0.5, "late_mean": 0.95, "bos_identity": 1.0}, others=0.75)
    assert less["measured"]["models"]["m"]["other_keys"]["removes"] and less["passed"]


def test_c7_is_undecided_when_its_floors_could_hide_the_smallest_removal():
    from behind_rope.claims.outcome import settle

    noisy = settle(_c7({"bos_mean": 0.9, "late_mean": 0.95, "bos_identity": 1.0}, spread=0.1))
    assert noisy["outcome"] == "UNDECIDED" and noisy["undecided"]["preconditions_unmet"] == ["power"]
    assert "about 64 sequences" in noisy["undecided"]["would_decide"]
    assert settle(_c7({"bos_mean": 0.9, "late_mean": 0.95, "bos_identity": 1.0}))["outcome"] == "FAIL"


def test_a_band_of_seeded_replacements_keeps_its_fractions_and_counts_its_reversals():
    bands = _c7({"bos_mean": 0.5, "bos_random0": 0.25, "bos_random1": -0.5, "bos_random2": 0.5,
                 "late_mean": 0.95, "bos_identity": 1.0})["measured"]["models"]["m"]["bands"]
    assert bands["bos_random"]["members"] == ["bos_random0", "bos_random1", "bos_random2"]
    assert bands["bos_random"]["ratio_band"] == pytest.approx([-0.5, 0.5]) and bands["bos_random"]["sign_flips"] == 1
    assert bands["bos_random"]["fraction_removed_band"] == pytest.approx([0.5, 1.5])
    assert bands["bos_mean"]["fraction_removed_band"] == pytest.approx([0.5, 0.5])


def _c8a(share: float, spread: float = 0.02, others: float = 1.0, sequences: int = 16) -> dict:
    """C8a on one model scaled by one NTK factor that keeps ``share`` of key 0's signal and ``others`` of the other
    keys' (C7's fixtures), with the old components recorded from metrics that do not change."""
    from behind_rope.claims.outcome import settle

    files = {"m/first": _paths(), "m.ntk2/first": _paths(share, spread, others=others)}
    metrics = {run: _metrics([_row(first=2.0)] * 4) for run in ("m/first", "m.ntk2/first", "s/ref", "s/ntk2")}
    return settle(claim_c8a(_with_metadata(files, sequences=sequences), metrics,
                            {"m": {"1": "m/first", "2": "m.ntk2/first"}}, {"1": "s/ref", "2": "s/ntk2"}, layers=[2, 3, 4],
                            floor_multiple=2.0, min_resolvable_fall=0.2, **FLOOR))


def test_c8a_needs_ntk_to_cut_key_0s_signal_beyond_noise_and_not_the_other_keys():
    passed = _c8a(share=0.5)
    assert passed["outcome"] == "PASS" and passed["measured"]["models"]["m"]["factors"]["2"]["key0"]["value"] == pytest.approx(0.5)
    assert not passed["controls"]["m: NTK read on the other keys' signal"]["passed"]
    assert passed["measured"]["min_fall"] == 0.2  # the smallest cut the figure draws
    # The control that reaches what NTK changes: every key's signal cut alike; the control passes, C8a fails.
    everywhere = _c8a(share=0.5, others=0.5)
    assert everywhere["outcome"] == "FAIL" and everywhere["controls"]["m: NTK read on the other keys' signal"]["passed"]
    assert _c8a(share=0.5, others=0.75)["outcome"] == "PASS"  # the other keys cut, but less than key 0's signal
    assert _c8a(share=0.9)["outcome"] == "FAIL"  # a tenth removed: less than a fifth, decided (2 floors 0.08 <= 0.2)
    # Floors that could hide a cut of a fifth (2 floors = 0.4): UNDECIDED, with the sequences (16 x (0.4 / 0.2)^2).
    undecided = _c8a(share=0.9, spread=0.1)
    power = undecided["measured"]["models"]["m"]["factors"]["2"]["preconditions"]["power"]
    assert undecided["outcome"] == "UNDECIDED" and not power["passed"] and power["sequences_to_resolve"] == 64
    assert "64 sequences" in undecided["undecided"]["would_decide"]
    # The old measure, |R|, is recorded beside, deciding nothing.
    assert "simulation" in passed["measured"]["recorded_score_components"]


def _window_run(slopes, types, window=None, noise=0.01):
    arrays = _per_head(slopes, seq_len=40, noise=noise)
    return arrays | {"metadata": np.array(json.dumps({"layer_types": types, "sliding_window": window, "sequences": 8}))}


def test_c8b_needs_a_rise_with_depth_where_the_window_binds_and_none_without_a_window():
    sliding = _window_run([0.1, 0.2, 0.3, 0.4, 0.5, 1.0], ["sliding_attention"] * 5 + ["full_attention"], window=16)
    flat = _window_run([0.3, 0.1, 0.4, 0.2, 0.3, 0.1], ["full_attention"] * 6)
    runs = {"g/long": sliding, "s/long": flat}

    from behind_rope.claims.outcome import settle

    def decide(min_query, control="s/long"):
        return settle(claim_c8b(runs, {"sliding": "g/long", "no_window": control}, {},
                                dict(min_query=min_query, min_depth_correlation=0.5, floor_multiple=2.0,
                                     min_layer_share=0.5, min_resolvable_slope=0.25, **FLOOR)))

    assert decide(16)["passed"]
    assert decide(16)["measured"]["sliding"]["floor_multiple"] == 2.0  # the margin the figure's band draws
    # Recorded beside the check: the sliding-window layers against the global one, at the same queries.
    by_type = decide(16)["measured"]["sliding"]["by_type"]
    assert by_type["sliding_attention"]["layers"] == [1, 2, 3, 4, 5] and by_type["full_attention"]["layers"] == [6]
    assert by_type["full_attention"]["mean_value"] > by_type["sliding_attention"]["mean_value"]
    assert not decide(8)["passed"]  # queries inside the window: it does not bind, so nothing is tested
    runs["s2/long"] = _window_run([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], ["full_attention"] * 6)
    assert not decide(16, control="s2/long")["passed"]  # the model without a window rises too: the control passes
    # A rise with depth that stays within the split-half noise in most sliding layers is no rise.
    runs["g/long"] = _window_run([0.1, 0.2, 0.3, 0.4, 0.5, 1.0], ["sliding_attention"] * 5 + ["full_attention"], window=16,
                                 noise=3.0)
    noisy = decide(16)
    assert noisy["measured"]["sliding"]["depth_correlation"] >= 0.5 and not noisy["passed"]
    # ... and where those floors could hide a slope of 0.25, the data cannot say: UNDECIDED, with the sequences
    # at which every sliding layer would be resolved.
    power = noisy["measured"]["sliding"]["preconditions"]["power"]
    assert noisy["outcome"] == "UNDECIDED" and not power["passed"] and power["sequences_to_resolve"] > 8
    assert "sequences of the long inputs" in noisy["undecided"]["would_decide"]
    # Floors small enough to see a slope of 0.25, and slopes below 2 of them: a decided FAIL.
    runs["g/long"] = _window_run([0.01, 0.02, 0.03, 0.04, 0.05, 1.0], ["sliding_attention"] * 5 + ["full_attention"],
                                 window=16, noise=0.05)
    small = decide(16)
    assert small["measured"]["sliding"]["preconditions"]["power"]["passed"] and small["outcome"] == "FAIL"
    assert decide(8)["outcome"] == "FAIL"  # a window that does not bind fails whatever the floors


def _patching(position0, middle, half_b=None, same_first_gap=0.0, different_first_gap=0.3, sink=0.9, sink_layers=(1, 2, 3, 4),
              other=0.0):
    """A patching record of layers 2-4 whose head 0 is a sink head (mean attention ``sink`` to key 0) in ``sink_layers``;
    head 1, no sink head, changes by ``other`` under the position-0 patch."""
    def patch(value, position, half_b=None, other=0.0):
        halves = [[value, other], [value if half_b is None else half_b, other]]
        return {"position": position, "layers": {str(layer): {"head_output_change": [value, other],
                                                              "head_output_change_halves": halves,
                                                              # two groups, the halves: norms of 1
                                                              "change_squares_by_group": np.square(halves).tolist(),
                                                              "norm_squares_by_group": np.ones((2, 2)).tolist(),
                                                              "log_z_change": [0.1, 0.0]}
                                                 for layer in (2, 3, 4)}}
    attention = {str(layer): [sink if layer in sink_layers else 0.1, 0.1] for layer in (1, 2, 3, 4)}
    return {"patches": {"position0": patch(position0, 0, half_b, other), "middle": patch(middle, 8)}, "layers": [2, 3, 4],
            "sink_attention": {"from_query": 16, "all": attention, "half_a": attention},
            "queries_from": 9, "closed_system": {"same_first_token": [same_first_gap],
                                                  "different_first_tokens": [0.0, different_first_gap],
                                                  "first_token": "<bos>"}}


C9_RULE = dict(sink_from_query=16, sink_min_attention=0.5, min_relative_change=0.1, floor_multiple=2.0, min_layers=2,
               min_layer_share=0.5, max_closed_system_gap=1e-5, **FLOOR)


def test_c9_needs_the_sink_heads_to_read_position_0_and_not_the_middle():
    def c9(**patching):
        return claim_c9({"m": _patching(**patching)}, {"m": "m/first"}, C9_RULE)

    passed = c9(position0=0.5, middle=0.01)
    assert passed["passed"] and passed["sink_head_counts"]["m"] == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert not c9(position0=0.5, middle=0.5)["passed"]  # the middle too
    assert not c9(position0=0.05, middle=0.01)["passed"]  # too small
    # The floor is sampling noise, the difference of the halves: two halves far apart are no effect.
    noisy = c9(position0=0.5, middle=0.01, half_b=0.2)
    assert not noisy["passed"] and noisy["measured"]["models"]["m"]["position0"]["layers"]["2"]["floor"] == pytest.approx(0.3)
    assert passed["measured"]["models"]["m"]["position0"]["layers"]["2"]["floor"] == 0.0
    # Position 0 is a closed system only if the same first token gives the same state, and another one another state.
    for gaps in ({"same_first_gap": 0.01}, {"different_first_gap": 0.0}):
        assert not c9(position0=0.5, middle=0.01, **gaps)["passed"], gaps
    assert passed["controls"]["m: middle position patched"] == {"passed": False, "testable": True}
    # The control that reaches position 0: the same patch changes the other heads as much, so the sink heads are
    # no readers of position 0 in particular; the control passes and the claim fails.
    everywhere = c9(position0=0.5, middle=0.01, other=0.5)
    assert not everywhere["passed"] and everywhere["controls"]["m: the other heads, position 0 patched"]["passed"]
    assert not passed["controls"]["m: the other heads, position 0 patched"]["passed"]
    # The other heads change too, but far less than the sink heads: those stand out, and the control fails.
    less = c9(position0=0.5, middle=0.01, other=0.2)
    assert less["passed"] and less["measured"]["models"]["m"]["other_heads"]["layers"]["2"]["supports"]
    # Sink heads in 2 of the 3 patched layers, both read: it passes; in 1, it cannot reach 2 layers.
    assert c9(position0=0.5, middle=0.01, sink_layers=(3, 4))["passed"]
    one = c9(position0=0.5, middle=0.01, sink_layers=(4,))
    assert not one["passed"] and one["measured"]["models"]["m"]["position0"]["layers_with_sink_heads"] == 1
    # Recorded, deciding nothing: the heads chosen on half A, the patch measured on half B.
    held_out = passed["measured"]["models"]["m"]["held_out"]
    assert held_out["rule_met"] and held_out["layers"]["2"]["sink_heads"] == [0]
    assert passed["measured"]["models"]["m"]["position0"]["layers"]["2"]["effect_halves"] == [0.5, 0.5]
    weak_on_b = c9(position0=0.5, middle=0.01, half_b=0.05)
    assert not weak_on_b["measured"]["models"]["m"]["held_out"]["rule_met"]
    assert weak_on_b["measured"]["models"]["m"]["held_out"]["layers"]["3"]["effect"] == 0.05
    without = c9(position0=0.5, middle=0.01, sink=0.1)  # no sink heads: nothing reads position 0
    assert not without["passed"]
    # The control fails too, but it had nothing to change: the record says it tested nothing.
    assert without["controls"]["m: middle position patched"] == {"passed": False, "testable": False}
    from behind_rope.claims.summary import summary_lines

    printed = summary_lines({"C9": without | {"criterion_commit": "abc"}})
    assert printed[1] == "    control m: middle position patched: FAIL, as it must, but it had nothing to test here"
