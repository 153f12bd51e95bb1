"""How close the two heaviest steps of a cold run come to the CPU's limit, and what a process start costs.

The twins' training and the LLM score runs hold most of a cold run's CPU time (docs/results.md,
"Benchmarks").  Whether engineering can make them cheaper, or only doing less work can, depends on how
much of their time is already the matrix products themselves.  This script measures, in one run:

- a training step of the default twin (1 thread, as the rule runs it), and the capture of one
  LLM's first 4 layers on 1,024-token rows (1 thread, as the rule runs it: resources.llm), each under torch's
  profiler: the share of CPU time in matrix products (mm, addmm, bmm, the oneDNN linear layers of
  ``behind_rope.capture.kernels``, SDPA), and the rate the plain products (mm, addmm, bmm, whose FLOPs the
  profiler counts, and the oneDNN linear layers, whose FLOPs come from their shapes) reach, beside what
  one large matrix product reaches on the same threads (the machine's ceiling; for the capture, the
  faster of PyTorch's stock product and the packed oneDNN one);
- the CPU seconds of starting a step that loads a model: ``python -m behind_rope scores`` on one
  8-token row, whose work is almost nothing but importing torch and transformers and loading.

    python benchmarks/cpu_floor.py                  # needs results/models/<model>/hf (snakemake cache_llm)
    python benchmarks/cpu_floor.py --update-docs    # also rewrite the cpu_floor table of docs/results.md

What doing less work would take off a cold run is benchmarks/less_work.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
ONEDNN_LINEAR = "mkldnn::_linear_pointwise"  # the score runs' linear layers (behind_rope.capture.kernels)
MATRIX_OPS = ("aten::mm", "aten::addmm", "aten::bmm", ONEDNN_LINEAR, "aten::_scaled_dot_product_flash_attention_for_cpu",
              "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def matrix_share(profile) -> float:
    """The share of self CPU time spent in matrix products."""
    events = profile.key_averages()
    total = sum(event.self_cpu_time_total for event in events)
    return sum(event.self_cpu_time_total for event in events if event.key in MATRIX_OPS) / total


def flops(event) -> float:
    """The profiler counts the FLOPs of mm, addmm and bmm; a oneDNN linear's come from its shapes (input, weight)."""
    if event.key == ONEDNN_LINEAR:
        inputs, weight = event.input_shapes[:2]
        return 2.0 * float(np.prod(inputs)) * weight[0] * event.count
    # With the shapes recorded, the profiler counts elementwise FLOPs too: only the products count here.
    return event.flops if event.key in ("aten::mm", "aten::addmm", "aten::bmm") else 0


def matrix_rate(profile) -> float:
    """GFLOP/s of the plain matrix products (those whose FLOPs are known), over their own time."""
    events = [event for event in profile.key_averages(group_by_input_shape=True) if flops(event)]
    return sum(flops(event) for event in events) / sum(event.self_cpu_time_total for event in events) / 1e3


def profiled(step, repeats: int) -> tuple[float, float, float]:
    """(CPU seconds per call, matrix-product share, the plain products' GFLOP/s) of ``step`` after one warm-up call.
    The CPU seconds are timed without the profiler, whose cost per operator would weigh on a step of many small
    ones (bf16 autocast adds a cast to most of them)."""
    from torch.profiler import ProfilerActivity, profile

    step()
    started = time.process_time()
    for _ in range(repeats):
        step()
    seconds = (time.process_time() - started) / repeats
    with profile(activities=[ProfilerActivity.CPU], with_flops=True, record_shapes=True) as measured:
        for _ in range(repeats):
            step()
    return seconds, matrix_share(measured), matrix_rate(measured)


def training_row(repeats: int, dtype: str = "float32") -> dict:
    import torch
    from threads import twin_training_step

    torch.set_num_threads(1)
    _, step = twin_training_step(dtype)
    seconds, share, rate = profiled(step, repeats)
    name = "train: one step of the default twin in float32 (1 thread)" if dtype == "float32" else \
        "train: the same step in bf16 autocast (`training.dtype: bfloat16`, which `auto` picks on a CPU with native bf16)"
    return {"step": name, "cpu_seconds": seconds, "matrix_share": share, "rate": rate,
            "peak": single_matmul_rate(1, getattr(torch, dtype))}


