"""Our score extraction against the paper notebooks' method, side by side in one run.

Reference (the notebooks): a full forward pass with eager attention and ``output_attentions=True``,
where each layer hands back its pre-softmax scores (the notebooks patched transformers for this;
here the same eager computation is registered as an attention function), and the per-layer,
per-head score tensors are summed over sequences afterwards.

Ours (``behind_rope.capture.scores.record_scores``): the registered capture function, float64 running
sums over heads and sequences, and a forward that stops after the last layer it needs.

Each method runs in its own child process (so peak memory is its own), alternating, ``--repeats``
times; the script prints tokens/s and peak memory of both, their ratios, and the largest
difference between the two mean-score matrices relative to the largest score.

In the same run it measures how close the capture comes to the hardware: the FLOP/s of a float32
(or, on CUDA, bf16) ``torch.matmul`` sequence with the shapes of one of the model's layers (the
projections, the attention products, the feed-forward block and the recorder's head sum), and the
capture's FLOP/s: the FLOPs of the layers it runs, counted from the model's shapes, times its
tokens/s. It prints their ratio.

    python -m benchmarks.extraction                      # SmolLM2, first 4 layers and all layers
    python -m benchmarks.extraction --update-docs        # also rewrite the extraction table of docs/performance.md
    python -m benchmarks.extraction --sequences 8 --device cuda
    python -m benchmarks.extraction --model random:llama3_1_8b --device cuda --sequences 1000 --cases 4
                                                         # Llama-3.1-8B's shapes, random weights (no hub needed)
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
REFERENCE = "reference_eager_presoftmax"
# Shapes of models no machine here can download: random weights of the same configuration time the capture.
RANDOM_MODELS = {
    "llama3_1_8b": {"architecture": "llama", "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
                    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                    "max_position_embeddings": 131072,
                    "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 8192}},
}


def layer_flops(config, seq_len: int) -> float:
    """FLOPs per token of one layer as the capture runs it: the q/k/v/o projections, the attention
    products over all S keys (the fused kernel under an explicit mask computes them all), the gated
    feed-forward block, and the recorder's head-sum matmul (another S x heads*d product)."""
    hidden = config.hidden_size
    head_dim = getattr(config, "head_dim", None) or hidden // config.num_attention_heads
    query, key_value = config.num_attention_heads * head_dim, config.num_key_value_heads * head_dim
    projections = 2 * hidden * (2 * query + 2 * key_value)
    attention = 2 * 2 * seq_len * query
    recorder = 2 * seq_len * query
    return projections + attention + recorder + 3 * 2 * hidden * config.intermediate_size


def matmul_flops_per_second(config, seq_len: int, batch: int, device, dtype, repeats: int = 5) -> float:
    """FLOP/s of exactly the matmuls :func:`layer_flops` counts, at the model's shapes (best of ``repeats``):
    the limit of this hardware for the capture's work."""
    import torch

    hidden, intermediate = config.hidden_size, config.intermediate_size
    head_dim = getattr(config, "head_dim", None) or hidden // config.num_attention_heads
    heads, query, key_value = config.num_attention_heads, config.num_attention_heads * head_dim, \
        config.num_key_value_heads * head_dim
    tokens = batch * seq_len

    def randn(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)

    x, attended, gated = randn(tokens, hidden), randn(tokens, query), randn(tokens, intermediate)
    w_q, w_k, w_v, w_o = randn(hidden, query), randn(hidden, key_value), randn(hidden, key_value), randn(query, hidden)
    w_gate, w_up, w_down = randn(hidden, intermediate), randn(hidden, intermediate), randn(intermediate, hidden)
    q, weights, flat = randn(batch * heads, seq_len, head_dim), randn(batch * heads, seq_len, seq_len), \
        randn(batch, seq_len, query)

    def one_layer():
        for left, right in ((x, w_q), (x, w_k), (x, w_v), (attended, w_o), (x, w_gate), (x, w_up), (gated, w_down)):
            torch.matmul(left, right)
        torch.matmul(q, q.transpose(1, 2))  # scores
        torch.matmul(weights, q)  # weights times values
        torch.matmul(flat, flat.transpose(1, 2))  # the recorder's sum over heads

    best = float("inf")
    for _ in range(repeats + 1):  # the first is a warm-up
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        one_layer()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return tokens * layer_flops(config, seq_len) / best


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

    from behind_rope.capture.scores import record_scores
    from behind_rope.device import pick_device

    torch.set_num_threads(args.threads)
    device, dtype = pick_device(args.device)
    model = load_benchmark_model(args.model, args.layers, device, dtype)
    tokens = benchmark_tokens(args, model.config)
    total = model.config.num_hidden_layers
    layers = range(total if args.layers == "all" else int(args.layers))
    warm_up, timed = tokens[:1], tokens[1:]
    if args.method == "matmul":
        flops = matmul_flops_per_second(model.config, tokens.shape[1], args.batch_size, device, dtype)
        Path(args.output).with_suffix(".json").write_text(json.dumps({"flops_per_second": flops}))
        return
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
        "dtype": str(dtype).removeprefix("torch."), "seconds": seconds, "timed_sequences": len(timed),
        "flops_per_token": len(layers) * layer_flops(model.config, tokens.shape[1])}))


