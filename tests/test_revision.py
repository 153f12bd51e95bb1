"""Version 2's stack (behind_rope.revision.stack) and claims R0-R5 (behind_rope.claims.revision)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from behind_rope.claims.revision import decide, published_markdown
from behind_rope.config import ConfigError, load, validate
from behind_rope.experiments.steps import revision_claims_settings
from behind_rope.revision.closed_form import derive, rescaling
from behind_rope.revision.stack import (
    Setting,
    gram_layer,
    input_coefficients,
    later_wins,
    layer,
    recency,
    sample_gram,
    triples,
)

SETTINGS = [Setting("none", 0.0, 16), Setting("layernorm", 0.5, 16), Setting("layernorm", 0.3, 16, residual=True),
            Setting("layernorm", 0.5, 16, causal=False), Setting("none", 0.2, 7, residual=True)]


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_the_gram_layer_is_the_layer_on_the_same_vectors(setting):
    """The runs' layer on coefficients and a Gram matrix gives the d-dimensional layer's scores and tokens."""
    n, seq_len, dim = 20, 10, setting.dim
    z = torch.from_numpy(np.random.default_rng(0).standard_normal((n, seq_len + 1, dim)))
    basis = torch.cat([z, torch.ones(n, 1, dim, dtype=torch.float64)], dim=1)
    gram = basis @ basis.transpose(-1, -2)
    coefficients = input_coefficients(n, seq_len, dim, setting.alpha)
    tokens = coefficients @ basis
    for _ in range(4):
        scores, tokens = layer(tokens, setting)
        gram_scores, coefficients = gram_layer(coefficients, gram, dim, setting)
        np.testing.assert_allclose(gram_scores, scores, atol=1e-10)
        np.testing.assert_allclose(coefficients @ basis, tokens, atol=1e-10)


def test_the_gram_matrices_are_drawn_from_their_distribution():
    """Bartlett's draw against the vectors' own: the Gram entries' means and variances (E z·z = d, Var z·z = 2d,
    Var z·z' = d, z·u ~ N(0, d), u·u = d)."""
    dim, n = 24, 40_000
    for gram in (sample_gram(n, 10, dim, np.random.default_rng(1)), sample_gram(n, 10, 5, np.random.default_rng(1))):
        d = gram[0, -1, -1].item()
        assert torch.all(gram[:, -1, -1] == d)
        np.testing.assert_allclose(gram[:, 0, 0].mean(), d, rtol=0.02)
        np.testing.assert_allclose(gram[:, 0, 0].var(), 2 * d, rtol=0.05)
        np.testing.assert_allclose(gram[:, 0, 1].var(), d, rtol=0.05)
        np.testing.assert_allclose(gram[:, 3, -1].var(), d, rtol=0.05)
        assert abs(gram[:, 0, 1].mean()) < 5 * (d / n) ** 0.5


def test_rp_counts_later_keys_and_ties_as_half():
    scores = torch.tensor([[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 0.0]],
                           [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, 1.0, 0.0]],
                           [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]], dtype=torch.float64)
    share, ties = later_wins(scores, triples(3))
    assert share.tolist() == [1.0, 0.0, 0.5] and ties.tolist() == [0.0, 0.0, 1.0]


def test_without_the_mask_rp_is_one_half_in_every_layer_even_where_tokens_collapse():
    for setting in (Setting("none", 0.0, 16, causal=False), Setting("layernorm", 0.5, 16, causal=False)):
        result = recency(setting, 10, 4, 20_000, 64, seed=3, progress=False)
        for value, error in zip(result["rp"], result["standard_error"], strict=True):
            assert abs(value - 0.5) < 4 * error + 1e-12


def test_the_causal_stack_gives_the_published_values():
    """A few of the authors' values (../shared/PAPER_V2.md), at a B small enough for a test."""
    result = recency(Setting("layernorm", 0.5, 16), 10, 4, 20_000, 64, seed=0, progress=False)
    np.testing.assert_allclose(result["rp"], [0.500, 0.638, 0.800, 0.908], atol=0.005)
    result = recency(Setting("none", 0.0, 16), 10, 4, 20_000, 64, seed=0, progress=False)
    np.testing.assert_allclose(result["rp"], [0.500, 0.5005, 0.082, 0.014], atol=0.006)


def test_the_closed_form_rescaling_is_the_notebooks_and_comes_near_the_layer_at_d_64():
    """Version 2's h(j): derived from the layer under its large-d plug-in, symbolically the authors' expression,
    1 at j = 1, rising with j, and within 0.01 of the simulated layer-1 rescaling at d = 64 (an approximation:
    the gap is about 0.003 at alpha = 0.5)."""
    assert derive()["matches_notebook"]
    closed = rescaling(0.5, 64, 10)
    assert closed[0] == pytest.approx(1.0) and np.all(np.diff(closed) > 0)
    simulated = recency(Setting("layernorm", 0.5, 64), 10, 1, 5_000, 64, seed=0, progress=False)["layer1_rescaling"]
    assert np.max(np.abs(closed - simulated)) < 0.01


def test_chunks_do_not_change_the_statistic():
    """Memory bounds the chunk; the sequences' statistics do not depend on it beyond the draw."""
    small = recency(Setting("layernorm", 0.5, 64), 10, 4, 4_000, 1, seed=0, progress=False)
    large = recency(Setting("layernorm", 0.5, 64), 10, 4, 4_000, 512, seed=0, progress=False)
    assert small["chunk_sequences"] < 4_000 <= large["chunk_sequences"]
    for a, b, error in zip(small["rp"], large["rp"], large["standard_error"], strict=True):
        assert abs(a - b) < 6 * error


