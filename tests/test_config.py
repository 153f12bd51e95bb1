import copy
import re
from dataclasses import fields

import pytest
import yaml

from behind_rope import config as configuration
from behind_rope.config import ConfigError, validate
from behind_rope.simulation.variants import Variant
from conftest import ROOT, copy_workflow, snakemake


def load(name="config.yaml"):
    """A config file as written; the default one with the pre-registration (config/claims.yaml) over it."""
    config = yaml.safe_load((ROOT / "config" / name).read_text())
    if name == "config.yaml":
        config = configuration.merge(config, yaml.safe_load((ROOT / "config" / "claims.yaml").read_text()))
    return config


def merged(overlay_name):
    """What Snakemake builds for --configfile: the overlay merged recursively into the default."""
    return configuration.load(f"config/{overlay_name}")


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml", "smoke.yaml"])
def test_shipped_configs_are_valid(name):
    config = validate(load()) if name == "config.yaml" else merged(name)
    variant = config["simulation"]["variants"]["l2_alpha0.0"]
    assert variant["causal"] is True and variant["rope_theta"] == 10_000.0 and variant["window"] is None  # defaults filled


def test_token_set_defaults_live_in_one_place():
    from behind_rope.config import TokenSet

    schema = configuration.load_schema()["properties"]["llm"]["properties"]["inputs"]["additionalProperties"]
    assert set(schema["properties"]) == {field.name for field in fields(TokenSet)}
    assert validate(copy.deepcopy(load()))["llm"]["inputs"]["random"]["sampling"] == TokenSet().sampling


def test_variant_defaults_live_in_one_place():
    """The schema lists exactly the fields of the Variant dataclass, whose defaults fill the config."""
    schema = configuration.load_schema()["properties"]["simulation"]["properties"]["variants"]["additionalProperties"]
    assert set(schema["properties"]) == {field.name for field in fields(Variant)}
    config = validate(copy.deepcopy(load()))
    assert config["simulation"]["variants"]["rope_causal_alpha0.5"] == {**Variant(alpha=0.5, rope=True).__dict__}


def test_paper_config_uses_the_paper_sizes():
    sizes = merged("paper.yaml")["simulation"]
    assert (sizes["batch_size"], sizes["seq_len"], sizes["dim"]) == (100_000, 50, 64)


def broken(edit):
    config = copy.deepcopy(load())
    edit(config)
    with pytest.raises(ConfigError) as caught:
        validate(config)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
    return message


def test_alpha_outside_zero_one():
    message = broken(lambda c: c["simulation"]["variants"]["l2_alpha0.2"].update(alpha=1.5))
    assert "'simulation.variants.l2_alpha0.2.alpha' is 1.5" in message and "[0, 1)" in message


def test_sequence_shorter_than_two():
    message = broken(lambda c: c["simulation"].update(seq_len=1))
    assert "'simulation.seq_len' is 1" in message and ">= 2" in message


def test_unknown_variant_kind():
    message = broken(lambda c: c["simulation"]["variants"]["l2_alpha0.2"].update(norm="batchnorm"))
    assert "'simulation.variants.l2_alpha0.2.norm' is 'batchnorm'" in message and "one of l2, layernorm" in message


def test_unknown_variant_name():
    message = broken(lambda c: c["claims"]["C2"]["runs"].update(variants=["l2_alpha0.0", "l2_alpha0.3"]))
    assert "'claims.C2.runs.variants' names the unknown variant 'l2_alpha0.3'" in message


def test_a_sliding_window_needs_the_causal_mask():
    message = broken(lambda c: c["simulation"]["variants"]["l2_alpha0.0"].update(window=8, causal=False))
    assert "'simulation.variants.l2_alpha0.0' has a window but no causal mask" in message
    assert "'simulation.variants.l2_alpha0.0.window' is 0" in broken(
        lambda c: c["simulation"]["variants"]["l2_alpha0.0"].update(window=0))


