"""Every recipe of docs/extending.md, run as written on a copy of the smoke-scale run.

Each recipe's files come from its `# file:` / `# append to:` blocks and its command from its
`snakemake` line (with config/smoke.yaml put first among the config files), so the page cannot
drift from what works.
"""

import json
import re
import shlex
import shutil

import numpy as np
import pytest

from conftest import ROOT, copy_run_with_models, snakemake

PAGE = (ROOT / "docs" / "extending.md").read_text()


def recipes() -> dict[str, dict]:
    """{section title: {"files": [(mode, path, text)], "commands": [argv]}} for each section with a command."""
    found = {}
    for section in re.split(r"(?m)^## ", PAGE)[1:]:
        title, body = section.split("\n", 1)
        files, commands = [], []
        for language, block in re.findall(r"```(\w+)\n(.*?)```", body, flags=re.S):
            head, _, rest = block.partition("\n")
            target = re.match(r"# (file|append to): (\S+)$", head)
            if target:
                files.append((target[1], target[2], rest))
            elif language == "bash":
                commands += [shlex.split(line) for line in block.splitlines() if line.startswith("snakemake ")]
        if commands:
            found[title.strip()] = {"files": files, "commands": commands}
    return found


RECIPES = recipes()


def with_smoke_config(argv: list[str]) -> list[str]:
    """The recipe's command at the smoke scale: config/smoke.yaml first, then the recipe's own config files."""
    args = argv[1:]
    if "--configfile" in args:
        at = args.index("--configfile") + 1
        return [*args[:at], "config/smoke.yaml", *args[at:]]
    return [*args, "--configfile", "config/smoke.yaml"]


@pytest.fixture(scope="module")
def workdir(smoke_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("extending")
    yield copy_run_with_models(smoke_run, folder / "run")
    shutil.rmtree(folder, ignore_errors=True)  # the recipes' extra models: free the disk for the tests after


def make_local_model(folder):
    """A tiny random Llama with SmolLM2's tokenizer, saved as a Hugging Face folder (the recipe's `local:`)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(folder.parents[1] / "results" / "models" / "smollm2" / "tokenizer")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def outputs_of(workdir, title):
    """What each recipe must have made."""
    if title == "A simulation variant":
        with np.load(workdir / "results/scores/simulation/rope_theta500k_alpha0.0.npz") as data:
            assert json.loads(str(data["metadata"]))["variant"]["rope_theta"] == 500000
        return ["results/metrics/simulation/rope_theta500k_alpha0.0.json"]
    if title == "A new experiment: a twin variant":
        config = json.loads((workdir / "results/training/rope_theta500k/config.json").read_text())
        assert config["rope_parameters"]["rope_theta"] == 500000
        return ["results/metrics/rope_theta500k/text_causal.json"]
    if title == "A new run of the pretrained LLMs":
        with np.load(workdir / "results/scores/smollm2/pieces_noncausal.npz") as data:
            assert data["mean_scores"].shape == (2, 128, 128) and np.isfinite(data["mean_scores"]).all()
        return ["results/metrics/smollm2/pieces_noncausal.json"]
    if title == "A model":
        return ["figures/figS_llm_my_llama_all_layers.png", "results/scores/my_llama/alllayers_causal.npz"]
    if title == "A figure":
        return ["figures/figS_key_slopes.png", "figures/figS_key_slopes.pdf"]
    raise AssertionError(f"docs/extending.md has a recipe this test does not know: {title!r}")


def test_the_page_has_every_recipe():
    assert set(RECIPES) == {"A simulation variant", "A new experiment: a twin variant",
                            "A new run of the pretrained LLMs", "A model", "A figure"}


@pytest.mark.parametrize("title", sorted(RECIPES))
def test_a_recipe_works_as_written(workdir, title):
    recipe = RECIPES[title]
    for mode, path, text in recipe["files"]:
        target = workdir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(target.read_text() + text if mode == "append to" else text)
    if title == "A model":
        make_local_model(workdir / "models" / "my_llama")
    for argv in recipe["commands"]:
        assert argv[0] == "snakemake"
        snakemake(workdir, *with_smoke_config(argv))
    for output in outputs_of(workdir, title):
        assert (workdir / output).stat().st_size > 0, output
    # As written, at the default scale: the config is valid and the DAG plans (running it is a cold run).
    for argv in recipe["commands"]:
        plan = snakemake(workdir, *argv[1:], "--dry-run")
        assert "This was a dry-run" in plan.stdout, plan.stdout[-2000:]
