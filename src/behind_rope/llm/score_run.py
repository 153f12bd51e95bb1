"""One score run: a model (a trained twin, or a pretrained LLM with its variant's change at inference) read
through the score capture (behind_rope.capture.scores) on one token set, and the metadata its file carries.

A model variant's change to the input embedding is :func:`embedding_replacement`; its NTK-aware scaling of
the RoPE base is made as the model loads (behind_rope.llm.loading).
"""

from __future__ import annotations

import json

import numpy as np
import torch

from behind_rope.capture.scores import record_scores
from behind_rope.device import pick_device
from behind_rope.maths.rope_base import NTK_FACTOR

REPLACEMENTS = ("mean", "token", "random", "zero", "identity")


def embedding_replacement(model, position: int, replacement: str, token_id: int | None = None, seed: int = 0):
    """A function from token ids to input embeddings with the embedding at ``position`` replaced, before the
    forward pass: by the mean embedding of the vocabulary, by the embedding of ``token_id``, by that of a
    token drawn uniformly with ``seed`` (``random``), by zeros, or by itself (``identity``, a control that
    must change nothing)."""
    embed = model.get_input_embeddings()  # Gemma's scales its output: its replacement is scaled the same way
    device = embed.weight.device
    if replacement == "random":
        replacement, token_id = "token", int(torch.randint(embed.weight.shape[0], (1,),
                                                            generator=torch.Generator().manual_seed(seed)))
    if replacement == "mean":
        ids = torch.arange(embed.weight.shape[0], device=device)
        vector = sum(embed(chunk).double().sum(0) for chunk in ids.split(16384)) / len(ids)
    elif replacement == "token":
        vector = embed(torch.tensor([token_id], device=device))[0]
    elif replacement == "zero":
        vector = torch.zeros(embed.weight.shape[1], device=device)
    elif replacement != "identity":
        raise ValueError(f"unknown embedding replacement {replacement!r}; use one of {', '.join(REPLACEMENTS)}")

    def inputs_embeds(batch: torch.Tensor) -> torch.Tensor:
        embeds = embed(batch)
        if replacement != "identity":
            embeds[:, position] = vector.to(embeds.dtype)
        return embeds

    return inputs_embeds


def load_score_model(settings: dict):
    """The model a score run (experiments.steps.score_settings) reads, with its RoPE scaling if it has one,
    and the device and dtype it runs in."""
    if settings["kind"] == "twin":
        from behind_rope.twins.model import load_twin

        return load_twin(settings["source"]["twin"]), torch.device("cpu"), torch.float32
    from behind_rope.llm.loading import load_model

    device, dtype = pick_device(settings["device"], settings["dtype"])
    ntk_factor = (settings.get("intervention") or {}).get("ntk_factor") or NTK_FACTOR
    return load_model(settings["source"], settings["model"], device, dtype, ntk_factor), device, dtype


def score_run(settings: dict, tokens_path) -> tuple[dict[str, np.ndarray], dict]:
    """One score run (experiments.steps.score_settings): load the model, record its layers on the tokens.

    Returns the recorder's arrays and the metadata every score file carries: the model and
    what pins it, the inputs, the mask, the sizes, the device and dtype, the layer types and the
    throughput.
    """
    import time
    from pathlib import Path

    from tqdm import tqdm

    change = settings.get("intervention") or {}  # a model variant's change at inference (none for a twin)
    model, device, dtype = load_score_model(settings)
    tokens = torch.from_numpy(np.load(tokens_path))
    inputs_embeds = None
    if change.get("replace_embedding"):
        from behind_rope.llm.loading import load_tokenizer

        replace = change["replace_embedding"]
        token_id = None
        if replace["with"] == "token":
            token_id = load_tokenizer(settings["source"])(" the", add_special_tokens=False).input_ids[-1]
        inputs_embeds = embedding_replacement(model, replace["position"], replace["with"], token_id,
                                              replace.get("seed", 0))
    config = model.config.get_text_config()
    total = config.num_hidden_layers
    layers = range(total if settings["layers"] == "all" else min(int(settings["layers"]), total))
    batch_size = settings["batch_size"]
    if batch_size == "auto":
        from behind_rope.llm.loading import auto_batch_size

        batch_size = auto_batch_size(model, tokens.shape[1], device)
    started = time.perf_counter()
    with tqdm(total=len(tokens), desc=f"{settings['model']} ({device.type}, batch {batch_size})", unit="seq",
              mininterval=2.0) as bar:
        recorder = record_scores(model, tokens.split(int(batch_size)), layers, causal=settings["causal"], progress=bar,
                                 inputs_embeds=inputs_embeds, per_head=settings.get("per_head", False),
                                 query_offsets=settings.get("query_offsets", False),
                                 leakage=settings.get("leakage", False),
                                 value_paths=settings.get("value_paths", False),
                                 score_groups=settings.get("score_groups", False))
    seconds = time.perf_counter() - started
    # How long it took goes to the job's log (and Snakemake's benchmark file), not into the result: the same scores
    # make the same file, byte for byte.  The sums do not depend on the batch size (ScoreRecorder).
    print(f"{settings['model']}: {len(tokens)} sequences in {seconds:.1f} s ({tokens.numel() / seconds:,.0f} tokens/s, "
          f"batches of {batch_size})")
    metadata = {
        "model": settings["model"], "kind": settings["kind"], "inputs": settings["inputs"], "causal": settings["causal"],
        "sequences": len(tokens), "seq_len": tokens.shape[1], "tokens": int(tokens.numel()),
        "dtype": str(dtype).removeprefix("torch."), "device": device.type, "layers_total": total,
    }
    # How the tokens were drawn: llm-inputs writes it, and the score rule declares it (experiments.paths.token_set_files).
    token_set = Path(tokens_path).with_suffix(".json")
    if token_set.is_file():
        metadata["token_set"] = json.loads(token_set.read_text())
    if settings["kind"] == "llm":  # pretrained models may mix full and sliding-window attention
        layer_types = getattr(config, "layer_types", None) or ["full_attention"] * total
        from behind_rope.llm.loading import parameter_count

        metadata |= {"architecture": config.model_type, "parameters": parameter_count(model),
                     "provenance": settings["provenance"],
                     "intervention": settings.get("intervention"),
                     "layer_types": [layer_types[i] for i in layers],
                     "sliding_window": getattr(config, "sliding_window", None)}
    return recorder.result(), metadata
