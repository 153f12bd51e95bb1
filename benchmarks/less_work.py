"""What each way of doing less work would take off a cold run, and what it would cost the claims.

The default run misses its 900 s target by more than engineering has left to win (docs/results.md,
"Benchmarks"); doing less work is a decision, written down before the run that measures it.  This
script prices each option from a kept cold run (`run_benchmarks.py --keep DIR`) and reads that run's
claims.json for what it would cost:

- CPU seconds: the per-job CPU seconds of the run's `benchmark:` files (lower bounds: Snakemake samples);
- the claims: for fewer documents or sequences, the split-half reliabilities the claims need, predicted
  by the Spearman-Brown formula (halves of half the size: r / (2 - r)) from the run's own values; for
  fewer seeds or steps, what C3's pre-registered rule and the twins' training record say.  A prediction,
  not a measurement: a run at the smaller size is what would decide.

    python benchmarks/less_work.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/less_work.py --run DIR --update-docs   # also rewrite the less_work table of docs/results.md
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def benchmark_cpu(run: Path, pattern: str) -> float:
    """CPU seconds of the jobs whose ``benchmark:`` files match ``pattern`` (lower bounds: Snakemake samples)."""
    total = 0.0
    for path in sorted(run.glob(f"results/benchmarks/{pattern}")):
        with path.open() as file:
            total += float(next(csv.DictReader(file, delimiter="\t"))["cpu_time"] or 0)
    return total


def halved(reliability: float) -> float:
    """The split-half reliability of a measure over half as much data (Spearman-Brown)."""
    return reliability / (2 - reliability)


def models_reaching(values: dict[str, list[float]], bound: float, min_layers: int) -> tuple[int, int]:
    """How many models have at least ``min_layers`` values >= ``bound``: now, and at half the data."""
    return (sum(sum(v >= bound for v in layers) >= min_layers for layers in values.values()),
            sum(sum(halved(v) >= bound for v in layers) >= min_layers for layers in values.values()))


def reliability_cost(what: str, models: dict, read, layers: list[int], bound: float, min_layers: int) -> str:
    """How many models reach ``bound`` in at least ``min_layers`` of ``layers``, now and at half the data."""
    values = {model: [read(record, str(layer)) for layer in layers] for model, record in models.items()}
    now, half = models_reaching(values, bound, min_layers)
    return (f"{what} >= {bound} in at least {min_layers} of layers {', '.join(map(str, layers))}: "
            f"{now} of {len(values)} now, {half} predicted")


def options(run: Path, config: dict) -> list[tuple[str, float, str]]:
    """(option, CPU s it takes off the run, what it costs the claims) for each way of doing less work."""
    claims, rules = json.loads((run / "results/claims.json").read_text()), config["claims"]
    nope, untrained = rules["C3"]["runs"]["twin"], rules["C3"]["controls"]["untrained"]
    dropped = [f"{nope}_seed3", f"{nope}_seed4", f"{untrained}_seed3", f"{untrained}_seed4"]
    seeds_cpu = sum(benchmark_cpu(run, f"{step}/{twin}{suffix}") for twin in dropped
                    # a twin's score runs: one job each (scores/<twin>/*), or one job for all in runs before issue 25
                    for step, suffix in (("train", ".tsv"), ("scores", ".tsv"), ("scores", "/*.tsv"),
                                         ("gram", ".tsv"), ("metrics", "/*.tsv")))
    seeds_cost = f"C3's rule needs at least {rules['C3']['criteria']['min_seeds']} seeds: with three it cannot pass"

    trained = [name for name, spec in config["training"]["twins"].items() if spec.get("steps", 1) != 0]
    steps_cpu = sum(benchmark_cpu(run, f"train/{twin}.tsv") for twin in trained) * (1 - 200 / config["training"]["steps"])
    runs = claims["C3"]["measured"]["seeds"]
    capped = sum(not seed["stopped_early"] for seed in runs.values())
    steps_cost = (f"{capped} of the {len(runs)} NoPE seeds trained to the cap without reaching the plateau rule: "
                  "fewer steps train every twin less; no prediction of C3's values")

    recorded = rules["C5d"]["recorded"]
    figure5_cost = reliability_cost(
        "models whose Figure 5 panels reach a split-half reliability (as drawn)", claims["C5d"]["measured"]["models"],
        lambda record, layer: record["figure5"][layer]["drawn_reliability"], rules["C5d"]["criteria"]["layers"],
        recorded["figure5_min_reliability"], recorded["figure5_min_layers"])
    criteria = rules["C5a"]["criteria"]
    text_cost = reliability_cost(
        "models whose text reaches C5a's block reliability", claims["C5a"]["measured"]["models"],
        lambda record, layer: record["text"][layer]["block_reliability"],
        [layer for layer in criteria["layers"] if layer > 1],  # C5a's structure check is after layer 1
        criteria["min_reliability"], criteria["min_layers"])

    llms = config["llm"]["models"]
    return [("C3 on three seeds instead of five (two trainings, two untrained twins, their score and metrics jobs)",
             seeds_cpu, seeds_cost),
            ("every twin trained 200 steps instead of 300", steps_cpu, steps_cost),
            ("Figure 5 on half its documents", sum(benchmark_cpu(run, f"scores/{m}/fig5_causal.tsv") for m in llms) / 2,
             figure5_cost),
            ("the all-layer text runs on half their sequences",
             sum(benchmark_cpu(run, f"scores/{m}/text_causal.tsv") for m in llms) / 2, text_cost)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished cold run (run_benchmarks.py --keep DIR)")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args()
    if not (args.run / "results/claims.json").is_file():
        raise SystemExit(f"Error: {args.run}/results/claims.json is missing; give --run a finished default run.")
    from behind_rope.config import load

    rows = options(args.run, load())
    lines = ["| less work (a decision before the run) | CPU s it takes off the cold run | what it costs the claims |",
             "|---|---|---|"]
    lines += [f"| {name} | {seconds:.0f} | {cost} |" for name, seconds, cost in rows]
    lines.append(f"| the four together | {sum(seconds for _, seconds, _ in rows):.0f} | |")
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        update("less_work", f"_Computed by `python benchmarks/less_work.py --update-docs` from {args.run.name}: its "
                            "`benchmark:` files (lower bounds) and its claims.json (Spearman-Brown predictions)._\n\n"
                            + "\n".join(lines))


if __name__ == "__main__":
    main()