def test_llm_token_sets_are_checked():
    assert "'llm.inputs.random.iid_of' must name a text set" in broken(
        lambda c: c["llm"]["inputs"]["random"].update(iid_of="nothing"))
    assert "'llm.inputs.long' needs sequences and seq_len" in broken(
        lambda c: c["llm"]["inputs"].update(long={"layers": 4}))
    assert "'llm.inputs.random' is missing" in broken(lambda c: c["llm"]["inputs"].pop("random"))
    assert "the layers of claims C5a-C5d go beyond" in broken(lambda c: c["llm"]["inputs"]["random"].update(layers=2))
    assert "which is also a twin" in broken(lambda c: c["pretrained"].update(nope=c["pretrained"]["smollm2"])
                                            or c["llm"].update(models=["nope"]))


def test_token_sets_name_their_models_and_per_model_sizes():
    from behind_rope.config import c5_runs, set_models
    from behind_rope.experiments.runs import extended_config, position_models
    from behind_rope.experiments.steps import llm_input_sets

    config = validate(load())
    assert "'llm.inputs.fig5' names 'gemma' in its models or sequences_by_model" in broken(
        lambda c: c["llm"]["inputs"]["fig5"].update(sequences_by_model={"gemma": 200}))
    assert "'llm.inputs.first' names 'smol' in its models" in broken(
        lambda c: c["llm"]["inputs"]["first"].update(models=["smol"]))
    assert "give sequences_by_model there" in broken(
        lambda c: c["llm"]["inputs"]["random"].update(sequences_by_model={"gemma3": 20}))
    assert "'claims.C7.runs.decided_by' is 'gemma3', which is not one of the models" in broken(
        lambda c: c["llm"]["inputs"]["first"].update(models=["smollm2"]))
    # The 1.5B model reads claim C5's sets, not those of C6-C9 (deeper than its dequantised layers).
    assert position_models(config) == ["smollm2", "gemma3", "qwen2_5_coder"]
    assert "qwen2_5_coder_1_5b" in c5_runs(extended_config(config))
    assert "the figures draw at most 256 block means" in broken(lambda c: c["measures"].update(drawn_grid=128))
    assert "must equal 'simulation.seq_len'" in broken(lambda c: c["twin_analysis"].update(seq_len=40))
    # Claims C5a-C5d share their runs by role, so one claim's entry cannot choose another's run unseen.
    assert "C5d names 'text_noncausal' as its iid run, C5a names 'random_causal'" in broken(
        lambda c: c["claims"]["C5d"]["recorded"].update(iid="text_noncausal"))
    assert set_models(config, "long") == ["smollm2", "gemma3"]
    # One Figure 5 count for every model at the default scale; a config may still give one model another.
    fig5 = config["llm"]["inputs"]["fig5"]
    assert not fig5.get("sequences_by_model")
    assert {llm_input_sets(config, model)["fig5"]["sequences"] for model in config["llm"]["models"]} == {
        fig5["sequences"]}
    config["llm"]["inputs"]["fig5"]["sequences_by_model"] = {"gemma3": 32}
    assert llm_input_sets(config, "gemma3")["fig5"]["sequences"] == 32
    # A scale that drops a model drops it from the sets that name it (config/smoke.yaml reads SmolLM2 only).
    assert position_models(merged("smoke.yaml")) == ["smollm2"]


def test_the_llm_dtype_is_chosen_in_the_config():
    import torch

    from behind_rope.device import pick_device

    assert pick_device("cpu", "auto") == (torch.device("cpu"), torch.float32)
    assert pick_device("cpu", "bfloat16") == (torch.device("cpu"), torch.bfloat16)
    assert "'llm.dtype'" in broken(lambda c: c["llm"].update(dtype="float16"))


def test_a_model_cut_to_its_first_layers_is_read_no_deeper():
    assert "'llm.inputs.long' reads 12 layers, but 'pretrained.smollm2.layers' dequantises only 4" in broken(
        lambda c: c["pretrained"]["smollm2"].update(layers=4))
    assert "a hub or local model loads whole" in broken(
        lambda c: c["pretrained"].update(local_model={"local": "somewhere", "layers": 4}))
    assert "'pretrained.smollm2.layers'" in broken(lambda c: c["pretrained"]["smollm2"].update(layers=0))
    assert validate(load())["pretrained"]["qwen2_5_coder_1_5b"]["layers"] == 4


