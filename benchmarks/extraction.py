"""Our score extraction against the paper notebooks' method, side by side in one run.

Reference (the notebooks): a full forward pass with eager attention and ``output_attentions=True``,
where each layer hands back its pre-softmax scores (the notebooks patched transformers for this;
here the same eager computation is registered as an attention function), and the per-layer,
per-head score tensors are summed over sequences afterwards.

Ours (``behind_rope.extract.record_scores``): the registered capture function, float64 running
sums over heads and sequences, and a forward that stops after the last layer it needs.

Each method runs in its own child process (so peak memory is its own), alternating, ``--repeats``
times; the script prints tokens/s and peak memory of both, their ratios, and the largest
difference between the two mean-score matrices relative to the largest score.

    python benchmarks/extraction.py                      # SmolLM2, first 4 layers and all layers
    python benchmarks/extraction.py --update-readme      # also rewrite the README's extraction table
    python benchmarks/extraction.py --sequences 8 --device cuda
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
REFERENCE = "reference_eager_presoftmax"


def _register_reference():
    """The notebooks' eager attention, returning the pre-softmax (masked) scores as its weights."""
    import torch
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask
    from transformers.models.llama.modeling_llama import repeat_kv

    def eager_presoftmax(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
        key = repeat_kv(key, module.num_key_value_groups)
        value = repeat_kv(value, module.num_key_value_groups)
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            scores = scores + attention_mask[:, :, :, : key.shape[-2]]
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), scores

    AttentionInterface.register(REFERENCE, eager_presoftmax)
    AttentionMaskInterface.register(REFERENCE, eager_mask)


def _peak_bytes(device) -> int:
    import resource

    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(args) -> None:
    """One measurement in this process: load, warm up on one sequence, time the rest."""
    import torch

    from behind_rope.extract import pick_device, record_scores
    from behind_rope.llm import load_model

    torch.set_num_threads(args.threads)
    device, dtype = pick_device(args.device)
    model = load_model({"local": args.model}, "benchmark", device, dtype)
    tokens = torch.from_numpy(np.load(args.tokens)[: args.sequences + 1])
    total = model.config.num_hidden_layers
    layers = range(total if args.layers == "all" else int(args.layers))
    warm_up, timed = tokens[:1], tokens[1:]
    if args.method == "ours":
        record_scores(model, [warm_up], layers)
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(device)
        started = time.perf_counter()
        result = record_scores(model, timed.split(args.batch_size), layers).result()
        mean = result["mean_scores"]
    else:
        _register_reference()
        model.set_attn_implementation(REFERENCE)
        sums = None
        with torch.no_grad():
            model(input_ids=warm_up.to(device), output_attentions=True)
            if device.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats(device)
            started = time.perf_counter()
            for sequence in timed.split(1):
                attentions = model(input_ids=sequence.to(device), output_attentions=True).attentions
                stacked = torch.stack([attentions[k][0].float() for k in layers])  # (layers, heads, S, S)
                sums = stacked if sums is None else sums + stacked
        causal = torch.ones(tokens.shape[1], tokens.shape[1], dtype=torch.bool, device=device).tril()
        mean = torch.where(causal, sums.mean(1) / len(timed), torch.nan).cpu().numpy()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    np.save(args.output, mean)
    Path(args.output).with_suffix(".json").write_text(json.dumps({
        "tokens_per_second": timed.numel() / seconds, "peak_bytes": _peak_bytes(device), "device": device.type,
        "dtype": str(dtype).removeprefix("torch.")}))


