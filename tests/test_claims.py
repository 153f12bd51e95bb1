import math

import numpy as np
import pytest

from behind_rope.claims.c3 import claim_c3
from behind_rope.claims.decide import claim_c1, claim_c2, claim_c4
from behind_rope.claims.outcome import settle


def _metrics(replicate_noise=0.001, **layer_values):
    """A simulation's metrics; each layer's ten chunks scatter by +-``replicate_noise`` around its start deficit."""
    metrics = {"layers": [{"layer": k, "locality": 1.0, "split_half_reliability": 0.99, "start_deficit": -0.1,
                           "nonrelative_index": 0.5, "relative_share": 0.5, "query_offset_share": 0.3,
                           "visible_share": 0.2, "sink": 0.0, "start_deficit_visible": -0.1, **layer_values}
                          for k in (1, 2, 3, 4)]}
    for row in metrics["layers"]:
        _replicates(row, replicate_noise)
    return metrics


def _replicates(row, noise):
    row["start_deficit_replicates"] = [row["start_deficit"] + noise * (-1) ** chunk for chunk in range(10)]
    row["replicate_sizes"] = [2000] * 10


DERIVATION = {"checks": [{"name": "x", "passed": True}], "passed": True, "figure1": {"layer2_scores": []}}
MC = [{"dim": 64, "alpha": 0.0, "samples": 10_000, "max_abs_error": 0.01}]


def test_c1_passes_only_with_a_good_derivation_and_enough_close_samples():
    assert claim_c1(DERIVATION, MC, monte_carlo_dim=64, min_samples=10_000, tolerance=0.02)["passed"]
    assert not claim_c1(DERIVATION, MC, monte_carlo_dim=64, min_samples=10_000, tolerance=0.005)["passed"]
    assert not claim_c1(DERIVATION, MC, monte_carlo_dim=64, min_samples=20_000, tolerance=0.02)["passed"]
    assert not claim_c1({**DERIVATION, "passed": False}, MC, monte_carlo_dim=64, min_samples=10_000, tolerance=0.02)["passed"]
    assert not claim_c1(DERIVATION, MC, monte_carlo_dim=128, min_samples=10_000, tolerance=0.02)["passed"]


def test_c2_fails_when_a_run_lacks_locality_or_a_control_shows_it():
    good, flat = _metrics(), _metrics(locality=0.5)
    assert claim_c2({"run": good, "control": flat}, ["run"], ["control"], 2, 0.9)["passed"]
    assert not claim_c2({"run": flat, "control": flat}, ["run"], ["control"], 2, 0.9)["passed"]
    assert not claim_c2({"run": good, "control": good}, ["run"], ["control"], 2, 0.9)["passed"]


C4 = dict(from_layer=2, min_reliability=0.9, max_start_deficit=0.0, floor_splits=200, floor_quantile=0.95)


def test_c4_needs_reliable_structure_and_a_negative_start_deficit():
    good, noisy, raised = _metrics(), _metrics(split_half_reliability=0.1), _metrics(start_deficit=0.02)
    assert claim_c4({"run": good, "control": noisy}, ["run"], ["control"], **C4)["passed"]
    assert not claim_c4({"run": raised, "control": noisy}, ["run"], ["control"], **C4)["passed"]
    assert not claim_c4({"run": good, "control": good}, ["run"], ["control"], **C4)["passed"]


def test_c4_is_decided_from_layer_2_where_the_paper_shows_the_pattern():
    """A layer-2 start deficit of +0.0016 beyond its floor fails C4; from layer 3 on it would pass."""
    layer_2_raised = _metrics(replicate_noise=0.0002)
    layer_2_raised["layers"][1]["start_deficit"] = 0.0016
    _replicates(layer_2_raised["layers"][1], 0.0002)
    control = _metrics(split_half_reliability=0.1)
    claim = settle(claim_c4({"run": layer_2_raised, "control": control}, ["run"], ["control"], **C4))
    assert claim["outcome"] == "FAIL"
    assert claim_c4({"run": layer_2_raised, "control": control}, ["run"], ["control"], **C4 | {"from_layer": 3})["passed"]


