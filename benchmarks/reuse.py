"""Three steps that no longer compute the same thing twice, each beside the way it was, with the same results.

- **The causal kernel.** The score capture's attention hands a plain causal mask to PyTorch's fused
  attention as ``is_causal`` (``behind_rope.capture.scores.is_plain_causal``), so the kernel skips the blocks
  above the diagonal; before, it got the mask as a tensor and computed them.
- **Each matrix normalised once per layer.** A layer's metrics ask for the diagonal-normalised mean and
  halves several times each; within ``behind_rope.maths.metrics.normalising_once`` each is computed once.
- **Patches start at the patched layer.** Claim C9's patches change the residual state at one layer's
  input; the layers before it would only recompute the base pass's input to that layer, so the patched
  pass now starts there (``behind_rope.position.patching._from_layer``) instead of running every layer
  with a hook that swaps the input in.
- **The score capture skips the hidden keys.** Under a causal mask the recorder computes the scores in
  blocks of queries against only the keys up to each block's last query (``ScoreRecorder.add``), and a
  per-head run sums its per-head scores over heads instead of taking a second product for the head sum;
  before, both products covered the whole S x S matrix.  A sliding-window layer attends in blocks of
  queries too, each over only the keys its window shows (``capture.scores.attend_in_blocks``), where one masked
  call of the fused kernel computed every key.  The products come in other shapes, so the numbers agree
  to float32's rounding, not bit for bit: the table says by how much.

Each pair runs in this process on a finished default run's models, tokens and score files, alternating,
and the table gives the least CPU seconds (this process's, all threads) of ``--repeats`` runs of each way,
how far the runs of each way spread (on a shared machine, a ratio nearer 1 than that spread is noise),
and whether both ways wrote the same numbers, bit for bit, or else the largest difference between them
relative to the largest magnitude of the array it is in.

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


def one_masked_call(query, key, value, allowed, scaling):
    """The fused attention over every key, the mask handed to the kernel as a tensor."""
    import torch

    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=allowed, scale=scaling)


@contextlib.contextmanager
def masked_kernel():
    """The score capture's attention as it was: the causal mask handed to the kernel as a tensor."""
    from behind_rope.capture import scores as capture

    plain, in_blocks = capture.is_plain_causal, capture.attend_in_blocks
    capture.is_plain_causal, capture.attend_in_blocks = (lambda allowed: False), one_masked_call
    try:
        yield
    finally:
        capture.is_plain_causal, capture.attend_in_blocks = plain, in_blocks


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


@contextlib.contextmanager
def whole_score_matrix():
    """The score capture as it was: every product over the whole S x S matrix, hidden keys included, a
    per-head run's head sum a product of its own (the code of ``ScoreRecorder.add`` before the change),
    and a sliding-window layer's attention one masked call of the fused kernel."""
    import torch

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