# The claims, on recency files constructed from a few numbers.
def _file(rp, error=0.001, sequences=75_000, correlation=0.5):
    errors = [error] * len(rp)
    variance = error**2 * sequences
    covariance = [[variance * (1 if a == b else correlation) for b in range(len(rp))] for a in range(len(rp))]
    return {"rp": list(rp), "standard_error": errors, "covariance": covariance, "sequences": sequences}


def _constructed_files(config):
    """Every setting the claims read, each shaped like version 2's published pattern."""
    files = {}
    for name, spec in config["revision"]["settings"].items():
        if not spec.get("causal", True):
            files[name] = _file([0.5, 0.5, 0.5, 0.5])
        elif spec["norm"] == "none":
            files[name] = _file([0.5, 0.5, 0.08, 0.01])
        else:
            strength = spec["alpha"] * 16 / spec["dim"] * (0.6 if spec.get("residual") else 1.0)
            files[name] = _file([0.5] + [min(0.5 + strength * step, 0.999) for step in (0.3, 0.6, 0.8)])
    for name, spec in config["revision"]["settings"].items():
        files[name] |= {"settings": {"setting": spec}, "layer1_rescaling": [1.0] * 10}
    published = config["claims"]["R0"]["runs"]["published"]
    for name, layers in published.items():
        for layer_number, value in layers.items():
            files[name]["rp"][int(layer_number) - 1] = value
    return files


@pytest.fixture(scope="module")
def config():
    return load()


def _decide(config, files, sequences=75_000):
    settings = revision_claims_settings(config)
    return decide(files, settings["claims"], sequences, settings["layers"])


def test_the_published_pattern_passes_every_claim(config):
    claims = _decide(config, _constructed_files(config))
    assert {name: claim["outcome"] for name, claim in claims.items()} == {f"R{i}": "PASS" for i in range(6)}
    assert claims["R1"]["measured"]["first_layer_below"]["none_a0.0_d16"] == 3
    assert "| ln_a0.5_d16 | 0.5000 / 0.5000 (+0.0000) | 0.6380 / 0.6380 (+0.0000) |" in published_markdown(claims["R0"])


@pytest.mark.parametrize("claim, control, rp", [
    ("R1", "none_a0.0_d16_nomask", [0.5, 0.5, 0.3, 0.2]),          # an earlier-token bias the mask did not make
    ("R2", "ln_a0.5_d16_nomask", [0.5, 0.6, 0.7, 0.8]),            # recency without the mask
    ("R3", "ln_res_a0.5_d16_nomask", [0.5, 0.6, 0.6, 0.6]),
    ("R4", "ln_a0.8_d16_nomask", [0.5, 0.6, 0.7, 0.8]),            # alpha acting without the mask
    ("R5", "ln_a0.5_d1024_nomask", [0.5, 0.3, 0.3, 0.3]),          # d acting without the mask
])
def test_each_control_passes_when_the_effect_has_another_cause_and_then_the_claim_fails(config, claim, control, rp):
    """A control is the same stack without the mask: were the effect there too (inputs that carry position,
    say), the control would show it, and the claim would FAIL."""
    files = _constructed_files(config)
    files[control] = _file(rp)
    result = _decide(config, files)[claim]
    assert any(run["shows_effect"] for run in result["measured"]["controls"].values())
    assert result["outcome"] == "FAIL"


def test_a_control_with_position_in_its_inputs_shows_an_effect_without_the_mask():
    """The constructed case for real: a no-mask layer whose tokens carry their position (a growing multiple of
    one direction) scores later keys higher; the mask is not the only thing RP can see."""
    n, seq_len, dim = 4_000, 10, 16
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randn(n, seq_len, dim, generator=generator, dtype=torch.float64) / dim**0.5
    tokens[..., 0] += torch.linspace(0, 2, seq_len, dtype=torch.float64)
    scores, _ = layer(tokens, Setting("none", 0.0, dim, causal=False))
    share, _ = later_wins(scores, triples(seq_len))
    assert share.mean() > 0.6


def test_too_few_sequences_leave_a_claim_undecided_with_the_size_that_would_decide_it(config):
    files = {name: file | _file(file["rp"], error=0.004) for name, file in _constructed_files(config).items()}
    claims = _decide(config, files)
    assert claims["R2"]["outcome"] == "UNDECIDED"
    power = claims["R2"]["preconditions"]["power"]
    assert not power["passed"] and power["sequences_needed"] > 75_000


def test_a_published_value_outside_the_noise_fails_r0(config):
    files = _constructed_files(config)
    files["ln_a0.5_d64"]["rp"][3] += 0.02
    claims = _decide(config, files)
    assert claims["R0"]["outcome"] == "FAIL"
    assert "(**+0.0200**)" in published_markdown(claims["R0"])


@pytest.mark.parametrize("claim, part, key", [("R1", "controls", "no_mask_settings"), ("R3", "runs", "without_residual"),
                                             ("R4", "runs", "sweeps"), ("R0", "runs", "published")])
def test_a_claim_that_names_a_setting_the_config_does_not_run_is_refused_in_one_sentence(config, claim, part, key):
    broken = copy.deepcopy(config)
    value = broken["claims"][claim][part][key]
    if key == "sweeps":
        value["residual"][0] = "ln_a9_d16"
    elif key == "published":
        value["ln_a9_d16"] = {"4": 0.5}
    else:
        value[0] = "ln_a9_d16"
    with pytest.raises(ConfigError, match=f"'claims.{claim}.{part}.{key}' names the unknown setting 'ln_a9_d16'"):
        validate(broken)