def test_c4_is_undecided_where_a_deficit_lies_within_its_floor_and_says_what_b_would_resolve_it():
    # Layer 2's +0.0016 among chunks that scatter by 0.01: the data cannot tell its sign.
    run = _metrics()
    run["layers"][1]["start_deficit"] = 0.0016
    _replicates(run["layers"][1], 0.01)
    run["metadata"] = {"size": {"batch_size": 20_000}}
    control = _metrics(split_half_reliability=0.1)
    claim = settle(claim_c4({"run": run, "control": control}, ["run"], ["control"], **C4))
    precondition = claim["preconditions"]["deficits_resolved"]
    assert claim["outcome"] == "UNDECIDED" and precondition["unresolved"] == ["run layer 2"]
    floor = claim["measured"]["runs"]["run"]["layers"]["2"]["start_deficit_floor"]
    assert floor > 0.0016 and f"{math.ceil(20_000 * (floor / 0.0016) ** 2):,}" in precondition["would_decide"]
    # A resolved layer that fails decides it anyway, and so does a control that shows the effect.
    run["layers"][2]["split_half_reliability"] = 0.5
    assert settle(claim_c4({"run": run, "control": control}, ["run"], ["control"], **C4))["outcome"] == "FAIL"


def test_c4s_control_passes_where_the_effect_is_not_the_masks():
    # A constructed no-mask run with a reliable start deficit beyond its floor: the control shows the effect, so the
    # mask cannot be credited with it and C4 fails.
    control_with_the_effect = _metrics()
    claim = settle(claim_c4({"run": _metrics(), "control": control_with_the_effect}, ["run"], ["control"], **C4))
    assert claim["measured"]["controls"]["control"]["shows_effect"] and claim["outcome"] == "FAIL"


def _twin(locality=1.0, key_slope=0.02, layer_3=None, key_slope_noise=0.001, early_noise=None):
    """A twin's metrics; its 48 query rows' half differences alternate in sign with the spread ``key_slope_noise``
    (the first four rows ``early_noise`` when given).  The slope relative to each row's spread (``key_trend``, what
    the amplification reads) is given the same values."""
    differences = [key_slope_noise * (-1) ** row for row in range(48)]
    if early_noise is not None:
        differences[:4] = [early_noise * (-1) ** row for row in range(4)]
    return {"layers": [{"layer": k, "locality": (layer_3 if k == 3 and layer_3 is not None else locality) if k > 1 else 0.5,
                        "key_slope": key_slope, "key_slope_noise": key_slope_noise, "key_trend": key_slope,
                        "key_slope_half_differences": differences, "key_trend_half_differences": differences,
                        "split_half_reliability": 0.5,
                        "start_deficit": -0.05, "nonrelative_index": 0.8} for k in (1, 2, 3, 4)]}


SEEDS = ["nope", "nope_seed1", "nope_seed2", "nope_seed3", "nope_seed4"]
UNTRAINED = ["untrained", "untrained_seed1", "untrained_seed2", "untrained_seed3", "untrained_seed4"]
RUNS = {"seeds": {seed: {"probe": f"{seed}/random_causal", "probe_no_mask": f"{seed}/random_noncausal",
                         "text": f"{seed}/text_causal", "text_no_mask": f"{seed}/text_noncausal"} for seed in SEEDS},
        "untrained": {twin: {"probe": f"{twin}/random_causal", "text": f"{twin}/text_causal"} for twin in UNTRAINED},
        "rope_twin": {}}
PANELS = {letter: {"locality": {"at_least": 0.9}} for letter in "fhi"} | {"g": {"locality": {"at_most": 0.1}}}
C3 = dict(twin="nope", probe="random_causal", simulation_variants=["sim_a", "sim_b"], rope_twin="rope",
          no_mask_probe="random_noncausal", untrained="untrained", min_seeds=5, confidence=0.95, min_seeds_passing=4,
          min_gain_over_unigram=0.3, locality_layers=[2, 3], min_locality=0.9, amplification_layer=2,
          min_amplification=1.0, panels=PANELS, order_positions=[16, 32], order_sequences=1024, min_order_gap=0.05, order_confidence=0.95,
          max_loss_above_rope=0.1, min_power=0.8, row_noise_window=5, probe_sequences=1024)
USES_ORDER = {"mean_gap": 0.2, "standard_error": 0.01}


