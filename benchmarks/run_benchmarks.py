"""Workflow benchmarks, measured side by side in one run on a scratch copy of the workflow.

    python benchmarks/run_benchmarks.py                 # print the table, write results/benchmarks/summary.json
    python benchmarks/run_benchmarks.py --update-readme # also refresh the README's benchmark table
    python benchmarks/run_benchmarks.py --claims results/claims.json  # only rewrite the README's twin table

Measures: a cold run of the whole DAG at the default scale (ending with the PDF), a no-op rerun,
rebuilding one figure after its script changed (a simulation figure and Figure 3), rebuilding the
paper after a result changed, the arXiv tarball, the twins' training
throughput and peak memory (from the cold run's own metrics and benchmark files), and the peak
memory of a paper-scale simulation (B = 100,000) run in chunks against the same run in a single
chunk.  With --update-readme it also rewrites the README's table of trained-twin results from the
cold run's results/claims.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import copy_workflow  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))
from behind_rope.atomic import write_json  # noqa: E402

README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
TWINS_START, TWINS_END = "<!-- twins:start -->", "<!-- twins:end -->"
LLM_START, LLM_END = "<!-- llm:start -->", "<!-- llm:end -->"


def timed(command, cwd) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def peak_rss_mb(command, cwd) -> tuple[float, float]:
    """(seconds, peak resident memory in MB) of a child process, run alone."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter();"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True);"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code, *command], cwd=cwd, check=True, capture_output=True, text=True)
    seconds, megabytes = map(float, out.stdout.split())
    return seconds, megabytes


def training_measurements(work: Path, twin: str) -> dict:
    metrics = json.loads((work / "results" / "training" / twin / "metrics.json").read_text())
    with open(work / "results" / "benchmarks" / "train" / f"{twin}.tsv") as handle:
        benchmark = next(csv.DictReader(handle, delimiter="\t"))
    return {"tokens_per_second": metrics["tokens_per_second"], "train_seconds": metrics["train_seconds"],
            "peak_rss_mb": float(benchmark["max_rss"]), "device": metrics["device"], "dtype": metrics["dtype"]}


def twins_table(claims: dict) -> str:
    """The trained-twin numbers of claim C3, as written by the pipeline."""
    c3 = claims["C3"]["measured"]
    rows = ["| quantity | value |", "|---|---|"]
    for twin, sanity in c3["sanity"].items():
        rows.append(f"| {twin}: held-out loss / unigram loss (sanity) | {sanity['validation_loss']:.3f} / "
                    f"{sanity['unigram_loss']:.3f} ({'PASS' if sanity['passed'] else 'FAIL'}) |")
    for role in ("runs", "mask_probe", "mask_probe_control", "untrained", "comparisons"):
        for run, local in c3["locality"][role].items():
            amplified = c3["amplification"][role][run]
            values = ", ".join(f"layer {k}: {v:.2f}" for k, v in local["locality"].items())
            rows.append(f"| {run} ({role}): locality; layer-2 key slope (x the largest simulated) | {values}; "
                        f"{amplified['key_slope']:.4f} ({amplified['amplification']:.2f} x) |")
    checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in c3["checks"].items())
    rows.append(f"| **C3** | **{'PASS' if claims['C3']['passed'] else 'FAIL'}** ({checks}) |")
    for run, evidence in claims["C4"]["measured"]["trained_rope_twin"].items():
        values = ", ".join(f"layer {k}: {v['split_half_reliability']:.2f} / {v['nonrelative_index']:.3f} / "
                           f"{v['start_deficit']:+.3f}" for k, v in evidence["layers"].items())
        rows.append(f"| RoPE twin {run}: reliability / non-relative index / start deficit | {values} |")
    return "\n".join(rows)


def _number(value, form: str) -> str:
    return "n/a" if value is None else format(value, form)


