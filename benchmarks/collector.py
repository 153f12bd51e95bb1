"""What Python's cyclic garbage collector costs a job, beside the same job without it.

`python -m behind_rope <step>` runs a step with the collector off and freezes what exists at the end
(`behind_rope.__main__.run_without_collector`): importing torch and transformers makes some 350,000
objects that the collector tracks, which it would otherwise walk again and again while they load, and
once more at exit.  This script runs the same jobs of a finished default run both ways, alternating,
and prints the CPU seconds of each (the processes' own, from getrusage, the least of ``--repeats``):

- a twin's score run (1 thread), an LLM's score run on the `first` token set (2 threads), the metrics of
  a score file;
- "the collector on" is the same command line with the collector left as Python sets it.

The outputs of both ways are compared array by array: the collector decides when memory is freed,
never what is computed.

    python benchmarks/collector.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/collector.py --run DIR --update-docs   # also rewrite the collector table of docs/results.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from score_jobs import child_cpu, finished_run_config  # noqa: E402

# The command line's main() without run_without_collector: the collector as Python sets it.
COLLECTOR_ON = "import sys; from behind_rope.__main__ import main; main(sys.argv[1:])"


def same_outputs(first: Path, second: Path) -> bool:
    if first.suffix == ".json":
        return first.read_text() == second.read_text()
    with np.load(first) as a, np.load(second) as b:
        return a.files == b.files and all(np.array_equal(a[key], b[key], equal_nan=True) for key in a.files
                                          if key != "metadata")


def both_ways(run: Path, step: list[str], output_suffix: str, repeats: int) -> tuple[float, float, bool]:
    """Least CPU seconds of ``step`` with the collector off (the command line) and on, and whether the two
    wrote the same arrays."""
    off, on = [], []
    with tempfile.TemporaryDirectory() as scratch:
        outputs = {way: Path(scratch) / f"{way}{output_suffix}" for way in ("off", "on")}
        for _ in range(repeats):
            off.append(child_cpu([sys.executable, "-m", "behind_rope", *step, "--output", str(outputs["off"])], run))
            on.append(child_cpu([sys.executable, "-c", COLLECTOR_ON, *step, "--output", str(outputs["on"])], run))
        return min(off), min(on), same_outputs(outputs["off"], outputs["on"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished default run, with its results/")
    parser.add_argument("--twin", default="nope")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    from behind_rope.experiments.paths import tokens_file
    from behind_rope.experiments.steps import measures_settings, score_settings

    config = finished_run_config(args.run, args.twin, args.model)

    def score_step(model: str, inputs: str, threads: int) -> list[str]:
        settings = score_settings(config, model, inputs, "causal")
        return ["scores", "--settings", json.dumps(settings), "--tokens", tokens_file(model, inputs),
                "--threads", str(threads)]

    metrics_input = f"results/scores/{args.model}/first_causal.npz"
    jobs = [(f"`scores`: the twin `{args.twin}` on `text`, with the mask (1 thread)", score_step(args.twin, "text", 1), ".npz"),
            (f"`scores`: `{args.model}` on `first`, with the mask (2 threads)", score_step(args.model, "first", 2), ".npz"),
            (f"`metrics`: {metrics_input}", ["metrics", "--settings", json.dumps(measures_settings(config)),
                                             "--input", metrics_input], ".json")]
    lines = ["| job | CPU s, collector on (Python's default) | CPU s, collector off (the command line) | off / on | same outputs |",
             "|---|---|---|---|---|"]
    for name, step, suffix in jobs:
        off, on, same = both_ways(args.run, step, suffix, args.repeats)
        lines.append(f"| {name} | {on:.2f} | {off:.2f} | {off / on:.2f} | {'yes' if same else 'NO'} |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("collector", f"_Measured by `python benchmarks/collector.py --update-docs` on {args.run.name}'s inputs "
                            f"and models, the least of {args.repeats} runs each, alternating._\n\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
