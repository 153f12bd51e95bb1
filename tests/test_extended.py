"""The extended target: what decides nothing (llm.extended_models) is left out of the default run and built by
`snakemake extended`, with its own recorded claims and the scale ladder over every model."""

import copy

import pytest
from test_checkpoint import planned

from behind_rope.config import ConfigError, c5_runs, load, validate
from behind_rope.experiments.runs import extended_config, position_models, scored_llms
from behind_rope.figures import table
from conftest import copy_workflow, snakemake

EXTENDED = "qwen2_5_coder_1_5b"


def test_the_default_scale_leaves_the_largest_rung_to_the_extended_target():
    config = load()
    assert EXTENDED not in config["llm"]["models"] and config["llm"]["extended_models"] == [EXTENDED]
    assert EXTENDED not in c5_runs(config) and EXTENDED in c5_runs(extended_config(config))
    assert EXTENDED in scored_llms(config)  # its per-model rules exist
    assert EXTENDED not in position_models(extended_config(config))  # C6-C9 never read it
    _, figures = table.load(config)
    extended = sorted(name for name, figure in figures.items() if figure.extended)
    # The all-layer figures decide nothing: every model's is the extended target's; so is the LayerNorm variant of
    # Figure 2, whose simulations no claim reads.
    assert extended == sorted([f"figS_llm_{model}_all_layers" for model in (*config["llm"]["models"], EXTENDED)]
                              + ["figS_scale_ladder_extended", "figS_layernorm"])
    assert figures["figS_scale_ladder_extended"].inputs == ("results/extended/claims.json",)


def test_a_model_is_either_decided_on_or_extended():
    config = copy.deepcopy(load())
    config["llm"]["models"].append(EXTENDED)
    with pytest.raises(ConfigError, match="which 'llm.models' names too"):
        validate(config)
    added = copy.deepcopy(load())  # a recipe that decides on it adds it, and it is no longer extended
    added["llm"]["add_models"] = [EXTENDED]
    added = validate(added)
    assert added["llm"]["extended_models"] == [] and EXTENDED in added["llm"]["models"]


def test_all_plans_none_of_the_extended_work_and_extended_plans_all_of_it(tmp_path):
    workdir = copy_workflow(tmp_path)
    default = planned(snakemake(workdir, "-n", "-p").stdout)
    assert "extended_claims" not in default and "figS_scale_ladder_extended" not in default
    assert all(EXTENDED not in jobs.values() for jobs in sum(default.values(), []))
    extended = planned(snakemake(workdir, "-n", "-p", "extended").stdout)
    assert extended["extended_claims"] == [{}] and extended["figS_scale_ladder_extended"] == [{}]
    assert {"cache_llm", "llm_inputs"} <= set(extended)
    assert any(jobs.get("model") == EXTENDED for jobs in extended["scores"])
    assert "paper" not in extended  # the paper is the default run's
