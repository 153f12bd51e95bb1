import numpy as np
import torch

from behind_rope.claims.decide import claim_c2, claim_c4
from behind_rope.claims.outcome import settle
from behind_rope.maths.metrics import score_file_metrics
from behind_rope.maths.rope import apply_rope
from behind_rope.simulation.simulate import SimulationSize, Variant, monte_carlo_layer2_error, sample_inputs, simulate
from conftest import default_measures

SMALL = SimulationSize(batch_size=200, seq_len=10, dim=16, layers=3, chunk_size=64)


def test_outputs_have_the_documented_shapes_and_mask():
    out = simulate(Variant(alpha=0.2), SMALL, seed=0, progress=False)
    assert set(out) == {"mean_scores", "half_a", "half_b", "chunk_means", "chunk_sizes", "log_z", "log_z_half_a",
                        "log_z_half_b", "log_z_groups", "group_sizes"}
    # each chunk's mean log Z, weighted by its size, is the mean over all sequences
    np.testing.assert_allclose(np.average(out["log_z_groups"], axis=0, weights=out["group_sizes"]), out["log_z"])
    for name in ("mean_scores", "half_a", "half_b"):
        array = out[name]
        assert array.shape == (3, 10, 10)
        assert np.isnan(array[:, 0, 1:]).all() and np.isfinite(array[:, np.tril_indices(10)[0], np.tril_indices(10)[1]]).all()
    assert out["log_z"].shape == (3, 10)
    # Query 0 sees key 0 only: log Z is its own score (mean over sequences)
    np.testing.assert_allclose(out["log_z"][:, 0], out["mean_scores"][:, 0, 0], rtol=1e-6)
    control = simulate(Variant(alpha=0.2, causal=False), SMALL, seed=0, progress=False)
    assert np.isfinite(control["mean_scores"]).all()


def test_same_seed_same_numbers_other_seed_other_numbers():
    first = simulate(Variant(alpha=0.0, rope=True), SMALL, seed=3, progress=False)["mean_scores"]
    again = simulate(Variant(alpha=0.0, rope=True), SMALL, seed=3, progress=False)["mean_scores"]
    other = simulate(Variant(alpha=0.0, rope=True), SMALL, seed=4, progress=False)["mean_scores"]
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, other, equal_nan=True)


def test_half_sample_means_average_to_the_mean():
    size = SimulationSize(batch_size=256, seq_len=6, dim=8, layers=2, chunk_size=64)
    out = simulate(Variant(alpha=0.4), size, seed=0, progress=False)
    np.testing.assert_allclose((out["half_a"] + out["half_b"]) / 2, out["mean_scores"], rtol=1e-10)


def test_inputs_have_mean_inner_product_alpha():
    x = sample_inputs(400, 8, 64, 0.4, torch.Generator().manual_seed(0))
    gram = x @ x.transpose(-1, -2)
    off_diagonal = gram[:, ~torch.eye(8, dtype=torch.bool)]
    assert abs(off_diagonal.mean().item() - 0.4) < 0.02
    assert torch.allclose(gram.diagonal(dim1=-2, dim2=-1), torch.ones(400, 8, dtype=torch.float64))


def test_rope_scores_depend_on_the_offset_only():
    v = torch.randn(2, 32, generator=torch.Generator().manual_seed(0))

    def at(positions):
        placed = v.new_zeros(max(positions) + 1, 32).index_copy(0, torch.tensor(positions), v)
        return apply_rope(placed, 1e4)[positions]

    near_start, far = at([1, 4]), at([20, 23])
    assert torch.allclose(near_start[1] @ near_start[0], far[1] @ far[0], atol=1e-4)


def test_monte_carlo_matches_theory_to_the_paper_tolerance():
    rows = monte_carlo_layer2_error([0.0, 0.5], [64], samples=10_000, seq_len=6, chunk_size=2500, seed=0, progress=False)
    assert max(r["max_abs_error"] for r in rows) < 0.02


def test_the_monte_carlo_check_fails_on_the_same_layer_without_the_mask():
    """C1's comparison can fail: without the causal mask the layer's scores are not the closed form's."""
    from behind_rope.config import load

    tolerance = load()["claims"]["C1"]["criteria"]["tolerance"]
    for causal, within in ((True, True), (False, False)):
        (row,) = monte_carlo_layer2_error([0.0], [64], samples=4000, seq_len=6, chunk_size=2000, seed=0, progress=False,
                                          causal=causal)
        assert (row["max_abs_error"] < tolerance) == within, (causal, row)


def _metrics(variant, size):
    """What the metrics step writes for a simulation of ``variant``."""
    return score_file_metrics({**simulate(variant, size, seed=0, progress=False), "metadata": np.array("{}")},
                              default_measures())


def test_c2_holds_with_the_mask_and_fails_without_it():
    size = SimulationSize(batch_size=4000, seq_len=16, dim=64, layers=3, chunk_size=1000)
    metrics = {"causal": _metrics(Variant(alpha=0.2), size), "control": _metrics(Variant(alpha=0.2, causal=False), size)}
    assert claim_c2(metrics, ["causal"], ["control"], from_layer=2, min_locality=0.9)["passed"]
    assert not claim_c2(metrics, ["control"], [], from_layer=2, min_locality=0.9)["passed"]


def test_c4_holds_for_causal_rope_and_fails_on_the_non_causal_control():
    size = SimulationSize(batch_size=4000, seq_len=20, dim=64, layers=4, chunk_size=1000)
    metrics = {
        "causal": _metrics(Variant(alpha=0.5, rope=True), size),
        "control": _metrics(Variant(alpha=0.5, rope=True, causal=False), size),
    }
    c4 = dict(from_layer=2, min_reliability=0.9, max_start_deficit=0.0, floor_splits=100, floor_quantile=0.95)
    decided = settle(claim_c4(metrics, ["causal"], ["control"], **c4))
    assert decided["outcome"] == "PASS", decided["preconditions"]
    # Four chunks of 1,000 sequences: each layer's floor from their splits, and every layer resolved.
    assert all(0 < layer["start_deficit_floor"] < abs(layer["start_deficit"])
               for layer in decided["measured"]["runs"]["causal"]["layers"].values())
    control_alone = claim_c4(metrics, ["control"], [], **c4)
    assert not control_alone["passed"]


def test_the_chunks_are_replicates_whose_size_weighted_mean_is_the_mean():
    size = SimulationSize(batch_size=2500, seq_len=8, dim=16, layers=2, chunk_size=1000)
    out = simulate(Variant(alpha=0.2), size, seed=0, progress=False)
    assert out["chunk_means"].shape == (3, 2, 8, 8) and out["chunk_sizes"].tolist() == [1000, 1000, 500]
    weighted = np.tensordot(out["chunk_sizes"], out["chunk_means"], axes=1) / 2500
    np.testing.assert_allclose(weighted, out["mean_scores"], rtol=1e-10, equal_nan=True)