def capture_row(model_name: str, rows: int, repeats: int) -> dict:
    import torch

    from behind_rope.capture.scores import record_scores
    from behind_rope.llm.loading import load_model

    torch.set_num_threads(1)
    model = load_model({"local": str(ROOT / f"results/models/{model_name}/hf")}, model_name, torch.device("cpu"),
                       torch.float32)
    tokens = torch.from_numpy(np.load(ROOT / f"results/inputs/{model_name}/fig5.npy")[:rows])
    seconds, share, rate = profiled(lambda: record_scores(model, tokens.split(4), range(4)), repeats)
    return {"step": f"scores: {model_name}, first 4 layers of {rows} x {tokens.shape[1]} tokens (1 thread)",
            "cpu_seconds": seconds, "matrix_share": share, "rate": rate,
            "peak": max(single_matmul_rate(1), single_matmul_rate(1, kernel="onednn"))}


def single_matmul_rate(threads: int, dtype=None, rounds: int = 3, kernel: str = "stock") -> float:
    """GFLOP/s of a large matrix product (float32 unless ``dtype``) on this many threads: the machine's ceiling
    for the steps.  The best of ``rounds`` rounds of 10 products, since a busy neighbour on a shared machine only
    slows one down.  ``kernel``: PyTorch's stock product, or ``onednn``, the packed one of the score runs'
    linear layers."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(2048, 2048, dtype=dtype), torch.randn(2048, 2048, dtype=dtype)
    if kernel == "onednn":
        from behind_rope.capture.kernels import packed_linear

        linear = packed_linear(b, None)

        def product():
            return linear(a)
    else:
        def product():
            return torch.mm(a, b)
    product()
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(10):
            product()
        best = max(best, 10 * 2 * 2048**3 / (time.perf_counter() - started) / 1e9)
    return best


def start_up_row(model_name: str) -> dict:
    """CPU seconds of ``python -m behind_rope scores`` on one 8-token row: imports, model load, writing."""
    from behind_rope.config import load
    from behind_rope.experiments.steps import score_settings

    config = load()
    settings = score_settings(config, model_name, "random", "causal")
    with tempfile.TemporaryDirectory() as scratch:
        tokens = Path(scratch) / "row.npy"
        np.save(tokens, np.load(ROOT / f"results/inputs/{model_name}/random.npy")[:1, :8])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "behind_rope", "scores", "--settings", json.dumps(settings), "--tokens",
                        str(tokens), "--threads", "2", "--output", str(Path(scratch) / "out.npz")], check=True,
                       capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"step": f"start-up: `python -m behind_rope scores` on one 8-token row ({model_name})",
            "cpu_seconds": seconds, "matrix_share": None, "rate": None, "peak": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2_5_coder", help="a model with results/models/<model>/hf")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10, help="training steps profiled")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    if not (ROOT / f"results/models/{args.model}/hf").exists():
        raise SystemExit(f"Error: results/models/{args.model}/hf is missing; run `snakemake cache_llm` first.")
    rows = [training_row(args.repeats), training_row(args.repeats, "bfloat16"), capture_row(args.model, args.rows, 2),
            start_up_row(args.model)]
    lines = ["| step | CPU s per call | share in matrix products | their rate (mm, addmm, bmm, oneDNN linear), GFLOP/s "
             "| matrix-product ceiling, GFLOP/s |", "|---|---|---|---|---|"]
    for row in rows:
        share = "" if row["matrix_share"] is None else f"{row['matrix_share']:.0%}"
        rate = "" if row["rate"] is None else f"{row['rate']:.0f}"
        peak = "" if row["peak"] is None else f"{row['peak']:.0f}"
        lines.append(f"| {row['step']} | {row['cpu_seconds']:.2f} | {share} | {rate} | {peak} |")
    lines += ["", f"A training step in bf16 autocast takes {rows[1]['cpu_seconds'] / rows[0]['cpu_seconds']:.2f} of the "
              "float32 step's CPU time (its ceiling is a bf16 product's)."]
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("cpu_floor", f"_Measured by `python benchmarks/cpu_floor.py --update-docs` ({args.model}, "
                            f"{args.rows} rows, {args.repeats} training steps)._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
