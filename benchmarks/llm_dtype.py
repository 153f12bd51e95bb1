"""The LLM score runs in float32 and in bfloat16 (``llm.dtype``), side by side on the same rows: speed, and
how much the measurement moves.

For each model, the first ``--rows`` sequences of its Figure 5 token set (results/inputs/<model>/fig5.npy)
go through the first 4 layers in each dtype, alternating which goes first, ``--repeats`` times (the best
time of each is kept; the model is loaded once per dtype, outside the timing).  Then, per layer, three
correlations over the panel as drawn (diagonal-normalised block means, ``behind_rope.maths.metrics``):

- float32 against bfloat16 on the same rows: how much the dtype moves the drawn pattern;
- the two halves of the rows, in float32: the sampling noise the claims already live with;
- the same two halves in bfloat16.

If the dtype moved the pattern by as much as sampling does, the first correlation would fall to the
second's level; it staying near 1 while the second is lower says the dtype's error is small next to
the noise of the claims.  The largest |difference| of the mean scores is given against their spread.

    python benchmarks/llm_dtype.py                           # the default scale's LLMs, 16 rows
    python benchmarks/llm_dtype.py --models gemma3 --rows 32 --update-docs
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
MODELS = ("smollm2", "gemma3", "qwen2_5_coder", "qwen2_5_coder_1_5b")
LAYERS = 4
GRID = 256  # what Figure 5 draws per side at most


def record(model, tokens, batch_size: int):
    from behind_rope.capture.scores import record_scores

    started = time.perf_counter()
    recorder = record_scores(model, tokens.split(batch_size), range(LAYERS))
    return time.perf_counter() - started, recorder.result()


def drawn(matrix):
    from behind_rope.maths.blocks import block_mean
    from behind_rope.maths.metrics import diagonal_normalise

    return block_mean(diagonal_normalise(matrix), GRID)


def correlation(a, b) -> float:
    keep = np.isfinite(a) & np.isfinite(b)
    return float(np.corrcoef(a[keep], b[keep])[0, 1])


def measure(name: str, rows: int, repeats: int, batch_size: int) -> list[dict]:
    import torch

    from behind_rope.llm.loading import load_model

    tokens = torch.from_numpy(np.load(ROOT / "results" / "inputs" / name / "fig5.npy")[:rows])
    source = {"local": str(ROOT / "results" / "models" / name / "hf")}
    models = {dtype: load_model(source, name, torch.device("cpu"), getattr(torch, dtype)) for dtype in ("float32", "bfloat16")}
    times = {dtype: [] for dtype in models}
    results = {}
    for repeat in range(repeats):
        for dtype in (list(models) if repeat % 2 == 0 else list(models)[::-1]):
            seconds, results[dtype] = record(models[dtype], tokens, batch_size)
            times[dtype].append(seconds)
    single, half = results["float32"], results["bfloat16"]
    table = []
    for layer in range(LAYERS):
        mean32, mean16 = single["mean_scores"][layer], half["mean_scores"][layer]
        finite = np.isfinite(mean32)
        table.append({
            "model": name, "layer": layer + 1, "rows": rows,
            "float32_s": min(times["float32"]), "bfloat16_s": min(times["bfloat16"]),
            "dtype_r": correlation(drawn(mean32), drawn(mean16)),
            "halves_r_float32": correlation(drawn(single["half_a"][layer]), drawn(single["half_b"][layer])),
            "halves_r_bfloat16": correlation(drawn(half["half_a"][layer]), drawn(half["half_b"][layer])),
            "max_abs_diff": float(np.max(np.abs(mean32 - mean16)[finite])),
            "raw_spread": float(np.subtract(*np.quantile(mean32[finite], [0.99, 0.01]))),
        })
    return table


def markdown(table: list[dict], threads: int) -> str:
    lines = [f"_Measured by `python benchmarks/llm_dtype.py --update-docs`: the first {table[0]['rows']} rows of each "
             f"model's Figure 5 set, 4 layers, {threads} threads, best of the repeats; r: correlation of the drawn "
             "panels (diagonal-normalised block means)._", "",
             "| model | layer | float32 s | bfloat16 s | speed-up | r, float32 vs bfloat16 | r, halves, float32 | "
             "r, halves, bfloat16 | max abs diff of mean scores / 1-99 % width |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        first = row["layer"] == 1
        lines.append(" | ".join([
            f"| {row['model'] if first else ''}", str(row["layer"]),
            f"{row['float32_s']:.1f}" if first else "", f"{row['bfloat16_s']:.1f}" if first else "",
            f"{row['float32_s'] / row['bfloat16_s']:.2f}" if first else "",
            f"{row['dtype_r']:.3f}", f"{row['halves_r_float32']:.3f}", f"{row['halves_r_bfloat16']:.3f}",
            f"{row['max_abs_diff']:.3f} / {row['raw_spread']:.1f}"]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the dtype table of docs/results.md")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    missing = [m for m in args.models if not (ROOT / "results" / "models" / m / "hf").is_dir()]
    if missing:
        sys.exit(f"No dequantised model for {', '.join(missing)} under results/models: run "
                 f"`snakemake {' '.join(f'results/inputs/{m}/fig5.npy' for m in missing)}` first.")
    table = [row for name in args.models for row in measure(name, args.rows, args.repeats, args.batch_size)]
    text = markdown(table, args.threads)
    print(text)
    if args.update_docs:
        from results_doc import update

        update("dtype", text)


if __name__ == "__main__":
    main()
