"""The two small twins: one decoder with RoPE, one without (NoPE), identical otherwise.

Both are transformers' SmolLM3 classes.  SmolLM3 is the Llama decoder (RMSNorm, SwiGLU, GQA; its
modelling code is generated from Llama's) plus a per-layer config switch, ``no_rope_layers``,
that skips the rotary embedding.  So NoPE is a config setting, not a patch, and with the switch
on every layer the model computes exactly what ``LlamaForCausalLM`` computes (tested).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from behind_rope.maths.rope_base import ROPE_THETA

POSITIONAL = ("nope", "rope")


@dataclass(frozen=True)
class TwinSize:
    vocab_size: int
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    max_positions: int
    rope_theta: float = ROPE_THETA


def twin_config(size: TwinSize, positional: str):
    from transformers import SmolLM3Config

    if positional not in POSITIONAL:
        raise ValueError(f"positional encoding must be one of {POSITIONAL}, got {positional!r}")
    return SmolLM3Config(
        vocab_size=size.vocab_size,
        hidden_size=size.hidden_size,
        intermediate_size=size.intermediate_size,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads,
        head_dim=size.head_dim,
        max_position_embeddings=size.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": size.rope_theta},
        no_rope_layers=[int(positional == "rope")] * size.layers,
        tie_word_embeddings=True,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        attn_implementation="sdpa",
    )


def build_twin(size: TwinSize, positional: str, seed: int):
    """A freshly initialised twin; the same seed gives the NoPE and RoPE twins the same weights."""
    from transformers import SmolLM3ForCausalLM

    torch.manual_seed(seed)
    return SmolLM3ForCausalLM(twin_config(size, positional))


def uses_rope(model) -> bool:
    return any(layer.self_attn.use_rope for layer in model.model.layers)


def weights(model) -> dict[str, torch.Tensor]:
    """The tensors a checkpoint stores: the tied output layer is the embedding, so it is left out."""
    return {key: value.detach().cpu().contiguous() for key, value in model.state_dict().items() if key != "lm_head.weight"}


def match_weight_scale(model, reference: dict[str, torch.Tensor]) -> dict[str, float]:
    """Scale every weight tensor of ``model`` to the root mean square of the same tensor in ``reference`` (a trained
    twin's :func:`weights`), keeping its direction; returns each tensor's factor.  An untrained twin scaled so
    differs from the trained one in what training learned, not in the size of its weights and so of its logits.
    A tensor that is all zeros stays so (it has no direction to scale)."""
    factors = {}
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name not in reference or reference[name].shape != parameter.shape:
                raise ValueError(f"The reference weights have no tensor {name!r} of shape {tuple(parameter.shape)}: "
                                 "weight_scale_of must name a twin of the same model.")
            own, target = (float(t.float().pow(2).mean().sqrt()) for t in (parameter, reference[name]))
            factors[name] = target / own if own > 0 else 1.0
            parameter.mul_(factors[name])
    return factors


def save_twin(model, folder: str | Path, metadata: dict) -> None:
    """Weights in safetensors plus the model config and ``metadata``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(weights(model), folder / "model.safetensors", metadata={"format": "pt"})
    (folder / "config.json").write_text(model.config.to_json_string())
    (folder / "training.json").write_text(json.dumps(metadata, indent=2) + "\n")


def load_twin(folder: str | Path, attn_implementation: str = "sdpa"):
    from transformers import SmolLM3Config, SmolLM3ForCausalLM

    folder = Path(folder)
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(f"No trained twin in {folder}; run its training rule first.")
    config = SmolLM3Config.from_json_file(str(folder / "config.json"))
    config._attn_implementation = attn_implementation
    model = SmolLM3ForCausalLM(config)
    load_weights(model, load_file(folder / "model.safetensors"), f"{folder}/model.safetensors")
    return model.eval()


def load_weights(model, tensors: dict[str, torch.Tensor], source: str) -> None:
    """Load the tensors :func:`weights` stored, every one of them, into ``model``, and tie its output layer."""
    missing, unexpected = model.load_state_dict(tensors, strict=False)  # the tied output layer is not stored
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise ValueError(f"{source} does not match the model (missing {missing}, unexpected {unexpected}).")
    model.tie_weights()