def _c3(metrics=None, training=None, panels=None, runs_of=RUNS, **criteria):
    """C3 on five seeds whose i.i.d. probe favours nearby keys at 0.02 per key (simulation: at most 0.009)."""
    runs = {}
    for seed in SEEDS:
        runs |= {f"{seed}/random_causal": _twin(), f"{seed}/random_noncausal": _twin(0.5, 0.0),
                 f"{seed}/text_causal": _twin(), f"{seed}/text_noncausal": _twin(0.9, 0.003)}
    runs |= {f"{twin}/{run}": _twin(0.95, 0.0001) for twin in UNTRAINED for run in ("random_causal", "text_causal")}
    simulation = {"sim_a": _metrics(key_trend=0.002), "sim_b": _metrics(key_trend=0.009)}
    losses = {name: {"validation_loss": 5.0, "unigram_loss": 6.0, "steps": 300, "seed": k % 5, "order_gap": USES_ORDER}
              for k, name in enumerate([*SEEDS, "rope"])}
    losses |= {name: {"validation_loss": 9.0, "unigram_loss": 6.0, "steps": 0} for name in UNTRAINED}
    panel_values = {seed: {letter: {"locality": 0.05 if letter == "g" else 0.95} for letter in "fghi"} for seed in SEEDS}
    return claim_c3({**runs, **(metrics or {})}, simulation, {**losses, **(training or {})}, panels or panel_values,
                    runs_of, {**C3, **criteria})


def test_c3_passes_over_seeds_with_failing_controls():
    claim = _c3()
    assert claim["passed"], claim["measured"]["checks"]
    measured = claim["measured"]
    assert measured["seeds"]["nope"]["probe"]["amplification"] == 0.02 / 0.009
    assert measured["probe"]["statistics"]["locality_layer_2"]["seeds_passing"] == 5
    assert not measured["controls"]["no_mask_probe"]["passed"] and not measured["controls"]["untrained"]["passed"]
    assert all(panel["passed"] for panel in measured["panels"].values())
    assert measured["seeds"]["nope"]["text_no_mask"]["locality_layer_2"] == 0.9  # recorded, not decisive


def _seeds(**per_seed):
    """Metrics that give each seed of SEEDS the probe of ``per_seed[seed]`` (others as in _c3)."""
    return {f"{seed}/random_causal": twin for seed, twin in per_seed.items()}


def test_c3_fails_whenever_one_of_its_checks_fails():
    learned_nothing = {"validation_loss": 5.9, "unigram_loss": 6.0, "steps": 300, "order_gap": USES_ORDER}
    weak = _twin(key_slope=0.005)
    failing = {
        "no locality in layer 3 on any seed": _c3(_seeds(**{seed: _twin(layer_3=0.6) for seed in SEEDS})),
        "weaker than the simulation on two seeds": _c3(_seeds(nope=weak, nope_seed1=weak)),
        "locality without the mask": _c3({f"{seed}/random_noncausal": _twin() for seed in SEEDS}),
        "a twin learned nothing": _c3(training={"rope": learned_nothing}),
        "fewer seeds than the rule needs": _c3(min_seeds=6),
    }
    assert [reason for reason, claim in failing.items() if claim["passed"]] == []


def test_one_outlying_seed_does_not_decide_c3_but_its_spread_can():
    assert _c3(_seeds(nope_seed4=_twin(locality=0.88)))["passed"]  # 4 of 5 seeds, interval still above 0.9
    far = _c3(_seeds(nope_seed4=_twin(locality=0.2)))  # 4 of 5 seeds, but the interval reaches down to it
    assert not far["passed"] and far["measured"]["probe"]["statistics"]["locality_layer_2"]["seeds_passing"] == 4


def test_the_untrained_control_can_fail_c3_on_its_own_statistics():
    """The untrained twin goes through the same rule: if its weights made nearby keys score as strongly as the
    trained twin's, C3 would fail, whatever its sanity check says."""
    strong_untrained = {f"{twin}/random_causal": _twin() for twin in UNTRAINED}
    claim = _c3(strong_untrained)
    assert claim["measured"]["controls"]["untrained"]["passed"]
    assert not claim["passed"] and not claim["measured"]["checks"]["untrained_twin_fails"]


