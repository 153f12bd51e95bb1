"""The authors' NoPE checkpoint read as a twin (behind_rope.twins.checkpoint), on a random-weights Llama of its
architecture and a few local documents standing in for the FineWeb-Edu sample: no hub here."""

import json
import re

import numpy as np
import pytest
import torch

from conftest import copy_workflow, snakemake

TWIN, PRETRAINED, CORPUS = "nope_authors", "nope_1_5b", "fineweb_edu"  # as config/paper.yaml names them
WORDS = [f"w{i}" for i in range(80)]


def save_tokenizer(folder):
    """A word-level tokenizer that puts BOS in front of text, as the checkpoint's Llama tokenizer does."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocabulary = {word: i for i, word in enumerate(["<s>", "</s>", "[UNK]", *WORDS])}
    tokenizer = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                            unk_token="[UNK]").save_pretrained(folder)
    return len(vocabulary)


def save_checkpoint(folder, tied=False, seed=0):
    """A Llama of the checkpoint's shape cut down (head_dim 64, four query heads per KV head, untied LM head) with
    random weights, saved as the hub holds it: config.json, model.safetensors and the tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab_size = save_tokenizer(folder)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=256, intermediate_size=512, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=1024,
                         tie_word_embeddings=tied, bos_token_id=0, eos_token_id=1)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # trained-looking norms, so that a wrong norm weight would show
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.uniform_(0.5, 1.5)
    model.save_pretrained(folder)
    return folder


def save_documents(path, count=40, seed=0):
    """Parquet with a text column, as FineWeb-Edu's shards: documents of 10 to 120 words, and an empty one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    weights = np.linspace(2, 1, len(WORDS))
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(10, 120), p=weights / weights.sum())) for _ in range(count)]
    texts.insert(3, "  ")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [str(i) for i in range(len(texts))], "text": texts}), path)
    return texts


def llama_without_rotation(folder):
    """The model the checkpoint's card means, built without its patch: Llama whose rotation is the identity
    (every frequency zero: cos = 1, sin = 0), here by setting the rotary module's buffer in this test only."""
    from transformers import LlamaForCausalLM

    llama = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    llama.model.rotary_emb.inv_freq.zero_()
    return llama


def test_a_llama_trained_without_rope_reads_as_a_twin_that_computes_what_llama_without_rotation_computes(tmp_path):
    from behind_rope.__main__ import main
    from behind_rope.twins.model import load_twin, uses_rope

    folder = save_checkpoint(tmp_path / "hf")
    main(["checkpoint-twin", "--model", str(folder), "--output-dir", str(tmp_path / "twin")])
    twin = load_twin(tmp_path / "twin")
    assert not uses_rope(twin) and type(twin).__name__ == "SmolLM3ForCausalLM"
    # The one weight file is the checkpoint's own, linked: the twin reads the same bytes.
    assert (tmp_path / "twin" / "model.safetensors").stat().st_ino == (folder / "model.safetensors").stat().st_ino
    provenance = json.loads((tmp_path / "twin" / "checkpoint.json").read_text())
    assert provenance["read_as"].startswith("smollm3") and provenance["hub"] is None
    from transformers import LlamaForCausalLM

    tokens = torch.randint(3, 80, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = twin(tokens).logits
        torch.testing.assert_close(logits, llama_without_rotation(folder)(tokens).logits)
        # Not a test that passes whatever the switch does: the same weights with RoPE compute something else.
        with_rope = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()(tokens).logits
    assert (logits - with_rope).abs().max() > 1e-3


def test_a_tied_or_sharded_checkpoint_is_merged_into_one_file_and_a_wrong_one_is_refused_in_one_sentence(tmp_path):
    from safetensors.torch import load_file, save_file

    from behind_rope.data.fetch import FetchError
    from behind_rope.twins.checkpoint import convert_checkpoint

    folder = save_checkpoint(tmp_path / "hf", tied=True)
    tensors = load_file(folder / "model.safetensors")
    save_file({**tensors, "lm_head.weight": tensors["model.embed_tokens.weight"].clone()}, folder / "model.safetensors",
              metadata={"format": "pt"})  # a tied output layer stored all the same
    convert_checkpoint(folder, tmp_path / "twin")
    assert "lm_head.weight" not in load_file(tmp_path / "twin" / "model.safetensors")
    del tensors["model.norm.weight"]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(FetchError, match="do not match a Llama decoder") as error:
        convert_checkpoint(folder, tmp_path / "broken")
    assert "\n" not in str(error.value)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "qwen2"}))
    with pytest.raises(FetchError, match="only a Llama decoder trained without RoPE"):
        convert_checkpoint(folder, tmp_path / "broken")