def measure(args, method: str, layers: str, folder: Path, repeat: int) -> dict:
    output = folder / f"{method}-{layers}-{repeat}.npy"
    command = [sys.executable, __file__, "--child", "--method", method, "--layers", layers, "--model", args.model,
               "--tokens", args.tokens, "--sequences", str(args.sequences), "--batch-size", str(args.batch_size),
               "--device", args.device, "--threads", str(args.threads), "--output", str(output)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return {**json.loads(output.with_suffix(".json").read_text()), "mean": np.load(output)}


def compare(args) -> None:
    for needed in (args.model, args.tokens):
        if not Path(needed).exists():
            raise SystemExit(f"Error: {needed} is missing; run `snakemake --cores all {needed}` first.")
    print(f"model {args.model}, {args.sequences} timed sequences of {np.load(args.tokens).shape[1]} tokens "
          f"(+1 warm-up), device {args.device}, {args.repeats} alternating repeats per method")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for layers in args.cases:
            runs = {"ours": [], "reference": []}
            for repeat in range(args.repeats):
                for method in ("ours", "reference"):
                    runs[method].append(measure(args, method, layers, Path(scratch), repeat))
            ours, reference = runs["ours"][-1]["mean"], runs["reference"][-1]["mean"]
            scale = np.nanmax(np.abs(reference))
            rows.append({
                "layers": layers,
                "device": runs["ours"][0]["device"], "dtype": runs["ours"][0]["dtype"],
                "ours_tokens_per_second": statistics.median(r["tokens_per_second"] for r in runs["ours"]),
                "reference_tokens_per_second": statistics.median(r["tokens_per_second"] for r in runs["reference"]),
                "ours_peak_mb": max(r["peak_bytes"] for r in runs["ours"]) / 2**20,
                "reference_peak_mb": max(r["peak_bytes"] for r in runs["reference"]) / 2**20,
                "max_relative_difference": float(np.nanmax(np.abs(ours - reference)) / scale),
                "same_mask": bool(np.array_equal(np.isnan(ours), np.isnan(reference))),
            })
    print(f"{'layers':>6} {'ours tok/s':>11} {'ref tok/s':>10} {'speed-up':>9} {'ours MB':>8} {'ref MB':>8} "
          f"{'memory ratio':>12} {'max rel diff':>12}")
    for row in rows:
        row["speedup"] = row["ours_tokens_per_second"] / row["reference_tokens_per_second"]
        row["memory_ratio"] = row["ours_peak_mb"] / row["reference_peak_mb"]
        print(f"{row['layers']:>6} {row['ours_tokens_per_second']:>11.0f} {row['reference_tokens_per_second']:>10.0f} "
              f"{row['speedup']:>8.1f}x {row['ours_peak_mb']:>8.0f} {row['reference_peak_mb']:>8.0f} "
              f"{row['memory_ratio']:>12.2f} {row['max_relative_difference']:>12.1e}")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n")
        print(f"wrote {args.output}")
    if args.update_readme:
        update_readme(args, rows)


def update_readme(args, rows) -> None:
    from run_benchmarks import replace_block

    lines = [f"\n_Measured by `python benchmarks/extraction.py --update-readme`: {Path(args.model).parent.name}, "
             f"{args.sequences} sequences of {np.load(args.tokens).shape[1]} tokens, {args.threads} threads, "
             f"median of {args.repeats} alternating runs._\n",
             "| layers recorded | device, dtype | ours: tokens/s, peak MB | reference: tokens/s, peak MB | speed-up "
             "| memory ratio (ours / reference) | max relative difference |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['layers']} | {row['device']}, {row['dtype']} | {row['ours_tokens_per_second']:.0f}, "
                     f"{row['ours_peak_mb']:.0f} | {row['reference_tokens_per_second']:.0f}, {row['reference_peak_mb']:.0f} "
                     f"| {row['speedup']:.1f}x | {row['memory_ratio']:.2f} | {row['max_relative_difference']:.1e} |")
    readme = ROOT / "README.md"
    readme.write_text(replace_block(readme.read_text(), "<!-- extraction:start -->", "<!-- extraction:end -->",
                                    "\n".join(lines) + "\n"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="results/models/smollm2/hf", help="a Hugging Face model folder")
    parser.add_argument("--tokens", default="results/llm/inputs/smollm2/text.npy", help=".npy of token rows")
    parser.add_argument("--sequences", type=int, default=4, help="timed sequences per measurement")
    parser.add_argument("--batch-size", type=int, default=4, help="our batch size (the reference runs one at a time)")
    parser.add_argument("--cases", nargs="+", default=["4", "all"], help="layers recorded: N (first N) or all")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="also write the table as JSON here")
    parser.add_argument("--update-readme", action="store_true", help="rewrite the README's extraction table")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--method", choices=["ours", "reference"], help=argparse.SUPPRESS)
    parser.add_argument("--layers", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