def test_c3_records_the_locality_its_probe_could_show_at_the_bound_and_it_decides_nothing():
    """A probe whose queries' slopes carry noise far above the slope the amplification bound asks for (0.009 here)
    could not show a locality near 0.9 even with that slope in every query: recorded beside the verdict."""
    noisy = _c3(_seeds(**{seed: _twin(key_slope_noise=0.05) for seed in SEEDS}))
    power = noisy["measured"]["probe_power"]
    assert power["layer"] == 2 and power["bound_slope"] == pytest.approx(0.009)
    assert all(0.5 < share < 0.6 for share in power["locality_at_bound"].values())
    assert noisy["passed"]  # the record decides nothing
    quiet = _c3()["measured"]["probe_power"]["locality_at_bound"]
    assert all(share > 0.99 for share in quiet.values())


def test_c3_is_decided_only_when_its_preconditions_hold():
    decided = settle(_c3())
    assert decided["outcome"] == "PASS" and all(entry["passed"] for entry in decided["preconditions"].values())
    failing = settle(_c3({f"{seed}/random_causal": _twin(locality=0.5) for seed in SEEDS}))
    assert failing["outcome"] == "FAIL" and "undecided" not in failing


def _with_order(gap, standard_error=0.005, loss=5.0):
    return {"validation_loss": loss, "unigram_loss": 6.0, "steps": 300,
            "order_gap": {"mean_gap": gap, "standard_error": standard_error}}


@pytest.mark.parametrize("training, unmet", [
    ({"nope_seed2": _with_order(0.0)}, "a bag-of-words seed"),
    ({"nope_seed2": _with_order(0.06, standard_error=0.01)}, "a gap that its noise does not put above the bound"),
    ({"rope": _with_order(0.0)}, "a RoPE twin that does not use order: the recipe taught no twin order"),
    ({"nope": _with_order(0.2, loss=5.2)}, "a NoPE seed far behind the RoPE twin"),
])
def test_a_twin_that_is_not_competent_leaves_c3_undecided_whatever_its_statistics(training, unmet):
    for metrics in ({}, {f"{seed}/random_causal": _twin(locality=0.5) for seed in SEEDS}):  # would PASS, would FAIL
        claim = settle(_c3(metrics, training=training))
        assert claim["outcome"] == "UNDECIDED", unmet
        assert claim["undecided"]["preconditions_unmet"] == ["competence"]
        would = claim["undecided"]["would_decide"]
        assert "recipe" in would
        assert ("within 0.1 nats" in would) == (unmet == "a NoPE seed far behind the RoPE twin"), would
        assert ("uses word order" in would) == (unmet != "a NoPE seed far behind the RoPE twin"), would
        assert claim["preconditions"]["power"]["would_decide"] == "nothing: it is met"  # power is not what is missing


def test_a_probe_without_the_power_to_see_the_bound_leaves_c3_undecided_and_says_what_size_would():
    """The fixture's bound slope is 0.009 per key; a noise of 0.01 per row gives each row a positive share of 0.82,
    and 44 of 48 rows then pass with a probability far below 0.8."""
    claim = settle(_c3(_seeds(**{seed: _twin(key_slope_noise=0.01) for seed in SEEDS})))
    assert claim["outcome"] == "UNDECIDED" and claim["undecided"]["preconditions_unmet"] == ["power"]
    power = claim["measured"]["seeds"]["nope"]["power"]
    assert power["power"] < 0.2 and power["sequences_for_power"] > 1024
    assert f"{power['sequences_for_power']:,}" in claim["undecided"]["would_decide"]
    at_that_size = settle(_c3(_seeds(**{seed: _twin(key_slope_noise=0.01 * (1024 / power["sequences_for_power"]) ** 0.5)
                                        for seed in SEEDS})))
    assert at_that_size["preconditions"]["power"]["passed"]
    assert at_that_size["preconditions"]["competence"]["would_decide"] == "nothing: it is met"


