"""How well the two heaviest steps use a second thread, side by side in one run.

A job that holds 2 threads but runs only s times faster than on 1 (s < 2) leaves 2 - s of a core
idle for as long as it runs; on a 2-core laptop two 1-thread jobs side by side would do more work.
This script times, in fresh child processes at 1 and at 2 torch threads, alternating ``--repeats``
times:

- ``train``: training steps of a twin of the config's size (forward, backward, AdamW; the twins'
  batch and sequence length, random tokens);
- ``scores``: the score capture (``behind_rope.capture.scores.record_scores``) on the first 4 layers of a
  pretrained model folder, on 1,024-token rows, as the Figure 5 runs do.

It prints each step's throughput at 1 and 2 threads, the speed-up s, the parallel efficiency s / 2,
and the summed throughput of two 1-thread runs side by side, against one 2-thread run: above 1, the
step's jobs should take 1 thread each (``resources`` in the config) and run two at a time.

    python benchmarks/threads.py --model results/models/smollm2/hf
    python benchmarks/threads.py --update-docs     # also write the table into docs/results.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def twin_training_step(dtype: str = "float32"):
    """(model, step) for a RoPE twin of config/config.yaml's size: ``step()`` is one training step (forward,
    backward, AdamW) on a fixed batch of the twins' size, and returns the tokens it trained on.  With
    ``dtype`` (``training.dtype``'s values) the forward runs as training runs it (``twins.train.precision``)."""
    import torch

    from behind_rope.config import load
    from behind_rope.experiments.steps import twin_settings
    from behind_rope.twins.model import TwinSize, build_twin
    from behind_rope.twins.train import TrainSettings, make_optimizer, precision, training_dtype

    settings = twin_settings(load(), "rope")
    size, train = TwinSize(**settings["size"]), TrainSettings(**settings["train"])
    model = build_twin(size, "rope", seed=0).train()
    optimizer = make_optimizer(model, train)
    batch = torch.randint(0, size.vocab_size, (train.batch_size, size.max_positions),
                          generator=torch.Generator().manual_seed(0))
    cpu = torch.device("cpu")
    in_dtype = training_dtype(cpu, dtype)

    def step() -> int:
        with precision(cpu, in_dtype):
            loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return batch.numel()

    return model, step


def wait_for_start() -> None:
    """Side by side, each child waits here, set up and warmed up, until the parent says go: their timed parts
    then start together (model loading takes each a different time)."""
    barrier = os.environ.get("THREADS_BENCHMARK_BARRIER")
    if barrier:
        Path(barrier, f"{os.getpid()}.ready").touch()
        while not Path(barrier, "go").exists():
            time.sleep(0.005)


def timed(work) -> dict:
    """Tokens per second of ``work()`` (which returns the tokens it processed), with its wall-clock ends."""
    wait_for_start()
    began, start = time.time(), time.perf_counter()
    tokens = work()
    seconds = time.perf_counter() - start
    return {"rate": tokens / seconds, "tokens": tokens, "began": began, "ended": began + seconds}


def train_throughput(steps: int) -> dict:
    """Tokens per second of ``steps`` training steps of a RoPE twin of config/config.yaml's size."""
    _, step = twin_training_step()
    step()  # warm-up: first-call allocations
    return timed(lambda: sum(step() for _ in range(steps)))


def score_throughput(model_dir: str, sequences: int) -> dict:
    """Tokens per second of the capture of the first 4 layers on random 1,024-token rows."""
    import torch

    from behind_rope.capture.scores import record_scores
    from behind_rope.llm.loading import load_model

    model = load_model({"local": model_dir}, Path(model_dir).parent.name, torch.device("cpu"), torch.float32)
    tokens = torch.randint(0, model.config.vocab_size, (sequences + 1, 1024), generator=torch.Generator().manual_seed(0))
    record_scores(model, tokens[:1].split(1), range(4), causal=True)  # warm-up

    def capture() -> int:
        record_scores(model, tokens[1:].split(4), range(4), causal=True)  # batches of 4, as auto gives on a CPU
        return sequences * 1024

    return timed(capture)


def child_result(command: list[str], env: dict[str, str], what: str):
    """The JSON a benchmark's child process prints last, run offline in the repository root."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**env, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def child_command(step: str, threads: int, args) -> list[str]:
    return [sys.executable, __file__, "--child", step, "--threads", str(threads), "--model", args.model,
            "--train-steps", str(args.train_steps), "--sequences", str(args.sequences)]


def run_child(step: str, threads: int, args) -> float:
    return child_result(child_command(step, threads, args), dict(os.environ), f"{step} at {threads} threads")["rate"]


def run_pair(step: str, args) -> float:
    """Two 1-thread children at the same time, what a 2-core machine gets from two 1-thread jobs side by
    side (they share the memory bandwidth and the caches): their tokens over the time from their common
    start to the later end."""
    with tempfile.TemporaryDirectory() as barrier:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "THREADS_BENCHMARK_BARRIER": barrier}
        children = [subprocess.Popen(child_command(step, 1, args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=ROOT, env=env) for _ in range(2)]
        while len(list(Path(barrier).glob("*.ready"))) < 2 and all(child.poll() is None for child in children):
            time.sleep(0.005)
        Path(barrier, "go").touch()
        results = []
        for child in children:
            out, err = child.communicate()
            if child.returncode != 0:
                raise RuntimeError(f"{step}, two 1-thread runs side by side, failed:\n{err[-3000:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
    began, ended = min(r["began"] for r in results), max(r["ended"] for r in results)
    return sum(r["tokens"] for r in results) / (ended - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="results/models/smollm2/hf", help="a Hugging Face model folder (scores)")
    parser.add_argument("--train-steps", type=int, default=10)
    parser.add_argument("--sequences", type=int, default=4, help="1,024-token rows per score measurement")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--steps", nargs="+", default=["train", "scores"], choices=["train", "scores"])
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/results.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import torch

        torch.set_num_threads(args.threads)
        measure = {"train": lambda: train_throughput(args.train_steps),
                   "scores": lambda: score_throughput(args.model, args.sequences)}[args.child]
        print(json.dumps(measure()))
        return
    lines = ["| step | tokens/s, 1 thread | tokens/s, 2 threads | speed-up s | efficiency s / 2 "
             "| tokens/s, two 1-thread runs side by side | side by side / 2 threads |", "|---|---|---|---|---|---|---|"]
    print("\n".join(lines))
    for step in args.steps:
        results: dict[str, list[float]] = {"1": [], "2": [], "pair": []}
        for repeat in range(args.repeats):
            for how in ("1", "2", "pair") if repeat % 2 == 0 else ("pair", "2", "1"):
                results[how].append(run_pair(step, args) if how == "pair" else run_child(step, int(how), args))
        one, two, pair = (statistics.median(results[how]) for how in ("1", "2", "pair"))
        lines.append(f"| {step} | {one:.0f} | {two:.0f} | {two / one:.2f} | {two / one / 2:.2f} | {pair:.0f} "
                     f"| {pair / two:.2f} |")
        print(lines[-1], flush=True)
    if args.update_docs:
        from results_doc import update

        header = (f"_Measured by `python benchmarks/threads.py --update-docs`: train {args.train_steps} steps of a twin; "
                  f"scores: {Path(args.model).parent.name}, {args.sequences} rows of 1,024 tokens in batches of 4, 4 layers; "
                  f"median of {args.repeats} alternating runs in fresh processes on {os.cpu_count()} cores._")
        update("threads", header + "\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
