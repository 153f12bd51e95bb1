"""The authors' NoPE checkpoint read as a twin (behind_rope.twins.checkpoint), on a random-weights Llama of its
architecture and a few local documents standing in for the FineWeb-Edu sample: no hub here."""

import json

import numpy as np
import pytest
import torch

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