def load_benchmark_model(name: str, layers: str, device, dtype):
    """A model folder, or ``random:<name>``: random weights with the shapes of RANDOM_MODELS[name], only as
    many layers as the capture runs (it stops after the last one it records)."""
    import torch

    from behind_rope.llm.loading import load_model

    if not name.startswith("random:"):
        return load_model({"local": name}, "benchmark", device, dtype)
    import transformers

    spec = dict(RANDOM_MODELS[name.removeprefix("random:")])
    architecture = spec.pop("architecture")
    if layers != "all":
        spec["num_hidden_layers"] = int(layers)
    config_class = {"llama": transformers.LlamaConfig}[architecture]
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config_class(**spec), dtype=dtype)
    return model.eval()


def benchmark_tokens(args, config):
    """The first ``sequences + 1`` rows of the token file, or random tokens for a random model."""
    import torch

    if args.model.startswith("random:"):
        generator = torch.Generator().manual_seed(0)
        return torch.randint(0, config.vocab_size, (args.sequences + 1, args.seq_len), generator=generator)
    return torch.from_numpy(np.load(args.tokens)[: args.sequences + 1])


def measure(args, method: str, layers: str, folder: Path, repeat: int, sequences: int | None = None) -> dict:
    output = folder / f"{method}-{layers}-{repeat}.npy"
    command = [sys.executable, __file__, "--child", "--method", method, "--layers", layers, "--model", args.model,
               "--tokens", args.tokens, "--sequences", str(sequences or args.sequences), "--batch-size",
               str(args.batch_size), "--device", args.device, "--threads", str(args.threads), "--seq-len",
               str(args.seq_len), "--output", str(output)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    result = json.loads(output.with_suffix(".json").read_text())
    return {**result, "mean": np.load(output)} if output.exists() else result


def compare(args) -> None:
    for needed in ([] if args.model.startswith("random:") else [args.model, args.tokens]):
        if not Path(needed).exists():
            raise SystemExit(f"Error: {needed} is missing; run `snakemake --cores all {needed}` first.")
    print(f"model {args.model}, {args.sequences} timed sequences of {args.seq_len} tokens (+1 warm-up), "
          f"device {args.device}, {args.repeats} alternating repeats per method; the reference on "
          f"{args.reference_sequences or args.sequences} of them")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for layers in args.cases:
            runs = {"ours": [], "reference": []}
            for repeat in range(args.repeats):
                runs["ours"].append(measure(args, "ours", layers, Path(scratch), repeat))
                runs["reference"].append(measure(args, "reference", layers, Path(scratch), repeat,
                                                 args.reference_sequences))
            matmul = measure(args, "matmul", layers, Path(scratch), 0)["flops_per_second"]
            ours, reference = runs["ours"][-1]["mean"], runs["reference"][-1]["mean"]
            scale = np.nanmax(np.abs(reference))
            ours_speed = statistics.median(r["tokens_per_second"] for r in runs["ours"])
            rows.append({
                "capture_flops_per_second": ours_speed * runs["ours"][0]["flops_per_token"],
                "matmul_flops_per_second": matmul,
                "ours_seconds": statistics.median(r["seconds"] for r in runs["ours"]),
                "timed_sequences": runs["ours"][0]["timed_sequences"],
                "layers": layers,
                "device": runs["ours"][0]["device"], "dtype": runs["ours"][0]["dtype"],
                "ours_tokens_per_second": statistics.median(r["tokens_per_second"] for r in runs["ours"]),
                "reference_tokens_per_second": statistics.median(r["tokens_per_second"] for r in runs["reference"]),
                "ours_peak_mb": max(r["peak_bytes"] for r in runs["ours"]) / 2**20,
                "reference_peak_mb": max(r["peak_bytes"] for r in runs["reference"]) / 2**20,
                # the reference may see fewer sequences (--reference-sequences): compare when it saw the same
                "max_relative_difference": float(np.nanmax(np.abs(ours - reference)) / scale)
                if not args.reference_sequences else None,
                "same_mask": bool(np.array_equal(np.isnan(ours), np.isnan(reference))),
            })
    print(f"{'layers':>6} {'ours tok/s':>11} {'ref tok/s':>10} {'speed-up':>9} {'ours MB':>8} {'ref MB':>8} "
          f"{'memory ratio':>12} {'max rel diff':>12} {'capture GFLOP/s':>15} {'matmul GFLOP/s':>14} {'ratio':>6}")
    for row in rows:
        row["speedup"] = row["ours_tokens_per_second"] / row["reference_tokens_per_second"]
        row["memory_ratio"] = row["ours_peak_mb"] / row["reference_peak_mb"]
        row["flops_ratio"] = row["capture_flops_per_second"] / row["matmul_flops_per_second"]
        difference = "n/a" if row["max_relative_difference"] is None else f"{row['max_relative_difference']:.1e}"
        print(f"{row['layers']:>6} {row['ours_tokens_per_second']:>11.0f} {row['reference_tokens_per_second']:>10.0f} "
              f"{row['speedup']:>8.1f}x {row['ours_peak_mb']:>8.0f} {row['reference_peak_mb']:>8.0f} "
              f"{row['memory_ratio']:>12.2f} {difference:>12} {row['capture_flops_per_second'] / 1e9:>15.1f} "
              f"{row['matmul_flops_per_second'] / 1e9:>14.1f} {row['flops_ratio']:>6.2f}")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(rows, indent=2) + "\n")
        print(f"wrote {args.output}")
    if args.update_docs:
        update_docs(args, rows)


