"""Where the models run: one function, so that training does not import the score capture (and is not
rerun, by its code digest, when the capture changes)."""

from __future__ import annotations

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def pick_device(requested: str = "auto", dtype: str = "auto") -> tuple[torch.device, torch.dtype]:
    """CUDA when a GPU is there (or asked for), else CPU; ``dtype`` auto is bf16 on CUDA and float32 on CPU."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(requested)
    if dtype == "auto":
        return device, torch.bfloat16 if device.type == "cuda" else torch.float32
    return device, DTYPES[dtype]
