"""glibc's default malloc against the jobs' allocator settings (behind_rope.pipeline.allocator), side by side.

Each measurement runs in a fresh child process, alternating default / tuned ``--repeats`` times,
and reports the median of:

- ``train``: training steps of a twin of the config's size (forward, backward, AdamW);
- ``scores``: the score capture of the first 4 layers of a pretrained model folder on 1,024-token
  rows, in batches of ``--batch`` rows (the CPU runs' automatic batch is 4);
- ``simulate``: one simulation variant at the config's size.

For each it prints throughput, the child's user and kernel (sys) CPU seconds, its minor page faults
and peak memory, the speed-up, and whether the two settings computed identical outputs (a hash of
the weights, the recorded scores, the simulated means).

    python benchmarks/malloc.py --model results/models/qwen2_5_coder/hf [--update-docs]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from threads import child_result, twin_training_step  # noqa: E402

from behind_rope.pipeline.allocator import GLIBC_MALLOC_ENV  # noqa: E402


def digest(arrays) -> str:
    hasher = hashlib.sha256()
    for array in arrays:
        hasher.update(array.tobytes())
    return hasher.hexdigest()[:12]


def train(args) -> tuple[float, str]:
    from behind_rope.twins.model import weights

    model, step = twin_training_step()
    start = time.perf_counter()
    tokens = sum(step() for _ in range(args.train_steps))
    rate = tokens / (time.perf_counter() - start)
    return rate, digest(value.numpy() for value in weights(model).values())


def scores(args) -> tuple[float, str]:
    import torch

    from behind_rope.capture.scores import record_scores
    from behind_rope.llm.loading import load_model

    model = load_model({"local": args.model}, Path(args.model).parent.name, torch.device("cpu"), torch.float32)
    tokens = torch.randint(0, model.config.vocab_size, (args.sequences, 1024), generator=torch.Generator().manual_seed(0))
    start = time.perf_counter()
    recorder = record_scores(model, tokens.split(args.batch), range(4), causal=True)
    rate = tokens.numel() / (time.perf_counter() - start)
    return rate, digest(recorder.result().values())


def simulate(args) -> tuple[float, str]:
    from behind_rope.config import load
    from behind_rope.experiments.steps import simulation_settings
    from behind_rope.simulation.simulate import simulate as run
    from behind_rope.simulation.variants import SimulationSize, Variant

    settings = simulation_settings(load(), "rope_causal_alpha0.0")
    size = SimulationSize(**settings["size"])
    start = time.perf_counter()
    result = run(Variant(**settings["variant"]), size, settings["seed"], progress=False)
    return size.batch_size * size.seq_len / (time.perf_counter() - start), digest(result.values())


STEPS = {"train": train, "scores": scores, "simulate": simulate}


def run_child(step: str, tuned: bool, args) -> dict:
    command = [sys.executable, __file__, "--child", step, "--model", args.model, "--train-steps", str(args.train_steps),
               "--sequences", str(args.sequences), "--batch", str(args.batch)]
    env = {key: value for key, value in os.environ.items() if key not in GLIBC_MALLOC_ENV}
    return child_result(command, {**env, **(GLIBC_MALLOC_ENV if tuned else {})},
                        f"{step} ({'tuned' if tuned else 'default'} malloc)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="results/models/smollm2/hf", help="a Hugging Face model folder (scores)")
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--sequences", type=int, default=8, help="1,024-token rows per score measurement")
    parser.add_argument("--batch", type=int, default=4, help="rows per forward pass in the score measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=list(STEPS))
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/results.md")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        before = resource.getrusage(resource.RUSAGE_SELF)
        rate, outputs = STEPS[args.child](args)
        after = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"rate": rate, "outputs": outputs, "user": after.ru_utime - before.ru_utime,
                          "sys": after.ru_stime - before.ru_stime, "faults": after.ru_minflt - before.ru_minflt,
                          "peak_mb": after.ru_maxrss / 1024}))
        return
    lines = ["| step | malloc | items/s | user s | sys s | minor faults | peak MB | speed-up | identical outputs |",
             "|---|---|---|---|---|---|---|---|---|"]
    print(*lines, sep="\n")
    for step in args.steps:
        runs: dict[bool, list[dict]] = {False: [], True: []}
        for repeat in range(args.repeats):
            for tuned in (False, True) if repeat % 2 == 0 else (True, False):
                runs[tuned].append(run_child(step, tuned, args))
        keys = ("rate", "user", "sys", "faults", "peak_mb")
        median = {tuned: {key: statistics.median(run[key] for run in runs[tuned]) for key in keys} for tuned in runs}
        identical = len({run["outputs"] for both in runs.values() for run in both}) == 1
        for tuned in (False, True):
            m = median[tuned]
            speed_up = f"{m['rate'] / median[False]['rate']:.2f}x" if tuned else ""
            lines.append(f"| {step} | {'tuned' if tuned else 'default'} | {m['rate']:.0f} | {m['user']:.1f} | "
                         f"{m['sys']:.1f} | {m['faults']:.0f} | {m['peak_mb']:.0f} | {speed_up} | "
                         f"{'yes' if identical else 'NO'} |")
            print(lines[-1], flush=True)
    if args.update_docs:
        from results_doc import update

        model = Path(args.model).parent.name
        update("malloc", f"_Measured by `python benchmarks/malloc.py --update-docs`: train {args.train_steps} steps; scores: "
                         f"{model}, {args.sequences} rows of 1,024 tokens in batches of {args.batch}; median of "
                         f"{args.repeats} alternating runs in fresh processes; items are tokens (train, scores) or "
                         "sequence positions (simulate)._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
