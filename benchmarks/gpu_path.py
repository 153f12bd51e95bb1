"""The pipeline's GPU path against its CPU path, side by side in one run (needs a CUDA GPU).

No hub is reachable from a lent GPU machine, so the models are random-initialised with the shapes of
the default scale: a Llama of SmolLM2-135M's shapes and a Gemma-3 of gemma3's ``config.json`` (the one
``cache_llm`` wrote; its sliding window binds at 1,024 tokens) for the score capture, and the default twin.

1. Score capture (``behind_rope.capture.scores.record_scores``, per-head records on): the same tokens on the
   CPU in float32 (the reference), on CUDA in float32, and on CUDA in bf16 (the GPU default,
   ``llm.dtype: auto``).  On CUDA, beside the capture as it is (one product over the whole matrix), two
   other ways: the blocks that skip the keys a causal mask hides, which the CPU takes
   (``capture.scores.skips_hidden_keys``), forced on the GPU; and the capture before those blocks came in
   (:func:`whole_score_matrix`), so that the table shows what each costs a GPU.  For each array it
   prints the largest difference relative to the reference's largest magnitude, and the speed-up in
   tokens/s.
2. Twin training (``behind_rope.twins.train.train_twin``): the same steps, seed and batches on the CPU in
   float32 and on CUDA with bf16 autocast (the GPU default, ``training.device: auto``); it prints both
   loss curves' last values and the speed-up.

    python -m benchmarks.gpu_path --output gpu_path.json --update-docs
    python -m benchmarks.gpu_path --from-json gpu_path.json   # the docs table from a GPU machine's file
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.gpu_models import difference
from benchmarks.results_doc import CLUSTER, add_result_options, keep_result

ROOT = Path(__file__).resolve().parents[1]

# SmolLM2-135M's shapes (config.json of HuggingFaceTB/SmolLM2-135M), random weights.
SMOLLM2_SHAPES = {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                  "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64, "rope_theta": 100000.0,
                  "max_position_embeddings": 8192, "tie_word_embeddings": True}


def random_llm(device: torch.device, dtype: torch.dtype, config_path: Path | None = None):
    """A Llama of SmolLM2-135M's shapes, or the architecture and shapes of ``config_path``, random weights."""
    from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)  # initialised on the CPU: the same weights everywhere
    if config_path is None:
        model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_SHAPES))
    else:
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(config_path.parent), dtype=torch.float32)
    return model.to(device=device, dtype=dtype).eval()


def time_capture(model, tokens: torch.Tensor, layers: int, batch: int, repeats: int) -> dict:
    """The capture's arrays and its speed, the least time of ``repeats`` runs after a warm-up."""
    from behind_rope.capture.scores import record_scores

    device = next(model.parameters()).device
    record_scores(model, [tokens[:1]], range(layers), per_head=True)  # warm-up (kernels, allocator)
    seconds = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        arrays = record_scores(model, tokens.split(batch), range(layers), per_head=True).result()
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
    return {"arrays": arrays, "tokens_per_second": tokens.numel() / min(seconds)}


def one_masked_call(query, key, value, allowed, scaling):
    """The fused attention over every key, the mask handed to the kernel as a tensor."""
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scaling)


@contextlib.contextmanager
def whole_score_matrix():
    """The score capture as it was: every product over the whole S x S matrix, hidden keys included, a
    per-head run's head sum a product of its own (the code of ``ScoreRecorder.add`` before the change),
    and a sliding-window layer's attention one masked call of the fused kernel."""
    from behind_rope.capture import scores as capture
    from behind_rope.capture.scores import ScoreRecorder, StopForward

    def add(self, layer, query, key, scaling, allowed, lower_triangular=False):
        if layer not in self.layers:
            return
        batch, heads, queries, head_dim = query.shape
        keys = key.shape[-2]
        query, key = query.float(), key.float()
        head_sum = torch.matmul(query.transpose(1, 2).reshape(batch, queries, heads * head_dim),
                                key.transpose(1, 2).reshape(batch, keys, heads * head_dim).transpose(1, 2)) * scaling
        if allowed is None:
            allowed = torch.ones(1, 1, queries, keys, dtype=torch.bool, device=query.device)
        else:
            head_sum.masked_fill_(~allowed[:, 0], 0.0)
        allowed = allowed[:, 0].expand(batch, queries, keys)
        rows = [slice((self.first_sequence + h) % 2, None, 2) for h in (0, 1)]
        by_half = torch.stack([head_sum[row].sum(0, dtype=torch.float64) for row in rows])
        if allowed.stride(0) == 0:
            count_by_half = torch.stack([allowed[0].to(torch.float64) * (len(range(batch)[row]) * heads) for row in rows])
        else:
            count_by_half = torch.stack([allowed[row].sum(0, dtype=torch.float64) * heads for row in rows])
        if layer not in self.sums:
            self.sums[layer] = torch.zeros_like(by_half)
            self.counts[layer] = torch.zeros_like(count_by_half)
        self.sums[layer] += by_half
        self.counts[layer] += count_by_half
        if self.per_head:
            scores = (torch.matmul(query, key.transpose(2, 3)) * scaling).masked_fill_(~allowed[:, None], -torch.inf)
            log_z = torch.logsumexp(scores, dim=-1)
            self._add_per_head(layer, log_z, torch.exp(scores[..., 0] - log_z), rows)
        if self.stop and layer == self.layers[-1]:
            raise StopForward

    blocked, in_blocks = ScoreRecorder.add, capture.attend_in_blocks
    ScoreRecorder.add, capture.attend_in_blocks = add, one_masked_call
    try:
        yield
    finally:
        ScoreRecorder.add, capture.attend_in_blocks = blocked, in_blocks


