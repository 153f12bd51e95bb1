import numpy as np
import pytest

from behind_rope.claims import claim_c1, claim_c2, claim_c3, claim_c4


def _metrics(**layer_values):
    return {"layers": [{"layer": k, "locality": 1.0, "split_half_reliability": 0.99, "start_deficit": -0.1,
                        "nonrelative_index": 0.5, "relative_share": 0.5, "query_offset_share": 0.3,
                        "visible_share": 0.2, "sink": 0.0, "start_deficit_visible": -0.1, **layer_values}
                       for k in (1, 2, 3, 4)]}


DERIVATION = {"checks": [{"name": "x", "passed": True}], "passed": True, "figure1": {"layer2_scores": []}}
MC = [{"dim": 64, "alpha": 0.0, "samples": 10_000, "max_abs_error": 0.01}]


def test_c1_passes_only_with_a_good_derivation_and_enough_close_samples():
    assert claim_c1(DERIVATION, MC, dim=64, min_samples=10_000, tolerance=0.02)["passed"]
    assert not claim_c1(DERIVATION, MC, dim=64, min_samples=10_000, tolerance=0.005)["passed"]
    assert not claim_c1(DERIVATION, MC, dim=64, min_samples=20_000, tolerance=0.02)["passed"]
    assert not claim_c1({**DERIVATION, "passed": False}, MC, dim=64, min_samples=10_000, tolerance=0.02)["passed"]
    assert not claim_c1(DERIVATION, MC, dim=128, min_samples=10_000, tolerance=0.02)["passed"]


def test_c2_fails_when_a_run_lacks_locality_or_a_control_shows_it():
    good, flat = _metrics(), _metrics(locality=0.5)
    assert claim_c2({"run": good, "control": flat}, ["run"], ["control"], 2, 0.9)["passed"]
    assert not claim_c2({"run": flat, "control": flat}, ["run"], ["control"], 2, 0.9)["passed"]
    assert not claim_c2({"run": good, "control": good}, ["run"], ["control"], 2, 0.9)["passed"]


def test_c4_needs_reliable_structure_and_a_negative_start_deficit():
    good, noisy, raised = _metrics(), _metrics(split_half_reliability=0.1), _metrics(start_deficit=0.02)
    assert claim_c4({"run": good, "control": noisy}, ["run"], ["control"], 3, 0.9)["passed"]
    assert not claim_c4({"run": raised, "control": noisy}, ["run"], ["control"], 3, 0.9)["passed"]
    assert not claim_c4({"run": good, "control": good}, ["run"], ["control"], 3, 0.9)["passed"]


def _twin(locality=1.0, key_slope=0.02):
    return {"layers": [{"layer": k, "locality": locality if k > 1 else 0.5, "key_slope": key_slope,
                        "split_half_reliability": 0.5, "start_deficit": -0.05, "nonrelative_index": 0.8} for k in (1, 2, 3, 4)]}


RUNS = {"runs": ["nope_text_causal"], "mask_probe": ["nope_random_causal"], "mask_probe_control": ["nope_random_noncausal"],
        "untrained": ["untrained_text_causal"], "comparisons": ["nope_text_noncausal"], "rope_twin": []}
C3 = dict(twin="nope", untrained="untrained", rope_twin="rope", locality_layers=[2, 3], min_locality=0.9,
          amplification_layer=2, min_amplification=1.0, simulation_variants=["sim_a", "sim_b"])


def _c3(twin_metrics=None, training=None):
    metrics = {"nope_text_causal": _twin(), "nope_text_noncausal": _twin(0.9, 0.003), "nope_random_causal": _twin(),
               "nope_random_noncausal": _twin(0.5, 0.0), "untrained_text_causal": _twin(0.95, 0.0001)}
    simulation = {"sim_a": _metrics(key_slope=0.002), "sim_b": _metrics(key_slope=0.009)}
    sanity = {name: {"sanity": {"passed": name != "untrained"}, "validation_loss": 5.0, "unigram_loss": 6.0}
              for name in ("nope", "rope", "untrained")}
    return claim_c3({**metrics, **(twin_metrics or {})}, simulation, {**sanity, **(training or {})}, RUNS, **C3)


def test_c3_passes_with_trained_locality_amplification_and_a_failing_untrained_twin():
    claim = _c3()
    assert claim["passed"], claim["measured"]["checks"]
    assert claim["measured"]["amplification"]["runs"]["nope_text_causal"]["amplification"] == 0.02 / 0.009
    assert "nope_text_noncausal" in claim["measured"]["locality"]["comparisons"]  # recorded, not decisive


