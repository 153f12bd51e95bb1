"""Is a twin a language model of the paper's kind?  Whether it uses the order of its context.

C3 asks how a NoPE decoder that has learned language uses position.  A NoPE model can only tell the order of
its context through the positions the causal mask gives it; a twin that never learned to use order has not
learned what C3 asks about, and its C3 statistics say nothing about the paper's claim.

The order test: predict token c+1 from tokens 0..c, once with the context in order and once with tokens
0..c-1 shuffled while token c is kept.  The order gap is the rise of the loss on token c+1, in nats.  A
bigram model (it reads token c only) and a bag-of-words model (it reads the multiset of the context) show no
rise, exactly; a model that reads word order does.  Shuffling the current token as well is not a test of
order: a bigram model fails that too.
"""

from __future__ import annotations

import math

import numpy as np
import torch


@torch.no_grad()
def _next_token_losses(model, ids: torch.Tensor, positions, batch_size: int) -> np.ndarray:
    """Per sequence (rows) and position (columns), the loss on token ``position + 1`` given tokens ``0..position``.

    One forward pass over tokens ``0..max(positions)`` serves every position: the causal mask keeps each
    position's logits from the tokens after it."""
    last = max(positions)
    picked = torch.as_tensor(list(positions))
    losses = []
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size]
        logits = model(input_ids=batch[:, : last + 1]).logits[:, picked].float()
        losses.append(torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, picked + 1], reduction="none"))
    return torch.cat(losses).numpy().astype(np.float64)


def shuffled_context(ids: np.ndarray, position: int, seed: int) -> np.ndarray:
    """``ids`` with tokens ``0..position-1`` of every row in a random order of their own; the rest as they are."""
    rng = np.random.default_rng(seed)
    out = ids.copy()
    for row in out:
        row[:position] = row[:position][rng.permutation(position)]
    return out


def order_gap(model, ids: np.ndarray, positions, batch_size: int = 64, seed: int = 0) -> dict:
    """The order gap at each of ``positions`` over the rows of ``ids`` (held-out sequences), with its standard error
    over rows, and the gap averaged over the positions (each row's mean over positions, then over rows)."""
    model = model.eval()
    tensor = torch.from_numpy(np.ascontiguousarray(ids)).long()
    positions = list(positions)
    for position in positions:
        if not 1 <= position < ids.shape[1] - 1:
            raise ValueError(f"an order-test position must lie in 1..{ids.shape[1] - 2}, not {position}")
    in_order = _next_token_losses(model, tensor, positions, batch_size)
    per_row, rows = [], {}
    for position in positions:
        ordered = in_order[:, positions.index(position)]
        shuffled = _next_token_losses(model, torch.from_numpy(shuffled_context(ids, position, seed + position)).long(),
                                      [position], batch_size)[:, 0]
        gap = shuffled - ordered
        per_row.append(gap)
        rows[str(position)] = {"gap": float(gap.mean()), "standard_error": _standard_error(gap),
                               "loss_in_order": float(ordered.mean())}
    mean_gap = np.mean(per_row, axis=0)
    return {"positions": rows, "mean_gap": float(mean_gap.mean()), "standard_error": _standard_error(mean_gap),
            "sequences": len(ids)}


def _standard_error(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
