import pytest

from behind_rope.claims import claim_c1, claim_c2, claim_c3, claim_c4


def _metrics(**layer_values):
    return {"layers": [{"layer": k, "locality": 1.0, "split_half_reliability": 0.99, "start_deficit": -0.1,
                        "nonrelative_index": 0.5, **layer_values} for k in (1, 2, 3, 4)]}


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


def _llm_run(reliabilities, layer_types=None):
    layers = []
    for layer, value in enumerate(reliabilities, start=1):
        row = {"layer": layer, "block_reliability": value, "split_half_reliability": value / 2,
               "nonrelative_index": 0.1, "start_deficit": 0.3 if layer > 1 else float("nan")}
        if layer_types:
            row["layer_type"] = layer_types[layer - 1]
        layers.append(row)
    return {"metadata": {"sequences": 16, "seq_len": 1024, "dtype": "float32", "device": "cpu"}, "layers": layers}


def _c5(text, iid, no_mask=(0.0, 0.0, 0.0, 0.0), layer_types=None):
    from behind_rope.claims import claim_c5

    metrics = {"m": _llm_run(text, layer_types), "controls/m_random_causal": _llm_run(iid),
               "controls/m_random_noncausal": _llm_run(no_mask)}
    runs = {"m": {"text_causal": "m", "random_causal": "controls/m_random_causal",
                  "random_noncausal": "controls/m_random_noncausal"}}
    return claim_c5(metrics, runs, layers=[1, 2, 3, 4], min_reliability=0.5, min_layers=2)


def test_c5_passes_with_structure_after_layer_1_and_noise_in_layer_1_on_iid_tokens():
    claim = _c5(text=[0.9, 0.8, 0.9, 0.9], iid=[0.05, 0.7, 0.9, 0.95])
    assert claim["passed"] and _c5(text=[0.9, 0.8, 0.1, 0.9], iid=[0.05, 0.7, 0.3, 0.95])["passed"]
    model = claim["measured"]["models"]["m"]
    assert model["text"]["2"]["start_deficit_sign"] == "positive"
    assert model["text"]["1"]["start_deficit_sign"] == "undefined"


@pytest.mark.parametrize(("text", "iid"), [
    ([0.9, 0.3, 0.2, 0.9], [0.05, 0.7, 0.9, 0.95]),   # text: structure in only one layer after layer 1
    ([0.9, 0.8, 0.9, 0.9], [0.8, 0.7, 0.9, 0.95]),    # i.i.d. tokens: layer 1 already structured
    ([0.9, 0.8, 0.9, 0.9], [0.05, 0.1, 0.2, 0.9]),    # i.i.d. tokens: structure in only one layer after layer 1
])
def test_c5_fails_when_any_of_its_checks_fails(text, iid):
    assert not _c5(text, iid)["passed"]


def test_c5_compares_layer_types():
    types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"]
    by_type = _c5([0.9, 0.8, 0.6, 0.9], [0.05, 0.7, 0.9, 0.95], layer_types=types)["measured"]["models"]["m"]["by_layer_type"]
    assert by_type["full_attention"]["layers"] == [3] and by_type["full_attention"]["mean_block_reliability"] == 0.6
    assert by_type["sliding_attention"]["layers"] == [1, 2, 4]