def test_c3_fails_whenever_one_of_its_checks_fails():
    learned_nothing = {"sanity": {"passed": False}, "validation_loss": 6.1, "unigram_loss": 6.0}
    failing = {"no locality in layer 3": _c3({"nope_text_causal": _twin(locality=0.6)}),
               "weaker than the simulation": _c3({"nope_text_causal": _twin(key_slope=0.005)}),
               "no locality on i.i.d. tokens": _c3({"nope_random_causal": _twin(locality=0.5)}),
               "locality without the mask": _c3({"nope_random_noncausal": _twin()}),
               "untrained twin passes": _c3({"untrained_text_causal": _twin()}, {"untrained": {**learned_nothing,
                                                                                              "sanity": {"passed": True}}}),
               "a twin learned nothing": _c3(training={"rope": learned_nothing})}
    assert [reason for reason, claim in failing.items() if claim["passed"]] == []


def _llm_run(reliabilities, layer_types=None, deficit=-0.1):
    layers = []
    for layer, value in enumerate(reliabilities, start=1):
        row = {"layer": layer, "block_reliability": value, "split_half_reliability": value / 2,
               "nonrelative_index": 0.1, "start_deficit": 0.3 if layer > 1 else float("nan"),
               "relative_share": 0.8, "query_offset_share": 0.15, "visible_share": 0.05, "paper_nonrelative_share": 0.2,
               "sink": 2.0, "key_profile_share": 0.3, "drawn_reliability": value,
               "start_deficit_paper": 0.2, "start_deficit_paper_halves": [0.2, 0.2],
               "start_deficit_visible": deficit, "start_deficit_visible_halves": [deficit, deficit]}
        if layer_types:
            row["layer_type"] = layer_types[layer - 1]
        layers.append(row)
    metadata = {"sequences": 16, "seq_len": 1024, "dtype": "float32", "device": "cpu", "token_set": {"sampling": "documents"}}
    return {"metadata": metadata, "layers": layers}


def _c5(text, iid, no_mask=(0.0, 0.0, 0.0, 0.0), layer_types=None, figure5=None):
    from behind_rope.llm_claims import claims_c5

    metrics = {"m/text_causal": _llm_run(text, layer_types), "m/random_causal": _llm_run(iid),
               "m/random_noncausal": _llm_run(no_mask), "m/fig5_causal": figure5 or _llm_run(text)}
    runs = {"m": {"text_causal": "m/text_causal", "random_causal": "m/random_causal",
                  "random_noncausal": "m/random_noncausal", "figure5": "m/fig5_causal"}}
    return claims_c5(metrics, runs, layers=[1, 2, 3, 4], min_reliability=0.5, min_layers=2)


def test_c5a_passes_with_structure_after_layer_1_and_noise_in_layer_1_on_iid_tokens():
    claim = _c5(text=[0.9, 0.8, 0.9, 0.9], iid=[0.05, 0.7, 0.9, 0.95])["C5a"]
    assert claim["passed"] and _c5(text=[0.9, 0.8, 0.1, 0.9], iid=[0.05, 0.7, 0.3, 0.95])["C5a"]["passed"]
    model = claim["measured"]["models"]["m"]
    assert model["text"]["2"]["start_deficit_sign"] == "positive"
    assert model["text"]["1"]["start_deficit_sign"] == "undefined"
    assert model["decomposition"]["iid_tokens_no_mask"]["3"]["visible_share"] == 0.05


@pytest.mark.parametrize(("text", "iid", "no_mask"), [
    ([0.9, 0.3, 0.2, 0.9], [0.05, 0.7, 0.9, 0.95], [0.0] * 4),   # text: structure in only one layer after layer 1
    ([0.9, 0.8, 0.9, 0.9], [0.8, 0.7, 0.9, 0.95], [0.0] * 4),    # i.i.d. tokens: layer 1 already structured
    ([0.9, 0.8, 0.9, 0.9], [0.05, 0.1, 0.2, 0.9], [0.0] * 4),    # i.i.d. tokens: structure in only one layer after layer 1
    ([0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95], [0.05, 0.6, 0.7, 0.2]),  # no mask: the structure without the mask
])
def test_c5a_fails_when_any_of_its_checks_fails(text, iid, no_mask):
    assert not _c5(text, iid, no_mask)["C5a"]["passed"]