def test_the_power_of_a_probe_of_64_sequences_is_too_low_for_the_bound_that_2048_resolve():
    """Score rows of a pattern with exactly the bound's key slope in every row, plus per-sequence noise: the power
    computed from the probe's halves falls short at 64 sequences and holds at 2,048."""
    from behind_rope.claims.power import locality_power, row_noises
    from behind_rope.maths.metrics import key_slope_half_differences

    rng, seq_len, slope, spread = np.random.default_rng(0), 50, 0.01, 1.5
    keys = np.arange(seq_len, dtype=float)

    def halves(sequences):
        noise = rng.normal(0, spread, (sequences, seq_len, seq_len))
        scores = slope * keys[None, None, :] + noise
        return scores[: sequences // 2].mean(0), scores[sequences // 2 :].mean(0)

    powers = {n: locality_power(slope, row_noises(key_slope_half_differences(*halves(n)), 5), 0.9) for n in (64, 2048)}
    assert powers[64] < 0.8 <= powers[2048], powers


def test_the_power_is_read_row_by_row_so_a_few_noisy_early_rows_cannot_speak_for_the_rest():
    """Four early rows with a hundred times the others' noise: they are coin flips, which the check's four spare
    rows (44 of 48 must be positive) absorb, so the probe has the power; pooled over the rows, their noise would
    have said it had none.  Were every row that noisy, it would not."""
    from behind_rope.claims.power import locality_power, row_noises

    early = settle(_c3(_seeds(**{seed: _twin(key_slope_noise=0.001, early_noise=0.1) for seed in SEEDS})))
    power = early["measured"]["seeds"]["nope"]["power"]
    assert early["preconditions"]["power"]["passed"] and power["power"] > 0.8
    assert power["largest_row_noise"] > 0.05 > 0.002 > power["median_row_noise"]
    pooled = (4 * 0.1**2 + 44 * 0.001**2) / 48
    assert locality_power(0.009, [pooled**0.5] * 48, 0.9) < 0.01
    assert not settle(_c3(_seeds(**{seed: _twin(key_slope_noise=0.1) for seed in SEEDS})))["preconditions"]["power"]["passed"]
    assert row_noises([3.0, -3.0, 3.0], 1) == [3.0, 3.0, 3.0] and row_noises([0.0, 0.0, 3.0], 3) == pytest.approx([0.0, 3.0 / 3**0.5, 3.0 / 2**0.5])


def test_the_row_by_row_pass_probability_is_the_binomial_tail_when_every_row_is_alike():
    import math

    from behind_rope.claims.power import pass_probability

    binomial = sum(math.comb(48, k) * 0.95**k * 0.05 ** (48 - k) for k in range(44, 49))
    assert pass_probability([0.95] * 48, 0.9) == pytest.approx(binomial)
    assert pass_probability([1.0] * 44 + [0.0] * 4, 0.9) == pytest.approx(1.0)
    assert pass_probability([1.0] * 43 + [0.0] * 5, 0.9) == pytest.approx(0.0)


def test_figure_3_panels_are_recorded_with_a_verdict_each_and_do_not_decide_c3():
    inverted_g = {seed: {letter: {"locality": 0.95} for letter in "fghi"} for seed in SEEDS}
    claim = _c3(panels=inverted_g)
    assert claim["passed"] and not claim["measured"]["panels"]["g"]["passed"] and claim["measured"]["panels"]["f"]["passed"]


def _llm_run(reliabilities, layer_types=None, deficit=-0.1):
    layers = []
    for layer, value in enumerate(reliabilities, start=1):
        row = {"layer": layer, "block_reliability": value, "split_half_reliability": value / 2,
               "nonrelative_index": 0.1, "start_deficit": 0.3 if layer > 1 else float("nan"),
               "relative_share": 0.8, "query_offset_share": 0.15, "visible_share": 0.05, "paper_nonrelative_share": 0.2,
               "sink": 2.0, "key_profile_share": 0.3, "drawn_reliability": value,
               "start_deficit_paper": 0.2, "start_deficit_paper_halves": [0.2, 0.2],
               "start_deficit_visible": deficit, "start_deficit_visible_halves": [deficit, deficit],
               "spread_ratio": 0.1, "noise_spread_ratio": 0.01, "raw_spread": 20.0, "pattern_spread": 2.0,
               "first_keys_contrast": 0.5, "first_keys_contrast_halves": [0.5, 0.5], "first_keys_noise": 0.05,
               "sink_contrast": 3.0, "sink_contrast_halves": [3.0, 3.0], "sink_noise": 0.1}
        if layer_types:
            row["layer_type"] = layer_types[layer - 1]
        layers.append(row)
    metadata = {"sequences": 16, "seq_len": 1024, "dtype": "float32", "device": "cpu", "token_set": {"sampling": "documents"}}
    return {"metadata": metadata, "layers": layers, "noise_floor": {"splits": 500, "quantile": 0.5, "groups": 16}}


C5 = {"C5a": dict(layers=[1, 2, 3, 4], min_reliability=0.5, min_layers=2),
      "C5b": dict(layers=[2, 3, 4], min_layers=2, min_spread_ratio=0.05, min_over_noise=2.0),
      "C5c": dict(layers=[2, 3, 4], min_layers=2, min_over_noise=3.0),
      "C5d": dict(layers=[2, 3, 4], below=0.0, figure5_min_reliability=0.8, figure5_min_layers=2)}
RUNS_C5 = {"m": {"text": "m/text_causal", "iid": "m/random_causal", "iid_no_mask": "m/random_noncausal",
                 "figure5": "m/fig5_causal", "text_no_mask": "m/text_noncausal"}}


def _quiet(run):
    """A run whose first keys do not stand apart from the noise."""
    for row in run["layers"]:
        row |= {"first_keys_contrast": 0.01, "first_keys_contrast_halves": [0.02, 0.0]}
    return run


def _c5_metrics(text, iid, no_mask=(0.0, 0.0, 0.0, 0.0), layer_types=None, figure5=None, model="m", text_run=None):
    return {f"{model}/text_causal": text_run or _llm_run(text, layer_types), f"{model}/random_causal": _llm_run(iid),
            f"{model}/random_noncausal": _quiet(_llm_run(no_mask)), f"{model}/fig5_causal": figure5 or _llm_run(text),
            f"{model}/text_noncausal": _quiet(_llm_run(no_mask))}


def _c5(text, iid, no_mask=(0.0, 0.0, 0.0, 0.0), layer_types=None, figure5=None, text_run=None):
    from behind_rope.claims.c5 import claims_c5

    return claims_c5(_c5_metrics(text, iid, no_mask, layer_types, figure5, text_run=text_run), RUNS_C5, C5)


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


def test_c5a_counts_a_layer_for_the_mask_only_where_the_same_layer_without_it_is_unstructured():
    # Layer 2 is structured with and without the mask (a query offset, say): its control passes, and it does not
    # count, leaving one layer of the mask's where two are needed.  One structured layer elsewhere without the mask
    # (layer 4 here) does not take away layers 2 and 3.
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.4, 0.95]
    model = _c5(text, iid, no_mask=[0.0, 0.98, 0.0, 0.0])["C5a"]["measured"]["models"]["m"]
    assert not model["checks"]["iid_structure_from_the_mask"]
    assert model["iid_layers_with_and_without_the_mask"]["2"] == {"with_mask": 0.7, "without_mask": 0.98,
                                                                  "counts_for_the_mask": False}
    assert _c5(text, [0.05, 0.7, 0.9, 0.95], no_mask=[0.0, 0.0, 0.0, 0.62])["C5a"]["passed"]


