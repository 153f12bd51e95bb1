"""The scale ladder: built from a small synthetic run, score matrices to claims to table and text."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_claims import C5, _score_file

# name: (parameters, architecture, start shift of the keys 1..S/10): two sizes of one family, one other model
MODELS = {"small_qwen": (5e8, "qwen2", -0.5), "large_qwen": (1.5e9, "qwen2", +0.5), "tiny_llama": (1.35e8, "llama", -0.5)}


@pytest.fixture(scope="module")
def claims():
    from behind_rope.claims.c5 import claims_c5
    from behind_rope.maths.metrics import score_file_metrics
    from conftest import default_measures

    metrics, runs = {}, {}
    for k, (model, (parameters, architecture, shift)) in enumerate(MODELS.items()):
        files = {"text_causal": _score_file(shift, seed=10 * k + 1), "random_causal": _score_file(shift, seed=10 * k + 2),
                 "random_noncausal": _score_file(shift, seed=10 * k + 3, structured=False, mask=False),
                 "fig5_causal": _score_file(shift, seed=10 * k + 4),
                 "text_noncausal": _score_file(shift, seed=10 * k + 5, structured=False, mask=False)}
        for run, data in files.items():
            metadata = json.loads(str(data["metadata"])) | {"model": model, "parameters": parameters,
                                                             "architecture": architecture}
            metrics[f"{model}/{run}"] = score_file_metrics(data | {"metadata": np.array(json.dumps(metadata))},
                                                           default_measures())
        runs[model] = {"text": f"{model}/text_causal", "iid": f"{model}/random_causal",
                       "iid_no_mask": f"{model}/random_noncausal", "figure5": f"{model}/fig5_causal",
                       "text_no_mask": f"{model}/text_noncausal"}
    return claims_c5(metrics, runs, C5)


def test_the_ladder_orders_models_by_size_and_pairs_one_family(claims):
    from behind_rope.claims.ladder import families, ladder_layers, ladder_models, ladder_rows

    assert ladder_models(claims) == ["tiny_llama", "small_qwen", "large_qwen"]
    assert families(claims) == {"qwen2": ["small_qwen", "large_qwen"]}
    rows = ladder_rows(claims)
    assert [(row["model"], row["layer"]) for row in rows] == [(m, layer) for m in ladder_models(claims)
                                                              for layer in ladder_layers(claims)]
    # The values are the claims' own: the direction is C5d's start deficit, of the sign put into the scores.
    small = [row["direction"] for row in rows if row["model"] == "small_qwen"]
    large = [row["direction"] for row in rows if row["model"] == "large_qwen"]
    assert all(value < 0 for value in small) and all(value > 0 for value in large)
    assert rows[0]["direction"] == claims["C5d"]["measured"]["models"]["tiny_llama"]["figure5"]["2"]["start_deficit_visible"]


def test_the_ladder_table_and_text_say_what_changes_with_size(claims):
    from behind_rope.claims.ladder import ladder_table, ladder_values

    table = ladder_table(claims)
    assert table.count(r"\\") == 1 + 3 * 3  # the header, then 3 models x 3 layers
    assert table.index("tiny") < table.index("small") < table.index("large")
    values = ladder_values(claims)
    # C5d passes for the smaller Qwen (start keys lower) and fails for the larger: the text says so.
    assert "C5d goes from pass to fail" in values["ladder.family"]
    assert r"3.0 times the parameters" in values["ladder.family"]
    assert values["ladder.trend"].startswith("Along all the models")
    # The sentences on the models' sizes: the count and the largest, from the claims, not typed in.
    assert (values["ladder.count"], values["ladder.largest"]) == ("3 models", "1.5 billion")


def test_a_ladder_without_two_sizes_of_one_family_says_so(claims):
    from behind_rope.claims.ladder import ladder_values

    one_family = json.loads(json.dumps(claims))
    one_family["C5a"]["measured"]["models"]["large_qwen"]["architecture"] = "other"
    assert ladder_values(one_family)["ladder.family"] == "No two models here share an architecture."


def test_trend_reads_only_steps_that_go_one_way():
    from behind_rope.claims.ladder import trend

    assert (trend([0.1, 0.2, 0.5]), trend([3, 2, 1]), trend([0.1, 0.3, 0.2]), trend([None, 1.0])) == (
        "rises", "falls", "mixed", "mixed")


def test_a_models_mean_first_key_contrast_is_of_its_size_whatever_the_signs(claims):
    """C5c counts the first keys' contrast of either sign: layers of opposite sign must not cancel in the mean."""
    import copy

    from behind_rope.claims.ladder import ladder_layers, model_means

    flipped = copy.deepcopy(claims)
    layers = [str(layer) for layer in ladder_layers(claims)]
    rows = flipped["C5c"]["measured"]["models"]["tiny_llama"]["text"]
    rows[layers[0]]["first_keys_contrast"] = -abs(rows[layers[0]]["first_keys_contrast"])
    for layer in layers[1:]:
        rows[layer]["first_keys_contrast"] = abs(rows[layer]["first_keys_contrast"])
    sizes = [abs(rows[layer]["first_keys_contrast"]) / rows[layer]["first_keys_noise"] for layer in layers]
    assert model_means(flipped)["tiny_llama"]["first_keys"] == pytest.approx(sum(sizes) / len(sizes))