def test_c5b_needs_lower_start_keys_in_every_layer_where_c5a_holds():
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    claim = _c5(text, iid)["C5b"]["measured"]["models"]["m"]
    assert claim["passed"] and claim["layers_where_c5a_holds"] == [2, 3, 4]
    assert claim["start_keys_lower_paper_way"] == {"2": False, "3": False, "4": False}  # recorded, not decided
    # Start keys higher than mid-context keys (a synthetic run whose start keys score more): C5b fails.
    assert not _c5(text, iid, figure5=_llm_run(text, deficit=+0.1))["C5b"]["passed"]
    # One half disagrees: not a reliable direction.
    split = _llm_run(text)
    split["layers"][2]["start_deficit_visible_halves"] = [-0.1, 0.05]
    assert not _c5(text, iid, figure5=split)["C5b"]["passed"]
    # No layer where C5a holds: nothing to confirm, so C5b fails too.
    assert not _c5([0.9, 0.1, 0.1, 0.1], iid)["C5b"]["passed"]


def test_c5_compares_layer_types():
    types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]
    c5a = _c5([0.9, 0.8, 0.6, 0.9], [0.05, 0.7, 0.9, 0.95], layer_types=types)["C5a"]
    by_type = c5a["measured"]["models"]["m"]["by_layer_type"]
    assert by_type["full_attention"]["layers"] == [3] and by_type["full_attention"]["mean_block_reliability"] == 0.6
    assert by_type["sliding_attention"]["layers"] == [1, 2, 4]


def _score_file(start_shift, seed, structured=True, mask=True, layers=4, seq_len=80, noise=0.05):
    """A synthetic score file, what the `scores` step writes, without a model: a relative decay plus
    sampling noise in each half; from layer 2 on (if ``structured``) an absolute pattern, a sink at
    key 0, query offsets, and the keys 1..S/10 shifted by ``start_shift``."""
    import json

    rng = np.random.default_rng(seed)
    rows, cols = np.indices((seq_len, seq_len))
    visible = cols <= rows if mask else np.ones((seq_len, seq_len), bool)
    halves = []
    for layer in range(layers):
        true = np.exp(-np.abs(rows - cols) / 10)
        if structured and layer > 0:
            true = true + 0.3 * np.sin(cols / 7.0) + 3.0 * (cols == 0) + 0.01 * rows
            true = true + start_shift * ((cols >= 1) & (cols <= seq_len // 10))
        halves.append([np.where(visible, true + noise * rng.standard_normal(true.shape), np.nan) for _ in range(2)])
    half_a, half_b = (np.stack([pair[k] for pair in halves]) for k in (0, 1))
    metadata = {"model": "m", "sequences": 8, "seq_len": seq_len, "dtype": "float32", "device": "cpu",
                "layer_types": ["full_attention"] * layers, "token_set": {"sampling": "documents"}}
    return {"mean_scores": (half_a + half_b) / 2, "half_a": half_a, "half_b": half_b,
            "metadata": np.array(json.dumps(metadata))}


@pytest.mark.parametrize(("start_shift", "no_mask_structured", "c5a", "c5b"), [
    (-0.5, False, True, True),    # start keys lower, the no-mask run unstructured: both parts pass
    (+0.5, False, True, False),   # start keys higher: the direction fails
    (-0.5, True, False, True),    # the same structure without the mask: C5a fails (C5b judges its own run)
])
def test_c5_from_synthetic_score_matrices(start_shift, no_mask_structured, c5a, c5b):
    from behind_rope.llm_claims import claims_c5
    from behind_rope.metrics import score_file_metrics

    files = {"m/text_causal": _score_file(start_shift, seed=1), "m/random_causal": _score_file(start_shift, seed=2),
             "m/random_noncausal": _score_file(start_shift, seed=3, structured=no_mask_structured, mask=False),
             "m/fig5_causal": _score_file(start_shift, seed=4)}
    metrics = {run: score_file_metrics(data) for run, data in files.items()}
    runs = {"m": {"text_causal": "m/text_causal", "random_causal": "m/random_causal",
                  "random_noncausal": "m/random_noncausal", "figure5": "m/fig5_causal"}}
    result = claims_c5(metrics, runs, layers=[1, 2, 3, 4], min_reliability=0.5, min_layers=2)
    assert (result["C5a"]["passed"], result["C5b"]["passed"]) == (c5a, c5b), (
        result["C5a"]["measured"]["models"]["m"]["checks"], result["C5b"]["measured"]["models"]["m"]["figure5"])