def test_negative_batch_size():
    message = broken(lambda c: c["simulation"].update(batch_size=-5))
    assert "'simulation.batch_size' is -5" in message and ">= 2" in message


def test_missing_and_unexpected_keys():
    assert "'simulation.dim' is missing" in broken(lambda c: c["simulation"].pop("dim"))
    assert "'sed' was unexpected" in broken(lambda c: c.update(sed=1))
    assert "(see workflow/schemas/config.schema.yaml)" in broken(lambda c: c.update(sed=1))


def test_a_value_of_the_wrong_kind_is_named_in_words():
    assert broken(lambda c: c.update(simulation=5)).endswith("'simulation' is 5, but it must be a mapping of keys to values.")


def test_snakemake_stops_before_running_anything(tmp_path):
    workdir = copy_workflow(tmp_path)
    bad = load()
    bad["simulation"]["variants"]["l2_alpha0.2"]["alpha"] = 1.0
    (workdir / "config" / "bad.yaml").write_text(yaml.safe_dump(bad))
    done = snakemake(workdir, "--configfile", "config/bad.yaml", check=False)
    assert done.returncode != 0
    assert "'simulation.variants.l2_alpha0.2.alpha' is 1.0, but it must be a number in [0, 1)." in done.stderr
    assert not (workdir / "results").exists()


def test_data_and_training_settings_are_checked():
    assert "'data.corpus' is 'wikipedia', but it must be one of sotu, brown." in broken(
        lambda c: c["data"].update(corpus="wikipedia"))
    assert "'data.corpora.sotu.sha256' is 'abc'" in broken(lambda c: c["data"]["corpora"]["sotu"].update(sha256="abc"))
    assert "'training.twins.nope.positional' is 'alibi'" in broken(
        lambda c: c["training"]["twins"]["nope"].update(positional="alibi"))
    assert "'claims.C3.controls.untrained' names 'nope_untrained', which trains; give it steps: 0." in broken(
        lambda c: c["training"]["twins"]["nope_untrained"].pop("steps"))
    assert "must name a rope twin" in broken(lambda c: c["claims"]["C3"]["runs"].update(rope_twin="nope"))
    assert "the seeds of 'training.twins.nope_untrained' must be those of 'training.twins.nope'" in broken(
        lambda c: c["training"]["twins"]["nope_untrained"].update(seeds=[0, 1]))
    assert "'twin_analysis.seq_len' must be at most 'data.seq_len'" in broken(lambda c: c["twin_analysis"].update(seq_len=500))
    assert "'training.model.layers' is 1" in broken(lambda c: c["training"]["model"].update(layers=1))


def test_an_untrained_twin_takes_the_weight_scale_of_the_trained_twin_of_its_seed():
    from behind_rope.experiments import paths, steps

    config = validate(copy.deepcopy(load()))
    assert steps.twin_settings(config, "nope_untrained")["weight_scale_of"] == "nope"
    assert steps.twin_settings(config, "nope_untrained_seed2")["weight_scale_of"] == "nope_seed2"
    assert "weight_scale_of" not in steps.twin_settings(config, "nope_seed2")  # a trained twin's settings stay as they were
    assert paths.train_inputs(config, "nope_untrained_seed2")["scale_reference"] == paths.twin_files("nope_seed2")["model"]
    assert set(paths.train_inputs(config, "nope")) == {"train", "valid"}
    assert ("'training.twins.nope_untrained.weight_scale_of' is 'nothing', but it must name a twin trained here"
            in broken(lambda c: c["training"]["twins"]["nope_untrained"].update(weight_scale_of="nothing")))
    assert "whose positional or model differs from this twin's" in broken(
        lambda c: c["training"]["twins"]["nope_untrained"].update(weight_scale_of="rope"))
    assert "which has no seed 2" in broken(lambda c: c["training"]["twins"]["nope"].update(seeds=[0, 1]))


