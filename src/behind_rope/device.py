"""Where the models run: one function, so that training does not import the score capture (and is not
rerun, by its code digest, when the capture changes)."""

from __future__ import annotations

import torch


def pick_device(requested: str = "auto") -> tuple[torch.device, torch.dtype]:
    """CUDA with bf16 when a GPU is there (or asked for), else CPU with float32."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    return device, torch.bfloat16 if device.type == "cuda" else torch.float32