def test_c5b_needs_a_pattern_large_against_the_raw_scores_and_beyond_the_noise():
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    assert _c5(text, iid)["C5b"]["passed"]
    small = _llm_run(text)
    for row in small["layers"]:
        row["spread_ratio"] = 0.02
    assert not _c5(text, iid, figure5=small)["C5b"]["passed"]
    noisy = _llm_run(text)
    for row in noisy["layers"]:
        row["noise_spread_ratio"] = 0.08  # the control: sampling noise alone is as wide
    claim = settle(_c5(text, iid, figure5=noisy)["C5b"])
    result = claim["measured"]["models"]["m"]
    assert result["control_split_half_noise"]["passed"]
    # A noise control that passes cannot tell the pattern from noise: UNDECIDED, with the documents that would
    # resolve it (the noise falling as one over their root: 16 x (0.08 / 0.05)^2, rounded up).
    noise = result["preconditions"]["noise_control"]
    assert result["outcome"] == claim["outcome"] == "UNDECIDED" and not noise["passed"]
    assert noise["documents_to_resolve"] == math.ceil(16 * (0.08 / 0.05) ** 2)
    assert f"about {noise['documents_to_resolve']} Figure 5 documents" in claim["undecided"]["would_decide"]
    # A model decided to fail fails the claim, whatever the undecided one would show.
    from behind_rope.claims.c5 import claims_c5

    metrics = _c5_metrics(text, iid, figure5=noisy) | _c5_metrics(text, iid, figure5=small, model="n")
    runs = RUNS_C5 | {"n": {role: run.replace("m/", "n/") for role, run in RUNS_C5["m"].items()}}
    both = settle(claims_c5(metrics, runs, C5)["C5b"])
    assert both["outcome"] == "FAIL" and both["preconditions"]["models_decided"]["failing"] == ["n"]


