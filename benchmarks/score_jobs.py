"""What one job per score run costs a laptop, beside the same runs made in one process.

Every score run is a job of the one `scores` rule (issue 25): a twin's runs and an LLM's variants
each pay a process start (importing torch and transformers, loading the model), where they used to
share one process.  This script makes the same runs both ways, side by side in one run, and prints
the CPU seconds of each (the processes' own, from getrusage):

- a twin's four runs (held-out text and i.i.d. tokens, with and without the mask; one thread);
- an LLM's variants on the `first` token set (two threads).

"One process" loops over the runs in a single `python` (each run still loads its model, as a job
does), so the difference is what the process starts cost.

    python benchmarks/score_jobs.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/score_jobs.py --run DIR --update-docs   # also rewrite the score_jobs table of docs/results.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# The runs of one process, given as [[settings, tokens, output], ...] on stdin; the collector off, as a step runs.
IN_ONE_PROCESS = """
import gc, json, sys
gc.disable()
import torch
from behind_rope.cli.scores import save_scores
from behind_rope.llm.score_run import score_run
threads, runs = json.load(sys.stdin)
torch.set_num_threads(threads)
for settings, tokens, output in runs:
    save_scores(output, *score_run(settings, tokens))
gc.freeze()
"""


def child_cpu(command: list[str], run: Path, stdin: str | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, input=stdin, text=True, check=True, capture_output=True, cwd=run,
                   env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def both_ways(run: Path, runs: list[tuple[dict, str]], threads: int) -> tuple[float, float]:
    """CPU seconds of the runs as one cold process each (the pipeline's jobs where warm starts are off, as on a
    cluster), and all in one process."""
    with tempfile.TemporaryDirectory() as scratch:
        apart = sum(child_cpu([sys.executable, "-m", "behind_rope", "scores", "--settings", json.dumps(settings),
                               "--tokens", tokens, "--threads", str(threads), "--output", f"{scratch}/{k}.npz"], run)
                    for k, (settings, tokens) in enumerate(runs))
        listed = [[settings, tokens, f"{scratch}/one_{k}.npz"] for k, (settings, tokens) in enumerate(runs)]
        together = child_cpu([sys.executable, "-c", IN_ONE_PROCESS], run, json.dumps([threads, listed]))
    return apart, together


def finished_run_config(run: Path, twin: str, model: str) -> dict:
    """The default config, once ``run`` is checked to hold the twin's weights and the model."""
    from behind_rope.config import load

    for needed in (f"results/training/{twin}/model.safetensors", f"results/models/{model}"):
        if not (run / needed).exists():
            raise SystemExit(f"Error: {run / needed} is missing; give --run a finished default run.")
    return load()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished default run, with its results/")
    parser.add_argument("--twin", default="nope")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    from behind_rope.experiments.paths import tokens_file
    from behind_rope.experiments.runs import MASKS, TWIN_INPUTS, model_variants
    from behind_rope.experiments.steps import score_settings

    config = finished_run_config(args.run, args.twin, args.model)
    twin_runs = [(score_settings(config, args.twin, inputs, mask), tokens_file(args.twin, inputs))
                 for inputs in TWIN_INPUTS for mask in MASKS]
    variants = model_variants(config, args.model)
    variant_runs = [(score_settings(config, variant, "first", "causal"),
                     tokens_file(variant, "first")) for variant in variants]
    rows = [(f"the twin `{args.twin}`: its {len(twin_runs)} runs (1 thread)", *both_ways(args.run, twin_runs, 1)),
            (f"`{args.model}`: its {len(variants)} variants on `first`, with the mask (2 threads)",
             *both_ways(args.run, variant_runs, 2))]
    lines = ["| runs | CPU s, a cold process each (the pipeline's jobs without warm starts, as on a cluster) | CPU s, in one process | difference per run |",
             "|---|---|---|---|"]
    lines += [f"| {name} | {apart:.1f} | {together:.1f} | {(apart - together) / (len(twin_runs) if k == 0 else len(variants)):.1f} |"
              for k, (name, apart, together) in enumerate(rows)]
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("score_jobs", f"_Measured by `python benchmarks/score_jobs.py --update-docs` on {args.run.name}'s "
                             "inputs and models._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