@contextlib.contextmanager
def blocks_on_every_device():
    """The blocks that skip the keys a causal mask hides, which the CPU takes, forced on a GPU too."""
    from behind_rope.capture import scores as capture

    on_cpu_only = capture.skips_hidden_keys
    capture.skips_hidden_keys = lambda device: True
    try:
        yield
    finally:
        capture.skips_hidden_keys = on_cpu_only


# On CUDA the capture as it is (one product over the whole matrix on a GPU), beside the blocks that skip
# the keys a causal mask hides (what the CPU does) and the capture before those blocks came in
# (whole_score_matrix), so that the table shows what each costs a GPU.
VARIANTS = {"": contextlib.nullcontext, ", in blocks (as on the CPU)": blocks_on_every_device,
            ", whole score matrix (as it was)": whole_score_matrix}
RUNS = {"cpu, float32": ("cpu", torch.float32, ""),
        **{f"cuda, {name}{variant}": ("cuda", dtype, variant) for variant in VARIANTS
           for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16))}}


def compare_capture(args, name: str, config_path: Path | None) -> list[dict]:
    vocab_size = (json.loads(config_path.read_text()) if config_path else SMOLLM2_SHAPES)["vocab_size"]
    generator = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab_size, (args.sequences, args.seq_len), generator=generator)
    runs = {}
    for run, (device, dtype, variant) in RUNS.items():
        model = random_llm(torch.device(device), dtype, config_path)
        with VARIANTS[variant]():
            runs[run] = time_capture(model, tokens, args.layers, args.batch_size, 1 if device == "cpu" else args.repeats)
        del model
        torch.cuda.empty_cache()
    reference = runs["cpu, float32"]
    rows = []
    for run, result in runs.items():
        differences = {}
        for key, expected in reference["arrays"].items():
            if np.issubdtype(np.asarray(expected).dtype, np.floating):
                differences[key] = difference(expected, result["arrays"][key])[0]
        rows.append({"model": name, "run": run, "tokens_per_second": result["tokens_per_second"],
                     "speedup": result["tokens_per_second"] / reference["tokens_per_second"],
                     "max_relative_difference": differences})
    return rows


def compare_training(args) -> list[dict]:
    from behind_rope.config import load
    from behind_rope.experiments.steps import twin_settings
    from behind_rope.twins.model import TwinSize
    from behind_rope.twins.train import TrainSettings, train_twin

    twin = twin_settings(load(), "rope")  # the default twin, as config/config.yaml sizes it
    size = TwinSize(**twin["size"])
    settings = TrainSettings(**{**twin["train"], "steps": args.train_steps, "checkpoint_every": 10**6})
    rng = np.random.default_rng(0)
    train_ids = rng.integers(0, size.vocab_size, (2048, size.max_positions)).astype(np.int64)
    valid_ids = rng.integers(0, size.vocab_size, (64, size.max_positions)).astype(np.int64)
    rows = []
    for device in ("cpu", "cuda"):
        with tempfile.TemporaryDirectory() as resume:
            started = time.perf_counter()
            _, history, summary = train_twin("rope", size, settings, train_ids, valid_ids, resume, device, progress=False)
            seconds = time.perf_counter() - started
        rows.append({"device": summary["device"], "dtype": summary["dtype"] + (" autocast" if device == "cuda" else ""),
                     "seconds": seconds, "first_loss": history[0]["train_loss"], "last_loss": history[-1]["train_loss"],
                     "validation_loss": summary["validation_loss"]})
    rows[1]["speedup"] = rows[0]["seconds"] / rows[1]["seconds"]
    return rows