def fewer_rows(tokens_path, rows: int) -> Path:
    """The first ``rows`` sequences of a token set, in a file of their own (a shorter score run)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="reuse-")) / Path(tokens_path).name
    np.save(path, np.load(tokens_path)[:rows])
    return path


def cpu_of(function):
    """CPU seconds of ``function()`` and its result."""
    started = time.process_time()
    result = function()
    return time.process_time() - started, result


def numbers(result) -> dict:
    """The float arrays of a result by name (a score run's arrays; the metadata holds timings)."""
    if isinstance(result, tuple):
        result = result[0]
    if isinstance(result, (float, np.ndarray)):
        result = np.asarray(result)
        return {"": result} if result.dtype.kind == "f" else {}
    if isinstance(result, dict):
        return {f"{key}/{inner}": value for key, item in result.items() if key != "seconds"
                for inner, value in numbers(item).items()}
    return {}


def agreement(results: list) -> str:
    """'yes' when every result is the same bit for bit, else the largest relative difference of a number."""
    if len({canonical(result) for result in results}) == 1:
        return "yes"
    first, largest = numbers(results[0]), 0.0
    for other in map(numbers, results[1:]):
        for name, array in first.items():
            difference = np.abs(other[name] - array)
            if np.isfinite(difference).any():  # NaN where a mask hides an entry, in both
                largest = max(largest, float(np.nanmax(difference) / (np.nanmax(np.abs(array)) or 1.0)))
    return f"no: within {largest:.0e} (relative)"


def canonical(result) -> str:
    if isinstance(result, tuple):  # a score run: (arrays, metadata); the metadata holds timings
        result = result[0]
    if isinstance(result, dict):
        return json.dumps({key: canonical(value) for key, value in result.items() if key != "seconds"}, sort_keys=True)
    if isinstance(result, np.ndarray):
        return result.tobytes().hex() if result.dtype.kind == "f" else json.dumps(result.tolist())
    return json.dumps(result)


def both_ways(function, before, repeats: int) -> tuple[list[float], list[float], str]:
    """CPU seconds of each run of ``function`` as it is now and inside ``before`` (as it was), and how well both agree."""
    now, then, results = [], [], []
    for _ in range(repeats):
        seconds, result = cpu_of(function)
        now.append(seconds)
        results.append(result)
        with before():
            seconds, result = cpu_of(function)
        then.append(seconds)
        results.append(result)
    return now, then, agreement(results)


def beyond_spread(then: list[float], now: list[float]) -> bool:
    """Whether the two ways differ by more than either way's runs spread (largest / least): on a shared
    machine, a ratio nearer 1 than that is noise."""
    change = max(min(then) / min(now), min(now) / min(then))
    return change > max(max(then) / min(then), max(now) / min(now))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished default run, with its results/")
    parser.add_argument("--model", default="smollm2", help="the LLM of the score run and the patching check")
    parser.add_argument("--threads", type=int, help="torch threads (default: the LLM jobs', resources.llm.threads)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fig5-documents", type=int, default=16, help="Figure 5 documents of the gemma3 row")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    import torch

    from behind_rope import atomic
    from behind_rope.config import load
    from behind_rope.experiments import paths, steps
    from behind_rope.llm.score_run import score_run
    from behind_rope.maths.metrics import Measures, score_file_metrics
    from behind_rope.position.patching import patching_check

    config = load(root=ROOT)
    args.threads = args.threads or config["resources"]["llm"]["threads"]
    torch.set_num_threads(args.threads)
    run = args.run.resolve()
    os.chdir(run)  # the settings name the run's files relative to it
    measures = Measures.of(steps.measures_settings(config))
    score_settings = steps.score_settings(config, args.model, "long", "causal")
    jobs = [
        (f"`scores`: `{args.model}` on `long` (the causal kernel)", masked_kernel,
         lambda: score_run(score_settings, paths.tokens_file(args.model, "long"))),
        (f"`metrics`: results/scores/{args.model}/text_causal.npz (each matrix normalised once per layer)",
         normalising_every_time,
         lambda: score_file_metrics(atomic.read_npz(f"results/scores/{args.model}/text_causal.npz"), measures)),
        (f"`patching`: `{args.model}` (patches start at the patched layer)", patching_every_layer,
         lambda: patching_check(steps.patching_settings(config, args.model),
                                paths.tokens_file(args.model, "first"))),
        (f"`scores`: `{args.model}` on `long`, per head (the score capture skips the hidden keys)", whole_score_matrix,
         lambda: score_run(score_settings, paths.tokens_file(args.model, "long"))),
    ]
    # Figure 5's run, the largest, records no head: its first documents, on the model whose products over
    # keys weigh the most (Gemma-3: 4 heads of 256); and a per-head run of C6-C9 on 256 tokens.
    fig5 = fewer_rows(paths.tokens_file("gemma3", "fig5"), args.fig5_documents)
    jobs += [
        (f"`scores`: `gemma3` on the first {args.fig5_documents} documents of `fig5` (the score capture and the "
         "window skip the hidden keys)", whole_score_matrix,
         lambda: score_run(steps.score_settings(config, "gemma3", "fig5", "causal"), fig5)),
        ("`scores`: `qwen2_5_coder` on `first`, per head (the score capture skips the hidden keys)", whole_score_matrix,
         lambda: score_run(steps.score_settings(config, "qwen2_5_coder", "first", "causal"),
                           paths.tokens_file("qwen2_5_coder", "first"))),
    ]
    jobs[0][2]()  # the first score run of a process pays its one-time costs: not in the table
    lines = ["| job | CPU s, as it was | CPU s, now | now / before | the runs' spread (largest / least), before; now "
             "| beyond the spread | same numbers |", "|---|---|---|---|---|---|---|"]
    for name, before, function in jobs:
        now, then, same = both_ways(function, before, args.repeats)
        spread = f"{max(then) / min(then):.2f}; {max(now) / min(now):.2f}"
        lines.append(f"| {name} | {min(then):.2f} | {min(now):.2f} | {min(now) / min(then):.2f} | {spread} | "
                     f"{'yes' if beyond_spread(then, now) else 'no: noise'} | {same} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("reuse", f"_Measured by `python benchmarks/reuse.py --update-docs` on {run.name}'s models, tokens and "
                        f"score files, {args.threads} thread{'s' if args.threads > 1 else ''}, the least of {args.repeats} runs each way, "
                        "alternating._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