def test_c5c_needs_the_first_keys_beyond_their_noise_floor_in_either_direction():
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    assert _c5(text, iid)["C5c"]["passed"]
    lower = _llm_run(text)
    for row in lower["layers"]:
        row |= {"first_keys_contrast": -0.5, "first_keys_contrast_halves": [-0.5, -0.4]}
    assert _c5(text, iid, text_run=lower)["C5c"]["passed"]  # whatever its sign
    assert not _c5(text, iid, text_run=_quiet(_llm_run(text)))["C5c"]["passed"]
    split = _llm_run(text)
    for row in split["layers"]:
        row["first_keys_contrast_halves"] = [0.9, -0.1]  # the halves disagree on the sign
    assert not _c5(text, iid, text_run=split)["C5c"]["passed"]
    # decided on the text run: the Figure 5 run's documents are recorded beside, deciding nothing
    assert _c5(text, iid, figure5=_quiet(_llm_run(text)))["C5c"]["passed"]


def test_c5c_fails_when_the_same_text_without_the_mask_singles_out_the_first_keys_too():
    from behind_rope.claims.c5 import claims_c5

    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    metrics = {"m/text_causal": _llm_run(text), "m/random_causal": _llm_run(iid),
               "m/random_noncausal": _quiet(_llm_run([0.0] * 4)), "m/fig5_causal": _llm_run(text),
               "m/text_noncausal": _llm_run(text)}
    result = claims_c5(metrics, RUNS_C5, C5)["C5c"]
    assert not result["passed"] and result["measured"]["models"]["m"]["control_text_no_mask"]["passed"]


def test_c5d_needs_lower_start_keys_in_every_layer_where_c5a_holds():
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    claim = _c5(text, iid)["C5d"]["measured"]["models"]["m"]
    assert claim["passed"] and claim["layers_where_c5a_holds"] == [2, 3, 4]
    assert claim["start_keys_lower_paper_way"] == {"2": False, "3": False, "4": False}  # recorded, not decided
    # Start keys higher than mid-context keys (a synthetic run whose start keys score more): C5d fails.
    assert not _c5(text, iid, figure5=_llm_run(text, deficit=+0.1))["C5d"]["passed"]
    # One half disagrees: not a reliable direction.
    split = _llm_run(text)
    split["layers"][2]["start_deficit_visible_halves"] = [-0.1, 0.05]
    assert not _c5(text, iid, figure5=split)["C5d"]["passed"]
    # No layer where C5a holds: nothing to confirm, so C5d fails too.
    assert not _c5([0.9, 0.1, 0.1, 0.1], iid)["C5d"]["passed"]


def test_figure_5_reliability_is_recorded_and_can_fail_without_deciding_c5d():
    text, iid = [0.9, 0.8, 0.9, 0.9], [0.05, 0.7, 0.9, 0.95]
    reliable = _c5(text, iid)["C5d"]["measured"]["models"]["m"]["figure5_reliability"]
    assert reliable["passed"] and reliable["layers_reaching"] == [2, 3, 4]
    noisy = _llm_run(text)
    for row in noisy["layers"][1:3]:  # layers 2 and 3 below 0.8: only one layer left reaches it
        row["drawn_reliability"] = 0.79
    claim = _c5(text, iid, figure5=noisy)["C5d"]
    assert claim["passed"] and not claim["measured"]["models"]["m"]["figure5_reliability"]["passed"]


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