def llm_table(claims: dict) -> str:
    """Claim C5 per model: layers 1-4 in the three runs, the checks, every layer, and the layer types."""
    c5 = claims["C5"]["measured"]["models"]
    rows = ["| model | run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|---|"]
    for model, result in c5.items():
        for run, label in (("text", "text, mask"), ("iid_tokens", "i.i.d. tokens, mask"),
                           ("iid_tokens_no_mask", "i.i.d. tokens, no mask")):
            cells = [f"{_number(v['block_reliability'], '.2f')} / {_number(v['nonrelative_index'], '.2f')} / "
                     f"{_number(v['start_deficit'], '+.2f')}" for v in result[run].values()]
            rows.append(f"| {model} | {label} | " + " | ".join(cells) + " |")
        checks = ", ".join(f"{name}: {'yes' if ok else 'no'}" for name, ok in result["checks"].items())
        rows.append(f"| {model} | **{'PASS' if result['passed'] else 'FAIL'}** | {checks} | | | |")
    rows += ["", f"**C5: {'PASS' if claims['C5']['passed'] else 'FAIL'}** ({claims['C5']['threshold']})", "",
             "Every layer on text, block reliability (start deficit sign: + / −; · where the window hides the start):", "",
             "| model | layer: block reliability, start deficit sign (s = sliding window) |", "|---|---|"]
    for model, result in c5.items():
        cells = []
        for layer, v in result["all_layers_text"].items():
            sign = {"positive": "+", "negative": "−"}.get(v["start_deficit_sign"], "·")
            mark = "s" if v.get("layer_type") == "sliding_attention" else ""
            cells.append(f"{layer}{mark}: {_number(v['block_reliability'], '.2f')}{sign}")
        rows.append(f"| {model} | {', '.join(cells)} |")
    rows += ["", "By attention type (text; means over layers):", "",
             "| model | type | layers | block reliability | non-relative index | start deficit |", "|---|---|---|---|---|---|"]
    for model, result in c5.items():
        for kind, v in result["by_layer_type"].items():
            rows.append(f"| {model} | {kind} | {len(v['layers'])} | {_number(v['mean_block_reliability'], '.2f')} | "
                        f"{_number(v['mean_nonrelative_index'], '.2f')} | {_number(v['mean_start_deficit'], '+.2f')} |")
    return "\n".join(rows)


def write_twins_table(claims: dict, source: str) -> None:
    readme = ROOT / "README.md"
    note = f"\n_From `results/claims.json` of {source}._\n\n"
    text = replace_block(readme.read_text(), TWINS_START, TWINS_END, note + twins_table(claims) + "\n")
    readme.write_text(replace_block(text, LLM_START, LLM_END, note + llm_table(claims) + "\n"))