def update_docs(args, rows) -> None:
    from benchmarks.results_doc import CLUSTER, PERFORMANCE, update

    model = args.model if args.model.startswith("random:") else Path(args.model).parent.name
    arguments = sys.argv[1:]
    if "--from-json" in arguments:  # the command that measured, not the one that wrote the table
        at = arguments.index("--from-json")
        arguments = arguments[:at] + arguments[at + 2:] + ["--update-docs"]
    command = " ".join(arguments)
    reference = f" (the reference on {args.reference_sequences})" if args.reference_sequences else ""
    lines = [f"_Measured by `python -m benchmarks.extraction {command}`: {model}, {args.sequences} sequences"
             f"{reference} of {args.seq_len} tokens, {args.threads} threads, median of {args.repeats} alternating "
             "runs._\n",
             "| layers recorded | device, dtype | ours: tokens/s, peak MB | reference: tokens/s, peak MB | speed-up "
             "| memory ratio (ours / reference) | max relative difference | capture / matmul GFLOP/s (ratio) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        difference = "n/a" if row["max_relative_difference"] is None else f"{row['max_relative_difference']:.1e}"
        lines.append(f"| {row['layers']} | {row['device']}, {row['dtype']} | {row['ours_tokens_per_second']:.0f}, "
                     f"{row['ours_peak_mb']:.0f} | {row['reference_tokens_per_second']:.0f}, {row['reference_peak_mb']:.0f} "
                     f"| {row['speedup']:.1f}x | {row['memory_ratio']:.2f} | {difference} | "
                     f"{row['capture_flops_per_second'] / 1e9:.0f} / {row['matmul_flops_per_second'] / 1e9:.0f} "
                     f"({row['flops_ratio']:.2f}) |")
    # The CPU table sits with what the workflow costs; the GPU one with the other GPU checks.
    update(args.docs_block, "\n".join(lines), CLUSTER if args.docs_block == "gpu" else PERFORMANCE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="results/models/smollm2/hf", help="a Hugging Face model folder")
    parser.add_argument("--tokens", default="results/inputs/smollm2/text.npy", help=".npy of token rows")
    parser.add_argument("--sequences", type=int, default=4, help="timed sequences per measurement")
    parser.add_argument("--batch-size", type=int, default=4, help="our batch size (the reference runs one at a time)")
    parser.add_argument("--cases", nargs="+", default=["4", "all"], help="layers recorded: N (first N) or all")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", help="also write the table as JSON here")
    parser.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence of a random: model")
    parser.add_argument("--reference-sequences", type=int, help="time the reference on fewer sequences (a GPU run)")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the extraction table of the docs")
    parser.add_argument("--docs-block", default="extraction", choices=["extraction", "gpu"],
                        help="which table: extraction (docs/performance.md) or gpu (docs/cluster.md)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--method", choices=["ours", "reference", "matmul"], help=argparse.SUPPRESS)
    parser.add_argument("--layers", help=argparse.SUPPRESS)
    parser.add_argument("--from-json", help="only rewrite the docs table from an --output file of an earlier run "
                        "(a GPU machine's), given the same arguments")
    args = parser.parse_args()
    if not args.model.startswith("random:") and Path(args.tokens).exists():
        args.seq_len = int(np.load(args.tokens, mmap_mode="r").shape[1])
    if args.from_json:
        update_docs(args, json.loads(Path(args.from_json).read_text()))
    elif args.child:
        child(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