@pytest.mark.parametrize(("start_shift", "no_mask_structured", "structured", "verdicts"), [
    # start keys lower, the no-mask run unstructured: every part passes
    (-0.5, False, True, {"C5a": True, "C5b": True, "C5c": True, "C5d": True}),
    # start keys higher: the direction fails (C5b is not asserted: the smaller spread puts its noise on the 0.05 bound)
    (+0.5, False, True, {"C5a": True, "C5c": True, "C5d": False}),
    # the same structure without the mask: C5a and C5c fail on their no-mask controls (C5b, C5d judge the causal runs)
    (-0.5, True, True, {"C5a": False, "C5b": True, "C5c": False, "C5d": True}),
    # no structure anywhere, only a relative decay and noise: nothing passes
    (-0.5, False, False, {"C5a": False, "C5b": False, "C5c": False, "C5d": False}),
])
def test_c5_from_synthetic_score_matrices(start_shift, no_mask_structured, structured, verdicts):
    from behind_rope.claims.c5 import claims_c5
    from behind_rope.maths.metrics import score_file_metrics
    from conftest import default_measures

    files = {"m/text_causal": _score_file(start_shift, seed=1, structured=structured),
             "m/random_causal": _score_file(start_shift, seed=2, structured=structured),
             "m/random_noncausal": _score_file(start_shift, seed=3, structured=no_mask_structured, mask=False),
             "m/fig5_causal": _score_file(start_shift, seed=4, structured=structured),
             "m/text_noncausal": _score_file(start_shift, seed=5, structured=no_mask_structured, mask=False)}
    metrics = {run: score_file_metrics(data, default_measures()) for run, data in files.items()}
    result = claims_c5(metrics, RUNS_C5, C5)
    assert {name: result[name]["passed"] for name in verdicts} == verdicts, (
        result["C5a"]["measured"]["models"]["m"]["checks"], result["C5d"]["measured"]["models"]["m"]["figure5"])


def test_the_loss_gap_is_decided_over_seeds_by_its_interval_and_seeds_within_the_bound():
    from behind_rope.claims.c3 import loss_gap
    from behind_rope.claims.seeds import t_quantile

    one_each = loss_gap({"nope": 3.09}, {"rope": 3.0}, 0.1, 0.95, 1)
    assert one_each["passed"] and one_each["interval"] == pytest.approx([0.09, 0.09])
    assert not loss_gap({"nope": 3.11}, {"rope": 3.0}, 0.1, 0.95, 1)["passed"]
    nope = {f"n{k}": 3.06 + 0.005 * k for k in range(5)}  # mean 3.07, deviations -0.01 .. 0.01
    rope = {"r0": 3.0}
    gap = loss_gap(nope, rope, 0.1, 0.95, 4)
    sd = (0.00025 / 4) ** 0.5  # the RoPE twin's one seed adds no spread and no degree of freedom
    half = t_quantile(0.975, 4) * sd * (1 / 5 + 1) ** 0.5
    assert gap["pooled_sd"] == pytest.approx(sd) and gap["interval"][1] == pytest.approx(0.07 + half)
    assert gap["passed"] and gap["seeds_within"] == 5
    wide = loss_gap({f"n{k}": 3.0 + 0.04 * k for k in range(5)}, {"r0": 3.0, "r1": 3.02}, 0.1, 0.95, 4)
    assert not wide["passed"] and wide["difference"] < 0.1  # within on average, not resolved
    k = wide["seeds_to_resolve"]
    assert k > 5
    upper = lambda k: wide["difference"] + t_quantile(0.975, 2 * k - 2) * wide["pooled_sd"] * (2 / k) ** 0.5  # noqa: E731
    assert upper(k) <= 0.1 < upper(k - 1)  # the smallest such count
    # The mean alone is not enough: two of five NoPE seeds beyond the bound fail the seeds-within part.
    split = loss_gap({"a": 3.0, "b": 3.0, "c": 3.0, "d": 3.15, "e": 3.15}, {"r": 3.0}, 0.1, 0.95, 4)
    assert split["seeds_within"] == 3 and not split["passed"]


def test_c3_competence_reads_every_seed_of_the_rope_twin():
    second_rope = {"validation_loss": 4.8, "unigram_loss": 6.0, "steps": 300, "seed": 1, "order_gap": USES_ORDER}
    claim = _c3(training={"rope_seed1": second_rope}, runs_of={**RUNS, "rope_seeds": ["rope", "rope_seed1"]})
    gap = claim["measured"]["loss_gap"]
    assert gap["rope_mean"] == pytest.approx(4.9) and gap["rope_seeds"] == 2 and gap["difference"] == pytest.approx(0.1)
    assert set(claim["measured"]["sanity"]) == {*SEEDS, "rope", "rope_seed1"}
    assert claim["measured"]["seeds"]["nope"]["competence"]["loss_above_rope"] == pytest.approx(0.1)
    assert not claim["preconditions"]["competence"]["passed"]  # the interval's upper end passes 0.1
    assert set(claim["measured"]["probe_layers"]) == {"1", "2", "3", "4"}
    assert list(claim["measured"]["probe_layers"]["3"]["locality"]) == SEEDS
