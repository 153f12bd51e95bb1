"""How fast the twins train, against how fast this CPU multiplies matrices, lever by lever, in one run.

One thread, float32, the default recipe's NoPE and RoPE twins on the same batches, each arm timed over the same
steps after a few warm-up steps.  The rate of an arm is the step's matrix-product FLOPs (every linear layer, the
output layer and the causal attention, forward and backward: 3 x 2 x their multiply-adds) per second; the ratio
divides it by a 2,048 x 2,048 float32 matrix product's rate on one thread, measured in the same run.

Arms, each adding one lever to the one before:
- ``as before``: ``model(input_ids, labels=...).loss``, transformers' loss;
- ``fused loss``: the output layer and the loss by behind_rope.twins.train.NextTokenCrossEntropy, in chunks of tokens;
- ``compiled body``: and the decoder body compiled by torch.compile (what training does by default);
- ``5 seeds stacked``: the second arm's computation for five seeds at once, every weight with a seed axis and
  every product batched over the seeds (rate per seed-step): a lever where the Python of a step, not its
  arithmetic, is the cost; the twins are past that size.

    python -m benchmarks.training_speed                  # print the table
    python -m benchmarks.training_speed --steps 40       # time 40 steps per arm (default 30)
    python -m benchmarks.training_speed --update-docs    # also write it into docs/performance.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from behind_rope.config import load
from behind_rope.experiments.steps import twin_settings
from behind_rope.twins.model import TwinSize, build_twin
from behind_rope.twins.train import LOSS_CHUNK, NextTokenCrossEntropy, compiled_body, next_token_loss
from benchmarks.results_doc import PERFORMANCE, update

ROOT = Path(__file__).resolve().parents[1]

STACKED_SEEDS = 5


def step_flops(size: TwinSize, batch: int, length: int) -> float:
    """The matrix-product FLOPs of one training step: forward and backward (3 x), 2 FLOPs a multiply-add."""
    width = size.heads * size.head_dim
    per_layer = (size.hidden_size * width * 2 + size.hidden_size * size.kv_heads * size.head_dim * 2
                 + 3 * size.hidden_size * size.intermediate_size)
    linear = batch * length * size.layers * per_layer + batch * (length - 1) * size.hidden_size * size.vocab_size
    attention = batch * size.layers * size.heads * size.head_dim * 2 * length * (length + 1) / 2
    return 3 * 2 * (linear + attention)


def matmul_rate(n: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of an n x n float32 matrix product on this thread, the best of ``repeats``."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - started)
    return 2 * n**3 / best


class StackedTwins(torch.nn.Module):
    """Several seeds of one twin as one module: each SmolLM3 weight stacked along a leading seed axis, every
    product a batched one.  Computes each seed's next-token loss on its own batch, nothing across seeds."""

    def __init__(self, models: list):
        super().__init__()
        config = models[0].config
        self.heads, self.kv_heads, self.head_dim = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        self.layers, self.eps, self.rope = config.num_hidden_layers, config.rms_norm_eps, bool(config.no_rope_layers[0])
        states = [model.state_dict() for model in models]
        self.stacked = torch.nn.ParameterDict({key.replace(".", "__"): torch.nn.Parameter(
            torch.stack([state[key] for state in states])) for key in states[0] if key != "lm_head.weight"})
        angles = torch.outer(torch.arange(config.max_position_embeddings, dtype=torch.float32),
                             models[0].model.rotary_emb.inv_freq.float())
        self.cos, self.sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()

    def w(self, key: str) -> torch.Tensor:
        return self.stacked[key.replace(".", "__")]

    def linear(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return torch.bmm(x, self.w(key).transpose(1, 2))

    def norm(self, x: torch.Tensor, key: str) -> torch.Tensor:
        return self.w(key)[:, None] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def heads_of(self, x: torch.Tensor, heads: int, batch: int, length: int) -> torch.Tensor:
        return x.reshape(-1, length, heads, self.head_dim).transpose(1, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        seeds, batch, length = ids.shape
        embed = self.w("model.embed_tokens.weight")
        vocab = embed.shape[1]
        offsets = torch.arange(seeds)[:, None, None] * vocab
        h = F.embedding(ids + offsets, embed.reshape(seeds * vocab, -1)).reshape(seeds, batch * length, -1)
        for layer in range(self.layers):
            p = f"model.layers.{layer}"
            x = self.norm(h, f"{p}.input_layernorm.weight")
            q = self.heads_of(self.linear(x, f"{p}.self_attn.q_proj.weight"), self.heads, batch, length)
            k = self.heads_of(self.linear(x, f"{p}.self_attn.k_proj.weight"), self.kv_heads, batch, length)
            v = self.heads_of(self.linear(x, f"{p}.self_attn.v_proj.weight"), self.kv_heads, batch, length)
            if self.rope:
                rotate = lambda t: torch.cat((-t[..., self.head_dim // 2:], t[..., : self.head_dim // 2]), -1)  # noqa: E731
                q, k = q * self.cos[:length] + rotate(q) * self.sin[:length], k * self.cos[:length] + rotate(k) * self.sin[:length]
            groups = self.heads // self.kv_heads
            k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
            h = h + self.linear(out.reshape(seeds, batch * length, -1), f"{p}.self_attn.o_proj.weight")
            x = self.norm(h, f"{p}.post_attention_layernorm.weight")
            gate, up = self.linear(x, f"{p}.mlp.gate_proj.weight"), self.linear(x, f"{p}.mlp.up_proj.weight")
            h = h + self.linear(F.silu(gate) * up, f"{p}.mlp.down_proj.weight")
        h = self.norm(h, "model.norm.weight").reshape(seeds, batch, length, -1)[:, :, :-1]
        h = h.reshape(seeds, -1, h.shape[-1])
        return torch.stack([NextTokenCrossEntropy.apply(h[s], embed[s], ids[s, :, 1:].reshape(-1), LOSS_CHUNK)
                            for s in range(seeds)])


def timed_steps(loss_of, parameters, steps: int, warm_up: int = 3) -> tuple[float, float]:
    """(seconds per step, seconds of the first step): AdamW steps with gradient clipping, as training takes them."""
    parameters = list(parameters)
    optimizer = torch.optim.AdamW(parameters, lr=1e-4, fused=True)

    def step():
        loss_of().sum().backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    started = time.perf_counter()
    step()
    first = time.perf_counter() - started
    for _ in range(warm_up):
        step()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - started) / steps, first


def measure(positional: str, size: TwinSize, batch: int, length: int, steps: int) -> dict[str, tuple[float, float]]:
    """Per arm, (seed-steps a second, seconds of its first step)."""
    ids = torch.randint(0, size.vocab_size, (STACKED_SEEDS, batch, length), generator=torch.Generator().manual_seed(0))
    arms = {}
    model = build_twin(size, positional, 0).train()
    per_step, first = timed_steps(lambda: model(input_ids=ids[0], labels=ids[0]).loss, model.parameters(), steps)
    arms["as before"] = (1 / per_step, first)
    model = build_twin(size, positional, 0).train()
    per_step, first = timed_steps(lambda: next_token_loss(model, model.model, ids[0]), model.parameters(), steps)
    arms["fused loss"] = (1 / per_step, first)
    model = build_twin(size, positional, 0).train()
    body = compiled_body(model, torch.device("cpu"))
    per_step, first = timed_steps(lambda: next_token_loss(model, body, ids[0]), model.parameters(), steps)
    arms["compiled body"] = (1 / per_step, first)
    stack = StackedTwins([build_twin(size, positional, seed) for seed in range(STACKED_SEEDS)]).train()
    per_step, first = timed_steps(lambda: stack(ids), stack.parameters(), max(1, steps // STACKED_SEEDS))
    arms[f"{STACKED_SEEDS} seeds stacked"] = (STACKED_SEEDS / per_step, first)
    return arms


def table(rate: float, flops: float, results: dict[str, dict], steps: int, size: TwinSize, batch: int) -> str:
    """One row per arm, the NoPE and RoPE twins side by side: tokens/s, the ratio to the matrix-product rate, the
    speed against the first arm's, and the first step's seconds (compiling, where the arm compiles)."""
    rows = [f"_Measured by `python -m benchmarks.training_speed --steps {steps}`: one thread, float32, batches of "
            f"{batch} x {size.max_positions} tokens; this CPU's {torch.backends.cpu.get_cpu_capability()} matrix "
            f"product runs at {rate / 1e9:.0f} GFLOP/s; a step is {flops / 1e9:.1f} GFLOP of products._", "",
            "| arm | tokens/s, NoPE / RoPE | / matrix-product rate | / the first arm's | first step, s |",
            "|---|---|---|---|---|"]
    twins = list(results.values())
    for arm in twins[0]:
        cells = [[] for _ in range(4)]
        for arms in twins:
            per_second, first = arms[arm]
            cells[0].append(f"{per_second * batch * size.max_positions:,.0f}")
            cells[1].append(f"{per_second * flops / rate:.2f}")
            cells[2].append(f"{per_second / next(iter(arms.values()))[0]:.2f}")
            cells[3].append(f"{first:.1f}")
        rows.append(f"| {arm} | " + " | ".join(" / ".join(cell) for cell in cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per arm (the stacked arm: a fifth)")
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/performance.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = twin_settings(load(), "nope")
    size, batch = TwinSize(**settings["size"]), settings["train"]["batch_size"]
    flops = step_flops(size, batch, size.max_positions)
    rate = matmul_rate()
    results = {positional: measure(positional, size, batch, size.max_positions, args.steps)
               for positional in ("nope", "rope")}
    text = table((rate + matmul_rate()) / 2, flops, results, args.steps, size, batch)
    print(text)
    if args.update_docs:
        update("twin_training_rate", text, PERFORMANCE)


if __name__ == "__main__":
    main()
