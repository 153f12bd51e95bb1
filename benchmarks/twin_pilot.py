"""The twins' recipe pilot: which training recipe makes a twin competent, and at what CPU cost.

Trains candidate recipes on seeds outside C3's deciding set and judges them by the competence checks of
claim C3 (config/claims.yaml, C3.competence) and by CPU time only, never by C3's statistics, which it does not
compute.  Per recipe and seed it prints the held-out and unigram losses, the order gap
(``behind_rope.twins.competence``) at each tested position and averaged with its standard error, the steps
trained and the CPU seconds of the training alone.  The held-out loss is also recorded every ``--every``
steps, so that a stop rule can be read off the curves.

    python -m benchmarks.twin_pilot --out pilot.json                      # every recipe below, seed 101
    python -m benchmarks.twin_pilot --recipes small --positional nope rope --seeds 101 102 --out pilot.json
    python -m benchmarks.twin_pilot --out pilot.json --update-docs --recipes    # only the table, from pilot.json
    python -m benchmarks.twin_pilot --out deep.json --update-docs --recipes --block other_block  # another table

With ``--probe N ...`` it also sizes C3's probe on every kept NoPE twin instead of training: i.i.d. tokens of each
size N go through the pipeline's own twin-inputs and scores steps, and only the probe's noise is read (the layer-2
key slopes' half differences, row by row as C3's power precondition reads them), with the power that noise gives
a twin at the amplification bound.  No C3 statistic (locality, key slope) is computed.

    python -m benchmarks.twin_pilot --recipes --probe 1024 12288 --keep kept --out pilot.json

It reads the prepared corpus of this checkout (``snakemake prepare_corpus`` first), and ``--probe`` the bound slope
from its results/claims.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from behind_rope.config import load
from behind_rope.experiments.paths import split_files
from behind_rope.twins.competence import order_gap
from behind_rope.twins.model import TwinSize, save_twin
from behind_rope.twins.train import StopWhen, TrainSettings, train_twin
from behind_rope.twins.vocabulary import remap, twin_vocabulary

ROOT = Path(__file__).resolve().parents[1]

SMALL = {"vocab_size": 2048, "hidden_size": 128, "layers": 4, "heads": 2, "kv_heads": 1, "head_dim": 64,
         "intermediate_size": 384}
RECIPES = {
    # the orientation point for C3's recipe: 1.05M parameters, 1,200 steps of 32 x 64 tokens
    "small": {"model": SMALL, "batch_size": 32, "learning_rate": 3e-3, "steps": 1200},
    "small_fast": {"model": SMALL, "batch_size": 32, "learning_rate": 6e-3, "steps": 800},
    "small_wide_batch": {"model": SMALL, "batch_size": 64, "learning_rate": 4e-3, "steps": 600},
    "small_vocab1024": {"model": SMALL | {"vocab_size": 1024}, "batch_size": 32, "learning_rate": 3e-3, "steps": 1000},
    "small_long": {"model": SMALL, "batch_size": 32, "learning_rate": 3e-3, "steps": 2000},
    "small_slow": {"model": SMALL, "batch_size": 32, "learning_rate": 1.5e-3, "steps": 1200},
    "small_batch16": {"model": SMALL, "batch_size": 16, "learning_rate": 3e-3, "steps": 2400},
    # twice the layers at about the same products per token: a NoPE twin must build positions before using them
    "deep": {"model": SMALL | {"hidden_size": 96, "layers": 8, "intermediate_size": 256}, "batch_size": 32,
             "learning_rate": 3e-3, "steps": 2000},
}
POSITIONS = (16, 32, 48, 62)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pilot(name: str, recipe: dict, positional: str, seed: int, train_raw, valid_raw, seq_len: int, every: int,
          order_sequences: int, keep: Path | None = None) -> dict:
    size = TwinSize(**recipe["model"], max_positions=seq_len)
    settings = TrainSettings(steps=recipe["steps"], batch_size=recipe["batch_size"], learning_rate=recipe["learning_rate"],
                             warmup_steps=recipe.get("warmup_steps", 25), weight_decay=0.1,
                             checkpoint_every=recipe["steps"], eval_sequences=512, seed=seed)
    vocabulary = twin_vocabulary(train_raw, size.vocab_size)
    train, valid = remap(train_raw, vocabulary), remap(valid_raw, vocabulary)
    never = StopWhen(every=every, window=every, min_relative_gain=-1e9, eval_sequences=512)  # the curve, no stop
    resume = Path(tempfile.mkdtemp(prefix=f"twin_pilot_{name}_{positional}_{seed}_"))
    cpu, wall = cpu_seconds(), time.perf_counter()
    model, history, summary = train_twin(positional, size, settings, train, valid, resume, "cpu", stop_when=never,
                                         progress=False, compile_body=True)  # as the train step does
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    held_out = valid[512 : 512 + order_sequences]
    gap = order_gap(model, held_out, POSITIONS)
    if keep:  # for a probe pilot on the same weights (C3's power): the folder a trained twin has
        save_twin(model, keep / f"{name}_{positional}_{seed}", {"twin": name, "size": recipe["model"]})
        np.save(keep / f"{name}_{positional}_{seed}" / "vocabulary.npy", vocabulary)
    return {"recipe": name, "positional": positional, "seed": seed, **recipe, "parameters": summary["parameters"],
            "validation_loss": summary["validation_loss"], "unigram_loss": summary["unigram_loss"],
            "dtype": summary["dtype"], "cpu_capability": summary["cpu_capability"], "train_cpu_s": cpu,
            "train_wall_s": wall, "order_gap": gap,
            "curve": [(h["step"], h["valid_loss"]) for h in history if "valid_loss" in h]}


def probe_noise(twin: Path, sequences: int, config: dict, folder: Path) -> dict:
    """The layer-2 probe noise of one kept twin at one probe size, through the pipeline's steps, and the power it
    gives a twin at the bound by C3's power precondition (behind_rope.claims.power)."""
    import subprocess

    from behind_rope import atomic
    from behind_rope.claims.power import locality_power, row_noises, sequences_for_power
    from behind_rope.experiments.steps import score_settings, twin_input_settings
    from behind_rope.maths.metrics import key_slope_half_differences

    folder.mkdir(parents=True, exist_ok=True)
    files = split_files(config)
    run = [sys.executable, "-m", "behind_rope"]
    inputs = twin_input_settings(config) | {"probe_sequences": sequences}
    subprocess.run([*run, "twin-inputs", "--settings", json.dumps(inputs), "--vocabulary", str(twin / "vocabulary.npy"),
                    "--valid", str(ROOT / files["valid"]), "--train", str(ROOT / files["train"]), "--output-dir",
                    str(folder)], check=True, capture_output=True)
    settings = score_settings(config, "nope", "random", "causal") | {"source": {"twin": str(twin)}}
    subprocess.run([*run, "scores", "--settings", json.dumps(settings), "--threads", "1", "--tokens",
                    str(folder / "random.npy"), "--output", str(folder / "scores.npz")], check=True, capture_output=True)
    scores = atomic.read_npz(folder / "scores.npz")
    layer = list(scores["layers"]).index(2)
    half = np.array(key_slope_half_differences(scores["half_a"][layer], scores["half_b"][layer]))
    c3 = json.loads((ROOT / "results" / "claims.json").read_text())["C3"]
    preconditions = config["claims"]["C3"]["preconditions"]
    bound, min_power = c3["measured"]["probe_power"]["bound_slope"], preconditions["min_power"]
    min_locality = config["claims"]["C3"]["criteria"]["min_locality"]
    noises = row_noises(half.tolist(), preconditions["row_noise_window"])
    return {"twin": twin.name, "sequences": sequences, "pooled_noise": float(np.sqrt(np.mean(half**2))),
            "median_noise": float(np.median(noises)), "noisiest_rows": [int(r) + 2 for r in np.argsort(-np.abs(half))[:4]],
            "power": locality_power(bound, noises, min_locality),
            "sequences_for_power": sequences_for_power(sequences, bound, noises, min_locality, min_power)}


