"""oneDNN's float32 kernels for the linear layers of a forward pass on a CPU.

PyTorch's CPU build computes a float32 ``nn.Linear`` with MKL's sgemm, which on this project's AMD hosts
reaches about 0.8 of what oneDNN (also in every PyTorch CPU build) reaches on the same products once
a weight is packed in its blocked layout (measured side by side: docs/performance.md).  The score
runs and the patching spend most of their time in these products.  The arithmetic is the same:
float32 products summed in float32, in another order, so the results agree to float32 rounding, as
another CPU's kernels would; a row's result does not depend on the other rows of the batch.

Nothing changes on a GPU, on a CPU other than x86-64, in another dtype, with autograd on, or under a
PyTorch without these operators (they are the ones its own compiler uses for frozen CPU models).
"""

from __future__ import annotations

import platform
from contextlib import contextmanager

import torch


def onednn_available() -> bool:
    """On an x86-64 CPU (the hosts measured; on ARM, oneDNN runs other back ends) with the operators present."""
    ops = torch.ops.mkldnn
    return (platform.machine().lower() in ("x86_64", "amd64") and torch.backends.mkldnn.is_available()
            and all(hasattr(ops, name) for name in ("_reorder_linear_weight", "_linear_pointwise")))


def packed_linear(weight: torch.Tensor, bias: torch.Tensor | None):
    """``inputs -> inputs @ weight^T + bias`` with oneDNN, on a copy of ``weight`` packed once, here."""
    packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach())
    bias = None if bias is None else bias.detach()

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        if inputs.dtype != torch.float32 or torch.is_autocast_enabled("cpu"):  # as the stock layer would
            return torch.nn.functional.linear(inputs, weight, bias)
        return torch.ops.mkldnn._linear_pointwise(inputs, packed, bias, "none", [], "")

    return forward


def packable(module: torch.nn.Module) -> bool:
    return (isinstance(module, torch.nn.Linear) and module.weight.device.type == "cpu"
            and module.weight.dtype == torch.float32 and not torch.is_grad_enabled())


@contextmanager
def onednn_linears(layers):
    """Within the block, every float32 ``nn.Linear`` in ``layers`` (modules, e.g. the decoder layers a pass
    runs) computes with a packed copy of its weight; afterwards they are as they were.  Blocks may nest.

    The packed copies take as much memory as the weights they copy, so pass only the layers that run.
    The weights must not change inside the block (it runs under ``torch.no_grad``).
    """
    # A layer packed by an enclosing block already is left to that block.
    linears = [module for layer in layers for module in layer.modules()
               if packable(module) and "forward" not in module.__dict__]
    if not onednn_available():
        linears = []
    for module in linears:
        module.forward = packed_linear(module.weight, module.bias)  # an instance attribute: hooks still run
    try:
        yield len(linears)
    finally:
        for module in linears:
            del module.forward