def test_a_twin_with_seeds_becomes_one_twin_per_seed():
    config = copy.deepcopy(load())
    for twin in ("nope", "nope_untrained"):
        config["training"]["twins"][twin]["seeds"] = [0, 1, 2, 3, 4]
    twins = validate(config)["training"]["twins"]
    assert [name for name in twins if name.startswith("nope_seed")] == [f"nope_seed{k}" for k in (1, 2, 3, 4)]
    assert twins["nope"]["seed"] == 0 and twins["nope_seed3"] == {**twins["nope"], "seed": 3}
    assert configuration.seed_twins({"training": {"twins": twins}}, "nope")[0] == "nope"
    assert configuration.seed_twins({"training": {"twins": twins}}, "rope") == ["rope"]


def test_every_claim_is_pre_registered_with_its_quote_and_criteria():
    """No deciding constant is missing from the pre-registration: the schema requires each claim's parts."""
    claims = validate(copy.deepcopy(load()))["claims"]
    assert all({"paper", "metric", "runs", "controls", "criteria"} <= set(entry) for entry in claims.values())
    assert "'claims.C5b.criteria.min_spread_ratio' is missing" in broken(
        lambda c: c["claims"]["C5b"]["criteria"].pop("min_spread_ratio"))
    assert "'claims.C3.paper.quote' is missing" in broken(lambda c: c["claims"]["C3"]["paper"].pop("quote"))


def test_the_twins_are_analysed_at_the_simulation_length():
    """Amplification compares key slopes with the simulation, so both must use the same S."""
    for config in (load(), merged("paper.yaml"), merged("smoke.yaml")):
        assert config["twin_analysis"]["seq_len"] == config["simulation"]["seq_len"]


def test_a_step_reads_long_settings_from_a_file(tmp_path):
    # paper_inputs' settings (about 40 KB) come as --settings @results/paper/settings.json
    import argparse

    from behind_rope.cli.common import _json

    (tmp_path / "settings.json").write_text('{"a": [1, 2]}')
    assert _json(f"@{tmp_path / 'settings.json'}") == {"a": [1, 2]} == _json('{"a": [1, 2]}')
    with pytest.raises(argparse.ArgumentTypeError, match="cannot read"):
        _json(f"@{tmp_path / 'missing.json'}")


def test_add_models_extends_the_scales_models_and_variants_may_name_models_it_drops():
    from behind_rope.experiments.runs import llm_variant_names

    config = copy.deepcopy(load())
    config["llm"]["add_models"] = ["smollm2", "qwen2_5_coder_1_5b"]
    config["llm"]["models"] = ["smollm2", "gemma3"]
    config = validate(config)
    assert config["llm"]["models"] == ["smollm2", "gemma3", "qwen2_5_coder_1_5b"] and "add_models" not in config["llm"]
    # ntk2 names qwen2_5_coder, which this config drops: its variant is left out, not an error
    assert "qwen2_5_coder.ntk2" not in llm_variant_names(config)
    assert "smollm2.ntk2" in llm_variant_names(config)


def test_the_rope_defaults_have_one_home():
    import inspect

    from behind_rope.config import ModelVariant
    from behind_rope.llm.loading import load_model
    from behind_rope.maths import rope_base
    from behind_rope.twins.model import TwinSize

    assert Variant(alpha=0.0).rope_theta == TwinSize.__dataclass_fields__["rope_theta"].default == rope_base.ROPE_THETA
    assert Variant(alpha=0.0).ntk_factor == ModelVariant().ntk_factor == rope_base.NTK_FACTOR
    assert inspect.signature(load_model).parameters["ntk_factor"].default == rope_base.NTK_FACTOR
    library = ROOT / "src" / "behind_rope"
    written = [str(path.relative_to(library)) for path in library.rglob("*.py")
               if "10_000.0" in path.read_text() or "10000.0" in path.read_text()]
    assert written == ["maths/rope_base.py"], written


