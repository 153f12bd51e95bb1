"""Three steps that no longer compute the same thing twice, each beside the way it was, with the same results.

- **The causal kernel.** The score capture's attention hands a plain causal mask to PyTorch's fused
  attention as ``is_causal`` (``behind_rope.llm.extract.is_plain_causal``), so the kernel skips the blocks
  above the diagonal; before, it got the mask as a tensor and computed them.
- **Each matrix normalised once per layer.** A layer's metrics ask for the diagonal-normalised mean and
  halves several times each; within ``behind_rope.maths.metrics.normalising_once`` each is computed once.
- **Patches start at the patched layer.** Claim C9's patches change the residual state at one layer's
  input; the layers before it would only recompute the base pass's input to that layer, so the patched
  pass now starts there (``behind_rope.position.patching._from_layer``) instead of running every layer
  with a hook that swaps the input in.

Each pair runs in this process on a finished default run's models, tokens and score files, alternating,
and the table gives the least CPU seconds (this process's, all threads) of ``--repeats`` runs of each way,
and whether both ways wrote the same numbers, bit for bit.

    python benchmarks/reuse.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/reuse.py --run DIR --update-docs   # also rewrite the reuse table of docs/results.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


@contextlib.contextmanager
def masked_kernel():
    """The score capture's attention as it was: the causal mask handed to the kernel as a tensor."""
    from behind_rope.llm import extract

    plain = extract.is_plain_causal
    extract.is_plain_causal = lambda allowed: False
    try:
        yield
    finally:
        extract.is_plain_causal = plain


@contextlib.contextmanager
def normalising_every_time():
    """The metrics as they were: every call of diagonal_normalise computes."""
    from behind_rope.maths import metrics

    once = metrics.normalising_once
    metrics.normalising_once = contextlib.nullcontext
    try:
        yield
    finally:
        metrics.normalising_once = once


@contextlib.contextmanager
def patching_every_layer():
    """Claim C9's patched passes as they were: every layer runs, and a hook swaps the patched input in."""
    from behind_rope.position import patching

    started = patching._forward

    def whole_pass(model, tokens, last_layer, start=None):
        if start is None:
            return started(model, tokens, last_layer)
        layer, states = start

        def enter(module, args, kwargs):
            if args:
                return (states, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": states}

        handle = patching.decoder_layers(model)[layer].register_forward_pre_hook(enter, with_kwargs=True)
        try:
            return started(model, tokens, last_layer)
        finally:
            handle.remove()

    patching._forward = whole_pass
    try:
        yield
    finally:
        patching._forward = started


def cpu_of(function) -> tuple[float, str]:
    """CPU seconds of ``function()`` and its result as canonical JSON (the numbers bit for bit)."""
    started = time.process_time()
    result = function()
    return time.process_time() - started, canonical(result)


def canonical(result) -> str:
    if isinstance(result, tuple):  # a score run: (arrays, metadata); the metadata holds timings
        result = result[0]
    if isinstance(result, dict):
        return json.dumps({key: canonical(value) for key, value in result.items() if key != "seconds"}, sort_keys=True)
    if isinstance(result, np.ndarray):
        return result.tobytes().hex() if result.dtype.kind == "f" else json.dumps(result.tolist())
    return json.dumps(result)


def both_ways(function, before, repeats: int) -> tuple[float, float, bool]:
    """Least CPU seconds of ``function`` as it is now and inside ``before`` (as it was), and whether both agree."""
    now, then, results = [], [], set()
    for _ in range(repeats):
        seconds, result = cpu_of(function)
        now.append(seconds)
        results.add(result)
        with before():
            seconds, result = cpu_of(function)
        then.append(seconds)
        results.add(result)
    return min(now), min(then), len(results) == 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished default run, with its results/")
    parser.add_argument("--model", default="smollm2", help="the LLM of the score run and the patching check")
    parser.add_argument("--threads", type=int, default=2, help="torch threads, as the LLM jobs have")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    import torch

    from behind_rope import atomic, experiments
    from behind_rope.config import load
    from behind_rope.llm.extract import score_run
    from behind_rope.maths.metrics import Measures, score_file_metrics
    from behind_rope.position.patching import patching_check

    torch.set_num_threads(args.threads)
    config = load(root=ROOT)
    run = args.run.resolve()
    os.chdir(run)  # the settings name the run's files relative to it
    measures = Measures.of(experiments.measures_settings(config))
    score_settings = experiments.score_settings(config, args.model, "long", "causal")
    jobs = [
        (f"`scores`: `{args.model}` on `long` (the causal kernel)", masked_kernel,
         lambda: score_run(score_settings, experiments.tokens_file(args.model, "long"))),
        (f"`metrics`: results/scores/{args.model}/text_causal.npz (each matrix normalised once per layer)",
         normalising_every_time,
         lambda: score_file_metrics(atomic.read_npz(f"results/scores/{args.model}/text_causal.npz"), measures)),
        (f"`patching`: `{args.model}` (patches start at the patched layer)", patching_every_layer,
         lambda: patching_check(experiments.patching_settings(config, args.model),
                                experiments.tokens_file(args.model, "first"))),
    ]
    lines = ["| job | CPU s, as it was | CPU s, now | now / before | same numbers |", "|---|---|---|---|---|"]
    for name, before, function in jobs:
        now, then, same = both_ways(function, before, args.repeats)
        lines.append(f"| {name} | {then:.2f} | {now:.2f} | {now / then:.2f} | {'yes' if same else 'NO'} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("reuse", f"_Measured by `python benchmarks/reuse.py --update-docs` on {run.name}'s models, tokens and "
                        f"score files, {args.threads} threads, the least of {args.repeats} runs each way, "
                        "alternating._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