def update_docs(result: dict) -> None:
    from benchmarks.results_doc import update

    capture, training = result["capture"], result["training"]
    keys = ("mean_scores", "log_z", "sink")
    models = ", ".join(capture.get("models", ["a random Llama of SmolLM2-135M's shapes"]))
    lines = [f"_Measured by `python -m benchmarks.gpu_path --update-docs` on one {result['gpu']} (torch "
             f"{result['torch']}), the CPU path on {result['cpu_threads']} threads of the same machine: {models}; "
             f"{capture['sequences']} sequences of {capture['seq_len']} tokens in batches of "
             f"{capture.get('batch_size', 4)}, the first {capture['layers']} layers with per-head records, on CUDA "
             f"the least time of {capture.get('repeats', 1)} runs; the default twin, "
             f"{training['steps']} steps._\n",
             "| model | score capture | tokens/s | speed-up over the CPU | time / the time as it is, same dtype "
             "| max relative difference from the CPU's: " + ", ".join(f"`{key}`" for key in keys) + " |",
             "|---|---|---|---|---|---|"]
    speed = {(row.get("model"), row["run"]): row["tokens_per_second"] for row in capture["rows"]}
    for row in capture["rows"]:
        as_it_is = speed.get((row.get("model"), ", ".join(row["run"].split(", ")[:2])))
        ratio = f"{as_it_is / row['tokens_per_second']:.2f}" if as_it_is and row["run"].count(", ") > 1 else ""
        differences = ", ".join(f"{row['max_relative_difference'][key]:.1e}" for key in keys)
        lines.append(f"| {row.get('model', 'smollm2 shapes')} | {row['run']} | {row['tokens_per_second']:.0f} | "
                     f"{row['speedup']:.1f}x | {ratio} | {differences} |")
    lines += ["", "| twin training | seconds | speed-up | train loss, first / last step | held-out loss |",
              "|---|---|---|---|---|"]
    for row in training["rows"]:
        speedup = f"{row['speedup']:.1f}x" if "speedup" in row else "1.0x"
        lines.append(f"| {row['device']}, {row['dtype']} | {row['seconds']:.1f} | {speedup} | "
                     f"{row['first_loss']:.3f} / {row['last_loss']:.3f} | {row['validation_loss']:.3f} |")
    update("gpu_path", "\n".join(lines), CLUSTER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequences", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4, help="layers recorded (the first N)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each CUDA capture (the least counts)")
    parser.add_argument("--gemma3-config", type=Path, default=ROOT / "results" / "models" / "gemma3" / "hf" / "config.json",
                        help="Gemma-3's config.json (cache_llm writes it): also time a random model of its shapes, "
                             "sliding-window layers included; skipped when the file is missing")
    parser.add_argument("--train-steps", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of the CPU reference")
    add_result_options(parser, "gpu_path", CLUSTER)
    args = parser.parse_args()
    if args.from_json:
        update_docs(json.loads(Path(args.from_json).read_text()))
        return
    if not torch.cuda.is_available():
        sys.exit("gpu_path.py compares the GPU path with the CPU path: it needs a CUDA GPU")
    torch.set_num_threads(args.threads)
    shapes = {"smollm2 shapes": ("a random Llama of SmolLM2-135M's shapes", None)}
    if args.gemma3_config.is_file():
        window = json.loads(args.gemma3_config.read_text()).get("sliding_window")
        shapes["gemma3 shapes"] = (f"a random Gemma-3 of gemma3's config.json (sliding window {window})",
                                   args.gemma3_config)
    else:
        print(f"no {args.gemma3_config}: the Gemma-3 rows are left out", file=sys.stderr)
    rows = [row for name, (_, path) in shapes.items() for row in compare_capture(args, name, path)]
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cpu_threads": args.threads,
              "capture": {"sequences": args.sequences, "seq_len": args.seq_len, "layers": args.layers,
                          "repeats": args.repeats, "batch_size": args.batch_size, "models": [text for text, _ in shapes.values()], "rows": rows},
              "training": {"steps": args.train_steps, "rows": compare_training(args)}}
    print(keep_result(result, args, update_docs))


if __name__ == "__main__":
    main()