def probe_table(probes: list[dict]) -> str:
    rows = ["", "", "C3's probe on the kept NoPE twins (layer 2; each row's key-slope noise from the halves, as C3's power "
            "precondition measures it, row by row: pooled over the rows and the median row; the power at the bound, and "
            "the size that noise predicts for the power the precondition asks):", "",
            "| twin | probe sequences | pooled noise | median row noise | noisiest rows (query) | power | predicted size for power |",
            "|---|---|---|---|---|---|---|"]
    for row in probes:
        rows.append(f"| {row['twin']} | {row['sequences']:,} | {row['pooled_noise']:.4f} | {row['median_noise']:.5f} | "
                    f"{', '.join(map(str, row['noisiest_rows']))} | {row['power']:.4f} | {row['sequences_for_power'] or 'none'} |")
    return "\n".join(rows)


def table(records: list[dict], source: str) -> str:
    """The docs table of the pilot's runs, one row per recipe, twin and seed."""
    rows = [f"_Written by `python -m benchmarks.twin_pilot --update-docs` from {source}._", "",
            "| recipe | twin | seed | twin vocabulary, hidden, FFN | batch | peak LR | steps | held-out / unigram loss "
            "| order gap (nats; lower 95 % end) | CPU s (training) |", "|---" * 10 + "|"]
    for row in records:
        model, gap = row["model"], row["order_gap"]
        rows.append(f"| {row['recipe']} | {row['positional']} | {row['seed']} | {model['vocab_size']:,}, "
                    f"{model['hidden_size']}, {model['intermediate_size']} | {row['batch_size']} | {row['learning_rate']:g} "
                    f"| {row['steps']:,} | {row['validation_loss']:.3f} / {row['unigram_loss']:.3f} | "
                    f"{gap['mean_gap']:+.3f} ± {gap['standard_error']:.3f} ({gap['mean_gap'] - 1.96 * gap['standard_error']:+.3f}) "
                    f"| {row['train_cpu_s']:.0f} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="*", default=list(RECIPES), choices=list(RECIPES),
                        help="the recipes to train (none: only rewrite the table from --out)")
    parser.add_argument("--positional", nargs="+", default=["nope"], choices=["nope", "rope"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[101])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--every", type=int, default=100, help="steps between held-out evaluations")
    parser.add_argument("--order-sequences", type=int, default=1024)
    parser.add_argument("--out", type=Path, required=True, help="JSON file: one record per run, appended as they end")
    parser.add_argument("--keep", type=Path, help="a folder to keep each trained twin in (weights and vocabulary)")
    parser.add_argument("--update-docs", action="store_true", help="rewrite a pilot table of docs/results.md")
    parser.add_argument("--block", default="twin_pilot_depth", help="which table --update-docs rewrites (its marker's name)")
    parser.add_argument("--probe", nargs="+", type=int, default=[], help="probe sizes to measure on every kept NoPE twin")
    parser.add_argument("--source", default="the runs of this checkout's pilot", help="where the runs were made, for the table")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = load()
    files = split_files(config)
    train_raw, valid_raw = (np.load(ROOT / files[split]) for split in ("train", "valid"))
    kept = json.loads(args.out.read_text()) if args.out.is_file() else []
    records = [row for row in kept if "recipe" in row]
    probes = [row for row in kept if "pooled_noise" in row]
    for twin in sorted(args.keep.glob("*_nope_*")) if args.probe and args.keep else []:
        for sequences in args.probe:
            row = probe_noise(twin, sequences, config, Path(tempfile.mkdtemp(prefix="twin_pilot_probe_")))
            probes.append(row)
            args.out.write_text(json.dumps(records + probes, indent=1) + "\n")
            print(f"probe {twin.name} at {sequences:,} sequences: pooled noise {row['pooled_noise']:.4f}, median "
                  f"{row['median_noise']:.5f}, power {row['power']:.4f}", flush=True)
    for name in args.recipes:
        for positional in args.positional:
            for seed in args.seeds:
                row = pilot(name, RECIPES[name], positional, seed, train_raw, valid_raw, config["data"]["seq_len"],
                            args.every, args.order_sequences, args.keep)
                records.append(row)
                args.out.write_text(json.dumps(records + probes, indent=1) + "\n")
                gaps = ", ".join(f"{p}: {v['gap']:+.3f}" for p, v in row["order_gap"]["positions"].items())
                print(f"{name:18} {positional} seed {seed}: held-out {row['validation_loss']:.3f} / unigram "
                      f"{row['unigram_loss']:.3f}; order gap {row['order_gap']['mean_gap']:+.3f} "
                      f"± {row['order_gap']['standard_error']:.3f} ({gaps}); {row['train_cpu_s']:.0f} CPU s, "
                      f"{row['train_wall_s']:.0f} s", flush=True)
    if args.update_docs:
        from benchmarks.results_doc import RESULTS, update

        update(args.block, table(records, args.source) + (probe_table(probes) if probes else ""), RESULTS)


if __name__ == "__main__":
    main()