def replace_block(text: str, start: str, end: str, body: str) -> str:
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return head + start + body + end + tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-readme", action="store_true")
    parser.add_argument("--claims", help="only rewrite the README's twin and LLM tables from this claims file")
    args = parser.parse_args()
    if args.claims:
        write_twins_table(json.loads(Path(args.claims).read_text()), "a default-scale run")
        return
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "all"]
    with tempfile.TemporaryDirectory() as scratch:
        work = copy_workflow(Path(scratch))
        full = timed(snakemake, work)
        noop = timed(snakemake, work)
        script = work / "workflow" / "scripts" / "fig2_simulation.py"
        script.write_text(script.read_text() + "\n# restyled\n")
        figure = timed([*snakemake, "fig2"], work)
        script = work / "workflow" / "scripts" / "fig3_nope_gram.py"
        script.write_text(script.read_text() + "\n# restyled\n")
        fig3 = timed([*snakemake, "fig3"], work)
        timed([*snakemake, "paper"], work)  # the PDF takes in the restyled figures
        (work / "results" / "claims.json").touch()
        paper = timed([*snakemake, "paper"], work)
        tarball = timed([*snakemake, "paper_tarball"], work)
        training = {twin: training_measurements(work, twin) for twin in ("nope", "rope")}
        llm_stage = {kind: sum(float(next(csv.DictReader(open(path), delimiter="\t"))["s"])
                               for path in (work / "results" / "benchmarks" / kind).glob("*.tsv"))
                     for kind in ("cache_llm", "llm_scores")}
        claims = json.loads((work / "results" / "claims.json").read_text())
        paper_scale = ["--batch-size", "100000", "--seq-len", "50", "--dim", "64", "--layers", "4", "--seed", "0",
                 "--alpha", "0.5", "--rope", "true", "--threads", "2"]
        simulate = [sys.executable, "-m", "behind_rope", "simulate", "--output", str(work / "paper.npz"), *paper_scale]
        chunked_s, chunked_mb = peak_rss_mb([*simulate, "--chunk-size", "2000"], work)
        single_s, single_mb = peak_rss_mb([*simulate, "--chunk-size", "100000"], work)
    summary = {
        "machine": f"{__import__('os').cpu_count()} cores",
        "full_default_run_s": full,
        "noop_rerun_s": noop,
        "single_figure_after_edit_s": figure,
        "fig3_after_edit_s": fig3,
        "paper_after_changed_claims_s": paper,
        "paper_tarball_s": tarball,
        "training": training,
        "llm_stage_s": llm_stage,
        "paper_scale_simulation_chunked": {"seconds": chunked_s, "peak_rss_mb": chunked_mb},
        "paper_scale_simulation_one_chunk": {"seconds": single_s, "peak_rss_mb": single_mb},
        "ratios": {
            "noop_over_full": noop / full,
            "figure_over_full": figure / full,
            "chunked_over_one_chunk_memory": chunked_mb / single_mb,
            "chunked_over_one_chunk_time": chunked_s / single_s,
        },
    }
    write_json(ROOT / "results" / "benchmarks" / "summary.json", summary)
    table = "\n".join([
        "| measurement | value | target |",
        "|---|---|---|",
        f"| whole DAG, default scale, cold (`snakemake --cores all`) | {full:.0f} s | < 1,800 s |",
        f"| no-op rerun | {noop:.1f} s ({noop / full:.3f} of a cold run) | < 3 s |",
        f"| `snakemake fig2` after editing its script | {figure:.1f} s ({figure / full:.3f} of a cold run) | < 20 s |",
        f"| `snakemake fig3` after editing its script (no model rerun) | {fig3:.1f} s ({fig3 / full:.3f} of a cold run) | < 20 s |",
        f"| `snakemake paper` after `results/claims.json` changed (numbers, then LaTeX) | {paper:.1f} s | < 30 s |",
        f"| `snakemake paper_tarball` (arXiv sources) | {tarball:.1f} s | |",
        *[f"| training throughput, {twin} twin ({t['device']}, {t['dtype']}) | {t['tokens_per_second']:.0f} tokens/s, "
          f"{t['train_seconds']:.0f} s, peak memory {t['peak_rss_mb']:.0f} MB | < 300 s, < 4,000 MB |"
          for twin, t in training.items()],
        f"| LLM stage: dequantising the GGUF models once / every extraction run (all models) | "
        f"{llm_stage['cache_llm']:.0f} s / {llm_stage['llm_scores']:.0f} s | extraction < 600 s |",
        f"| NoPE/RoPE throughput ratio | {training['nope']['tokens_per_second'] / training['rope']['tokens_per_second']:.2f} | |",
        f"| paper-scale simulation (B = 100,000), chunks of 2,000: peak memory | {chunked_mb:.0f} MB in {chunked_s:.0f} s | < 2,000 MB |",
        f"| the same in one chunk of 100,000 | {single_mb:.0f} MB in {single_s:.0f} s "
        f"(chunked/one-chunk memory ratio {chunked_mb / single_mb:.2f}, time ratio {chunked_s / single_s:.2f}) | |",
    ])
    print(table)
    print(twins_table(claims))
    print(llm_table(claims))
    if args.update_readme:
        readme = ROOT / "README.md"
        note = f"\n_Measured by `python benchmarks/run_benchmarks.py --update-readme` on {summary['machine']}._\n\n"
        readme.write_text(replace_block(readme.read_text(), README_START, README_END, note + table + "\n"))
        write_twins_table(claims, "the same default-scale run")


if __name__ == "__main__":
    main()
