from behind_rope.claims import claim_c1, claim_c2, claim_c4


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