def test_what_the_score_runs_record_of_a_token_set_leaves_its_tokens_alone():
    """The token sets' job reads a set's size, sampling and first token; editing which layers its runs record,
    per_head or models must not rewrite the tokens (and with them rerun every score run of the model)."""
    from behind_rope.experiments.paths import token_set_files
    from behind_rope.experiments.steps import llm_input_settings

    config = configuration.load()
    edited = copy.deepcopy(config)
    edited["llm"]["inputs"]["long"].update(layers=6, per_head=False, models=["gemma3"])
    edited["llm"]["inputs"]["fig5"]["layers"] = 2
    for model in config["llm"]["models"]:
        assert llm_input_settings(edited, model) == llm_input_settings(config, model)
    edited["llm"]["inputs"]["long"]["first_token"] = None  # how the tokens are drawn does count
    assert llm_input_settings(edited, "gemma3") != llm_input_settings(config, "gemma3")
    # The score runs of a pretrained LLM declare how their tokens were drawn (the claims read it); a twin's have none.
    assert token_set_files(config, "gemma3.bos_mean", "first") == ["results/inputs/gemma3/first.json"]
    assert token_set_files(config, "nope", "random") == []


def test_nested_command_line_values_are_read_as_yaml_as_a_config_files_are():
    from behind_rope.config import typed_command_line

    # What Snakemake hands over for --config simulation='{batch_size: 100, alphas: [0.0, 0.5]}' llm=... seed=3
    given = {"simulation": {"batch_size": "100", "alphas": ["0.0", "0.5"], "name": "rope"}, "seed": 3,
             "llm": {"dtype": "auto", "models": ["smollm2"], "device": "null", "batch_size": "auto"}}
    assert typed_command_line(given) == {
        "simulation": {"batch_size": 100, "alphas": [0.0, 0.5], "name": "rope"}, "seed": 3,
        "llm": {"dtype": "auto", "models": ["smollm2"], "device": None, "batch_size": "auto"}}
    assert typed_command_line({"note": "100"}) == {"note": "100"}  # a top-level value is Snakemake's to type


def test_a_nested_command_line_value_is_checked_as_its_yaml_value(tmp_path):
    from conftest import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path / "workflow")
    assert snakemake(workdir, "-n", "--config", "simulation={batch_size: 100}", check=False).returncode == 0
    refused = snakemake(workdir, "-n", "--config", "simulation={batch_size: 1}", check=False)
    assert refused.returncode != 0
    assert "'simulation.batch_size' is 1, but it must be an integer >= 2" in refused.stdout + refused.stderr


def test_a_config_file_that_cannot_be_read_is_named_in_one_sentence_with_its_line(tmp_path):
    from behind_rope.pipeline.configfiles import problem
    from conftest import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path / "workflow")
    (workdir / "config" / "broken.yaml").write_text("simulation:\n  batch_size: 100\n\tseed: 2\n")  # a tab
    (workdir / "config" / "list.yaml").write_text("- a\n- b\n")
    said = {name: (done := snakemake(workdir, "-n", "--configfile", f"config/{name}.yaml", check=False)).stdout
            + done.stderr for name in ("missing", "broken", "list")}
    assert "The config file config/missing.yaml does not exist; check the path given to --configfile." in said["missing"]
    assert re.search(r"The config file config/broken\.yaml is not valid YAML at line 3, column 1 \([^)]*\); fix it "
                     r"there\.", said["broken"]), said["broken"]
    assert "The config file config/list.yaml holds a list, not keys and values" in said["list"]
    assert not any("Traceback" in text for text in said.values()) and not (workdir / "results").exists()
    assert problem(workdir / "config" / "config.yaml") is None


def test_validation_changes_nothing_it_is_given_and_fills_in_a_copy():
    from behind_rope.config import BASE_FILES, check, complete, load_yaml, merge

    raw = {}
    for name in (*BASE_FILES, "config/smoke.yaml"):
        raw = merge(raw, load_yaml((ROOT / name).read_text()))
    raw["llm"]["add_models"] = ["qwen2_5_coder"]  # a shorthand that completing resolves
    before = copy.deepcopy(raw)
    check(raw)
    completed = validate(raw)
    assert raw == before
    assert completed == complete(raw) == validate(completed)  # completing twice changes nothing more
    assert "add_models" not in completed["llm"] and "seeds" not in completed["training"]["twins"]["nope"]
    assert raw == before