def paper_config_on(folder, sequences=8, documents=30):
    """config/paper.yaml with the checkpoint read from a local folder, and a smaller draw for the stand-in."""
    from behind_rope.config import load, validate

    config = load("config/paper.yaml")
    assert config["pretrained"][PRETRAINED]["hub"] == "starmpcc/NoPE_1.5B_FW_EDU_15T"
    config["pretrained"][PRETRAINED] = {"local": str(folder)}
    config["training"]["twins"][TWIN]["inputs"] |= {"sequences": sequences, "documents": documents}
    return validate(config)


def test_the_checkpoint_path_runs_on_random_weights_from_its_tokens_to_scores_and_gram_matrices(tmp_path, monkeypatch):
    from behind_rope import atomic
    from behind_rope.__main__ import main
    from behind_rope.experiments.paths import (
        checkpoint_input_files,
        checkpoint_sources,
        claims_metric_files,
        corpus_archive,
        score_model_files,
    )
    from behind_rope.experiments.runs import c3_twin_runs, checkpoint_twins, figure3_twin
    from behind_rope.experiments.steps import checkpoint_input_settings, measures_settings, score_settings

    folder = save_checkpoint(tmp_path / "hf")
    monkeypatch.chdir(tmp_path)
    config = paper_config_on(folder)
    corpus = corpus_archive(config, CORPUS)
    [shard] = config["data"]["corpora"][CORPUS]["files"]
    texts = save_documents(tmp_path / corpus / shard)
    assert figure3_twin(config) == TWIN and checkpoint_twins(config) == [TWIN]

    sources = checkpoint_sources(config, TWIN)
    assert sources == {"model": str(folder)}  # a local folder: no fetch record
    twin_dir = str(tmp_path / "results" / "training" / TWIN)
    main(["checkpoint-twin", "--model", sources["model"], "--output-dir", twin_dir])
    inputs = checkpoint_input_files(config, TWIN)
    inputs_dir = tmp_path / "results" / "inputs" / TWIN
    main(["checkpoint-inputs", "--settings", json.dumps(checkpoint_input_settings(config, TWIN)),
          "--corpus", inputs["corpus"], "--model", inputs["model"], "--output-dir", str(inputs_dir)])
    text, random = np.load(inputs_dir / "text.npy"), np.load(inputs_dir / "random.npy")
    stats = json.loads((inputs_dir / "inputs.json").read_text())
    assert text.shape == random.shape == (8, 50) and (text[:, 0] == 0).all()  # the first 50 tokens, BOS first
    # Each text row is the start of a document of the stand-in, at least 49 words long.
    chosen = [int(name.rsplit(":", 1)[1]) for name in stats["text_documents"]]
    assert all(len(texts[row].split()) >= 49 for row in chosen) and stats["documents_read"] == 30
    assert [list(row[1:4] - 3) for row in text] == [[WORDS.index(w) for w in texts[row].split()[:3]] for row in chosen]
    assert (random >= 3).all() and (random != 0).all()  # i.i.d. words, no BOS, no other special token

    scores_file = tmp_path / "results" / "scores" / TWIN / "random_causal.npz"
    settings = score_settings(config, TWIN, "random", "causal")
    assert settings["source"] == {"twin": f"results/training/{TWIN}"} and score_model_files(config, TWIN) == [
        f"results/training/{TWIN}/model.safetensors"]
    main(["scores", "--settings", json.dumps(settings), "--tokens", str(inputs_dir / "random.npy"),
          "--output", str(scores_file)])
    scores = atomic.read_npz(scores_file)
    assert scores["mean_scores"].shape == (3, 50, 50) and np.isnan(scores["mean_scores"][:, 0, 1]).all()
    main(["metrics", "--settings", json.dumps(measures_settings(config)), "--input", str(scores_file),
          "--output", str(tmp_path / "metrics.json")])
    assert len(atomic.read_json(tmp_path / "metrics.json")["layers"]) == 3

    gram = tmp_path / "results" / "gram" / f"{TWIN}.npz"
    main(["gram", "--model-dir", twin_dir, "--tokens", str(inputs_dir / "text.npy"), "--output", str(gram)])
    panels = atomic.read_npz(gram)
    assert json.loads(str(panels["check"]))["passed"] and panels["i"].shape == (50, 50)

    # C3's runs read the checkpoint's runs beside the twins' seeds, and its metrics are inputs of the claims.
    runs = c3_twin_runs(config)["checkpoint"][TWIN]
    assert runs["probe"] == f"{TWIN}/random_causal" and runs["probe_no_mask"] == f"{TWIN}/random_noncausal"
    assert f"results/metrics/{TWIN}/random_causal.json" in claims_metric_files(config)


