"""A NoPE checkpoint from the hub, read as a twin: a Llama decoder trained without RoPE, in the twins' classes.

The authors' model (``starmpcc/NoPE_1.5B_FW_EDU_15T``) is the Llama-3 decoder trained with the rotary
embedding removed.  The twins are transformers' SmolLM3 classes: the Llama decoder, with the same module and
weight names, plus a per-layer config switch, ``no_rope_layers``, that skips the rotary embedding.  With the
Llama config's sizes and the switch off on every layer, SmolLM3 computes what that model computes (tested
against Llama with its rotation made the identity), so the checkpoint becomes a twin folder (``config.json``
and ``model.safetensors``, as :func:`behind_rope.twins.model.load_twin` reads them) and every twin step (score
runs, Figure 3's Gram matrices) reads it unchanged.  Nothing in transformers is patched.

Its token sets are the first tokens of documents of a dataset sample in its own tokenizer, and i.i.d. tokens
drawn with the frequencies of the sample's other documents (:func:`checkpoint_input_sets`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from behind_rope import atomic
from behind_rope.data.fetch import FetchError
from behind_rope.maths.rope_base import ROPE_THETA
from behind_rope.twins.model import TwinSize, twin_config

WEIGHTS = "model.safetensors"


class CheckpointError(FetchError):
    """A checkpoint cannot be read as a NoPE twin (the command line prints its one sentence)."""


def nope_config(llama):
    """The SmolLM3 config of a Llama config (``transformers.LlamaConfig``) with the rotary embedding off in every layer."""
    if llama.model_type != "llama":
        raise CheckpointError(f"The checkpoint has architecture {llama.model_type!r}; only a Llama decoder trained "
                              "without RoPE can be read as a NoPE twin.")
    head_dim = getattr(llama, "head_dim", None) or llama.hidden_size // llama.num_attention_heads
    theta = (getattr(llama, "rope_parameters", None) or {}).get("rope_theta", ROPE_THETA)  # unused: no layer rotates
    size = TwinSize(vocab_size=llama.vocab_size, hidden_size=llama.hidden_size, layers=llama.num_hidden_layers,
                    heads=llama.num_attention_heads, kv_heads=llama.num_key_value_heads, head_dim=head_dim,
                    intermediate_size=llama.intermediate_size, max_positions=llama.max_position_embeddings,
                    rope_theta=float(theta))
    config = twin_config(size, "nope")
    # What a twin leaves at SmolLM3's defaults, the checkpoint may set otherwise.
    for key in ("hidden_act", "initializer_range", "rms_norm_eps", "attention_bias", "mlp_bias", "tie_word_embeddings",
                "pad_token_id", "bos_token_id", "eos_token_id"):
        setattr(config, key, getattr(llama, key))
    config.use_sliding_window = False
    return config


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a Hugging Face folder: those its index names, or its one ``model.safetensors``."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return [folder / name for name in sorted(set(json.loads(index.read_text())["weight_map"].values()))]
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    raise CheckpointError(f"{folder} has no {WEIGHTS} and no safetensors index; fetch the checkpoint again.")


def stored_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    from safetensors import safe_open

    shapes = {}
    for path in files:
        with safe_open(path, "pt") as stored:
            shapes |= {key: tuple(stored.get_slice(key).get_shape()) for key in stored.keys()}
    return shapes


def expected_shapes(config) -> dict[str, tuple[int, ...]]:
    """The tensors a twin of ``config`` loads (a tied output layer is the embedding, and is not stored)."""
    import torch
    from transformers import SmolLM3ForCausalLM

    with torch.device("meta"):  # the names and shapes only: no memory, no initialisation
        model = SmolLM3ForCausalLM(config)
    skipped = {"lm_head.weight"} if config.tie_word_embeddings else set()
    return {key: tuple(value.shape) for key, value in model.state_dict().items() if key not in skipped}


def convert_checkpoint(folder: str | Path, output_dir: str | Path, record: dict | None = None) -> dict:
    """Write the Llama checkpoint in ``folder`` as a NoPE twin into ``output_dir``: its SmolLM3 config, its weights
    (a hard link to the one weight file where it can be, else one file merged from the shards) and
    ``checkpoint.json`` (where it came from: the fetch's record, with the commit).  Returns that record."""
    from transformers import LlamaConfig

    folder, output_dir = Path(folder), Path(output_dir)
    if not (folder / "config.json").is_file():
        raise CheckpointError(f"{folder} has no config.json; point the checkpoint's pretrained entry at a Hugging Face folder.")
    llama = LlamaConfig.from_pretrained(folder)
    config = nope_config(llama)
    files = weight_files(folder)
    stored, expected = stored_shapes(files), expected_shapes(config)
    extra = sorted(set(stored) - set(expected) - {"lm_head.weight"})
    missing = sorted(set(expected) - set(stored))
    wrong = sorted(key for key in set(stored) & set(expected) if stored[key] != expected[key])
    if extra or missing or wrong:
        raise CheckpointError(f"The weights in {folder} do not match a Llama decoder of its config (missing {missing[:3]}, "
                              f"unexpected {extra[:3]}, other shapes {wrong[:3]}); it cannot be read as a NoPE twin.")
    with atomic.atomic_path(output_dir / WEIGHTS) as tmp:
        if len(files) == 1 and set(stored) == set(expected):
            os.remove(tmp)
            try:  # the same bytes: a link costs no disk (a 1.5B model in bf16 is 3 GB)
                os.link(files[0], tmp)
            except OSError:
                shutil.copyfile(files[0], tmp)
        else:  # shards, or a tied output layer stored beside the embedding: one file of what the twin loads
            from safetensors.torch import load_file, save_file

            tensors = {key: value for path in files for key, value in load_file(path).items() if key in expected}
            save_file(tensors, tmp, metadata={"format": "pt"})
    atomic.write_text(output_dir / "config.json", config.to_json_string())
    provenance = {"source": str(folder), "architecture": "llama", "read_as": "smollm3, no_rope_layers all 0",
                  "tensors": len(expected), "parameters": int(sum(np.prod(shape) for shape in expected.values())),
                  "hub": record}
    atomic.write_json(output_dir / "checkpoint.json", provenance)
    return provenance


def checkpoint_input_sets(corpus_dir, files: list[str], tokenizer_dir, vocab_size: int, seq_len: int, sequences: int,
                          documents: int, seed: int) -> tuple[dict[str, np.ndarray], dict]:
    """A checkpoint's token sets in its own tokenizer, from the first ``documents`` documents of a dataset sample.

    ``text``: the first ``seq_len`` tokens (BOS first where the tokenizer adds one, as ``tokenizer.encode(text)``
    gives them) of ``sequences`` documents, a seeded draw among those long enough.  ``random``: i.i.d. tokens
    with the frequencies of the other documents read (no BOS), so that only the mask can make positions
    differ.  The text documents are held out of those frequencies, as the twins' held-out split is held out of
    their training split; whether the checkpoint's own training saw them cannot be known from the sample.
    """
    from transformers import AutoTokenizer

    from behind_rope.data.corpus import bos_prefix
    from behind_rope.data.hub import read_parquet_texts
    from behind_rope.twins.vocabulary import unigram_tokens

    texts = read_parquet_texts(corpus_dir, files, documents)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    names = list(texts)
    encoded = tokenizer(list(texts.values()), add_special_tokens=False).input_ids
    prefix = bos_prefix(tokenizer)
    eligible = [i for i, ids in enumerate(encoded) if len(prefix) + len(ids) >= seq_len]
    if len(eligible) < sequences + 1:
        raise CheckpointError(f"The first {len(texts)} documents of the sample hold {len(eligible)} of {seq_len} tokens or "
                              f"more, but {sequences} are asked for and some must be left for the token frequencies; "
                              "raise the twin's inputs.documents.")
    chosen = sorted(eligible[i] for i in np.random.default_rng(seed).choice(len(eligible), size=sequences, replace=False))
    text = np.asarray([(prefix + encoded[i])[:seq_len] for i in chosen], dtype=np.int64)
    held_out = set(chosen)
    pool = np.concatenate([np.asarray(ids, dtype=np.int64) for i, ids in enumerate(encoded) if i not in held_out and ids])
    if pool.max() >= vocab_size:
        raise CheckpointError(f"The tokenizer in {tokenizer_dir} gives ids up to {int(pool.max())}, beyond the model's "
                              f"{vocab_size} embeddings; the tokenizer is not the model's.")
    random = unigram_tokens(pool, vocab_size, (sequences, seq_len), seed)
    stats = {"documents_read": len(texts), "long_enough": len(eligible), "text_documents": [names[i] for i in chosen],
             "frequency_documents": len(texts) - len(chosen), "frequency_tokens": int(pool.size),
             "bos_prefix": len(prefix), "first_token": tokenizer.convert_ids_to_tokens(prefix[0]) if prefix else None,
             "seq_len": seq_len, "sequences": sequences, "files": list(files)}
    return {"text": text, "random": random}, stats


def write_checkpoint_inputs(output_dir: str | Path, sets: dict[str, np.ndarray], stats: dict) -> None:
    output_dir = Path(output_dir)
    for name, tokens in sets.items():
        atomic.write_npy(output_dir / f"{name}.npy", tokens)
    atomic.write_json(output_dir / "inputs.json", stats)
