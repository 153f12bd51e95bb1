"""The score capture with PyTorch's stock float32 linear layers (MKL) and with oneDNN's packed ones, side by side.

``behind_rope.capture.kernels.onednn_linears`` makes the linear layers of a CPU score run and of the patching
compute with oneDNN.  For each model this script records the first 4 layers of the first ``--rows``
sequences of its Figure 5 token set both ways (as its Figure 5 run does), on 1 thread (as a score job runs on 2 cores), alternating
which goes first, ``--repeats`` times, and keeps each way's least CPU time.  It prints the ratio and how
far the recorded mean scores moved (largest |difference| against the 1-99 % width of the scores, and the
same for the per-head log Z of a per-head run), which float32 rounding alone should explain.

    python benchmarks/onednn_linear.py                 # needs results/models/<model>/hf and results/inputs (snakemake)
    python benchmarks/onednn_linear.py --update-docs   # also rewrite the onednn table of docs/results.md
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
MODELS = ("smollm2", "gemma3", "qwen2_5_coder", "qwen2_5_coder_1_5b")
LAYERS = 4
WAYS = ("stock (MKL)", "oneDNN")


def capture(model, tokens, batch_size: int, way: str, per_head: bool = False) -> tuple[float, dict]:
    """CPU seconds and the recorder's arrays of one capture, ``way`` being one of WAYS."""
    from behind_rope.capture.scores import record_scores

    stock = mock.patch("behind_rope.capture.kernels.onednn_available", return_value=False)
    with stock if way == WAYS[0] else nullcontext():
        started = time.process_time()
        result = record_scores(model, tokens.split(batch_size), range(LAYERS), per_head=per_head).result()
    return time.process_time() - started, result


def largest_change(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    finite = np.isfinite(a) & np.isfinite(b)
    return float(np.max(np.abs(a - b)[finite])), float(np.subtract(*np.quantile(a[finite], [0.99, 0.01])))


def measure(name: str, rows: int, repeats: int, batch_size: int) -> dict:
    import torch

    from behind_rope.llm.loading import load_model

    tokens = torch.from_numpy(np.load(ROOT / "results" / "inputs" / name / "fig5.npy")[:rows])
    model = load_model({"local": str(ROOT / "results" / "models" / name / "hf")}, name, torch.device("cpu"),
                       torch.float32)
    capture(model, tokens[:1], 1, WAYS[1])  # first-call costs (thread pools, oneDNN's kernel generation)
    times, results = {way: [] for way in WAYS}, {}
    for repeat in range(repeats):
        for way in (WAYS if repeat % 2 == 0 else WAYS[::-1]):
            seconds, results[way] = capture(model, tokens, batch_size, way)
            times[way].append(seconds)
    stock, onednn = (results[way] for way in WAYS)
    per_head = [capture(model, tokens, batch_size, way, per_head=True)[1] for way in WAYS]  # untimed
    return {"model": name, "rows": rows, "seq_len": tokens.shape[1],
            "stock_s": min(times[WAYS[0]]), "onednn_s": min(times[WAYS[1]]),
            "scores": largest_change(stock["mean_scores"], onednn["mean_scores"]),
            "log_z": largest_change(per_head[0]["log_z"], per_head[1]["log_z"])}


def markdown(table: list[dict], repeats: int) -> str:
    lines = [f"_Measured by `python benchmarks/onednn_linear.py --update-docs`: the first {table[0]['rows']} rows of "
             f"each model's Figure 5 set ({table[0]['seq_len']} tokens), its first {LAYERS} layers (as Figure 5's runs; "
             f"the log Z from a per-head run of the same rows), 1 thread, least CPU time of {repeats} alternating repeats._", "",
             "| model | stock (MKL): CPU s | oneDNN: CPU s | oneDNN / stock | mean scores: largest change / 1-99 % width "
             "| per-head log Z: largest change / 1-99 % width |",
             "|---|---|---|---|---|---|"]
    for row in table:
        lines.append(f"| {row['model']} | {row['stock_s']:.2f} | {row['onednn_s']:.2f} | "
                     f"{row['onednn_s'] / row['stock_s']:.2f} | {row['scores'][0]:.1e} / {row['scores'][1]:.1f} | "
                     f"{row['log_z'][0]:.1e} / {row['log_z'][1]:.1f} |")
    stock, onednn = sum(row["stock_s"] for row in table), sum(row["onednn_s"] for row in table)
    lines.append(f"| all | {stock:.2f} | {onednn:.2f} | {onednn / stock:.2f} | | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=None, help="default: every model of MODELS dequantised here")
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--update-docs", action="store_true", help="rewrite the onednn table of docs/results.md")
    args = parser.parse_args()
    import torch

    from behind_rope.capture.kernels import onednn_available

    if not onednn_available():
        sys.exit("This PyTorch has no oneDNN linear operators: the score runs use the stock kernels here.")
    torch.set_num_threads(1)
    present = [m for m in MODELS if (ROOT / "results" / "models" / m / "hf").is_dir()]
    models = args.models or present
    missing = [m for m in models if m not in present]
    if missing or not models:
        sys.exit(f"No dequantised model for {', '.join(missing) or 'any model'} under results/models: run "
                 f"`snakemake {' '.join(f'results/inputs/{m}/fig5.npy' for m in missing or MODELS)}` first.")
    table = [measure(name, args.rows, args.repeats, args.batch_size) for name in models]
    text = markdown(table, args.repeats)
    print(text)
    if args.update_docs:
        from results_doc import update

        update("onednn", text)


if __name__ == "__main__":
    main()