def test_a_checkpoint_twin_is_refused_without_a_checkpoint_or_a_hub_dataset_in_one_sentence():
    import copy

    from behind_rope.config import ConfigError, load, validate

    paper = load("config/paper.yaml")
    for edit, said in [
        (lambda c: c["training"]["twins"][TWIN].update(pretrained="smollm2"), "must name a hub or local entry"),
        (lambda c: c["training"]["twins"][TWIN]["inputs"].update(corpus="sotu"), "must name a hub dataset"),
        (lambda c: c["training"]["twins"][TWIN].update(steps=10), "it is not trained here"),
        (lambda c: c["twin_analysis"].update(checkpoint="nope"), "must name a twin with pretrained"),
        (lambda c: c["data"].update(corpus=CORPUS), "the twins and the LLMs read a pinned package corpus"),
    ]:
        config = copy.deepcopy(paper)
        edit(config)
        with pytest.raises(ConfigError, match=re.escape(said)) as error:
            validate(config)
        assert "\n" not in str(error.value)


def test_the_default_scale_draws_figure_3_from_the_twin_and_reads_no_checkpoint():
    from behind_rope.config import load
    from behind_rope.experiments.runs import c3_twin_runs, checkpoint_twins, figure3_twin, hub_datasets

    config = load()
    assert figure3_twin(config) == "nope" and checkpoint_twins(config) == []
    assert "checkpoint" not in c3_twin_runs(config) and hub_datasets(config) == []


def planned(output: str) -> dict[str, list[dict]]:
    """{rule: [wildcards of each job]} of a dry run's printout."""
    jobs = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", output):
        rule = re.match(r"(?:local)?rule (\w+):", block)
        if rule:
            found = re.search(r"^    wildcards: (.*)$", block, flags=re.MULTILINE)
            jobs.setdefault(rule[1], []).append(dict(item.split("=", 1) for item in found[1].split(", ")) if found else {})
    return jobs


def test_a_paper_scale_dry_run_plans_the_authors_checkpoint_and_the_fineweb_edu_sample(tmp_path):
    workdir = copy_workflow(tmp_path)
    done = snakemake(workdir, "-n", "-p", "fig3_nope_gram", f"results/metrics/{TWIN}/random_causal.json",
                     "--configfile", "config/paper.yaml")
    jobs = planned(done.stdout)
    assert jobs["fetch_hub_model"] == [{"pretrained": PRETRAINED}]
    assert jobs["fetch_hub_dataset"] == [{"corpus": CORPUS}]
    assert jobs["checkpoint_twin"] == jobs["checkpoint_inputs"] == jobs["gram"] == [{"twin": TWIN}]
    assert {"train", "prepare_corpus", "twin_inputs"}.isdisjoint(jobs)  # nothing of the twins' own chain
    # The fetch is planned without a revision (the config pins none): the first fetch resolves and records it.
    assert '--settings \'{"hub": "starmpcc/NoPE_1.5B_FW_EDU_15T"}\'' in done.stdout
    assert "--record results/models/nope_1_5b/hub.json" in done.stdout
    assert '"files": ["sample/10BT/000_00000.parquet"], "repo": "HuggingFaceFW/fineweb-edu"' in done.stdout
