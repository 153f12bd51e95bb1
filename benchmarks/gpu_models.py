"""Every pretrained model's runs on the GPU path against the CPU path, through the pipeline's own entry points.

A lent GPU machine has neither the hub nor the models' weights.  So each model the default config scores
(``experiments.runs.scored_llms``) is built with random weights from its own ``config.json``, the one ``cache_llm``
wrote (``results/models/<model>/hf/config.json``: the real shapes, layer types, sliding window, and only the
layers the pipeline dequantises), and saved as a local folder beside the model's tokenizer.  Then, per model:

- ``score_run`` (behind_rope.llm.score_run) on every token set the model reads, with the mask, and without it
  for an i.i.d. set; and each of the model's variants (``llm.variants``: embedding replacements, NTK scaling)
  on the token set of claims C6-C8 (``first``); each with the settings ``experiments.steps.score_settings`` gives it;
- ``patching_check`` (behind_rope.position.patching), claim C9's patches and closed-system check, for the
  models claims C6-C9 read.

Each runs on ``--sequences`` random-token sequences of the set's length (the set's BOS first where it has
one), with the batch size auto: on the CPU in float32 (the reference), on CUDA in float32, and on CUDA in
the default dtype (``llm.dtype: auto``, bf16).  It prints, per run, the seconds and batch size of each, the
peak GPU memory, whether the masked (NaN) entries are the CPU's, and the largest difference of the
recorded arrays from the CPU's, relative to the CPU array's largest magnitude.

    python -m benchmarks.gpu_models --output gpu_models.json --update-docs
    python -m benchmarks.gpu_models --devices cpu --sequences 1      # the CPU half alone (no GPU needed)
    python -m benchmarks.gpu_models --from-json gpu_models.json      # the docs table from a GPU machine's file
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

from benchmarks.results_doc import CLUSTER, add_result_options, keep_result

ROOT = Path(__file__).resolve().parents[1]

CASES = {"cpu, float32": ("cpu", "float32"), "cuda, float32": ("cuda", "float32"), "cuda, auto": ("cuda", "auto")}
# The arrays the claims read, per kind of run; the table reports the largest difference over them.
SCORE_KEYS = ("mean_scores", "half_a", "half_b", "log_z", "sink")


def random_model_folder(config_path: Path, folder: Path) -> Path:
    """A model with the architecture and shapes of ``config_path``, random weights (seed 0), saved in ``folder``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(config_path.parent)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(folder)  # safetensors
    return folder


def planned_runs(config: dict, model: str) -> list[tuple[str, str, str]]:
    """(model or variant, token set, mask) for every token set the model reads, causal, and without the mask
    for an i.i.d. set; each of its variants on ``first``."""
    from behind_rope.config import set_models
    from behind_rope.experiments.runs import model_variants

    sets = [name for name in config["llm"]["inputs"] if model in set_models(config, name)]
    runs = [(model, name, "causal") for name in sets]
    runs += [(model, name, "noncausal") for name in sets if config["llm"]["inputs"][name].get("iid_of")]
    if "first" in sets:
        runs += [(variant, "first", "causal") for variant in model_variants(config, model)]
    return runs


def token_set(config: dict, model: str, name: str, sequences: int, tokenizer, vocab_size: int) -> torch.Tensor:
    """``sequences`` random-token rows of the set's length, its BOS first when the set asks for it."""
    from behind_rope.experiments.steps import llm_input_sets

    spec = llm_input_sets(config, model)[name]
    rows = torch.randint(0, vocab_size, (sequences, spec["seq_len"]), generator=torch.Generator().manual_seed(0))
    if spec.get("first_token") == "bos":
        rows[:, 0] = tokenizer.bos_token_id
    return rows


def leaves(value) -> list[float]:
    """Every number in a nested result (dicts in key order, lists in order), for comparing two results."""
    if isinstance(value, dict):
        return [x for key in sorted(value) for x in leaves(value[key])]
    if isinstance(value, list | tuple):
        return [x for item in value for x in leaves(item)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


def difference(reference: np.ndarray, got: np.ndarray) -> tuple[float, bool]:
    """The largest absolute difference over the finite entries relative to the reference's largest magnitude,
    and whether both have NaN (masked) at the same places."""
    reference, got = np.asarray(reference, dtype=float), np.asarray(got, dtype=float)
    finite = np.isfinite(reference)
    same_mask = bool(np.array_equal(finite, np.isfinite(got)))
    scale = np.abs(reference[finite]).max() if finite.any() else 1.0
    gap = np.abs(got[finite] - reference[finite]).max() / (scale or 1.0) if finite.any() else 0.0
    return float(gap), same_mask


def on(settings: dict, case: str) -> dict:
    device, dtype = CASES[case]
    return {**settings, "device": device, "dtype": dtype, "batch_size": "auto"}


def timed(function):
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    result = function()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
    return result, time.perf_counter() - started, peak


def compare_model(config: dict, model: str, models_from: Path, work: Path, sequences: int, cases: list[str]) -> list[dict]:
    from transformers import AutoTokenizer

    from behind_rope.experiments.runs import position_models
    from behind_rope.experiments.steps import patching_settings, score_settings
    from behind_rope.llm.score_run import score_run
    from behind_rope.position.patching import patching_check

    folder = random_model_folder(models_from / model / "hf" / "config.json", work / model / "hf")
    source = {"local": str(folder), "tokenizer": str(models_from / model / "tokenizer")}
    tokenizer = AutoTokenizer.from_pretrained(source["tokenizer"])
    vocab_size = json.loads((folder / "config.json").read_text()).get("vocab_size") or len(tokenizer)
    rows = []
    for name, inputs, mask in planned_runs(config, model):
        tokens_path = work / model / f"{inputs}.npy"
        np.save(tokens_path, token_set(config, model, inputs, sequences, tokenizer, vocab_size).numpy())
        settings = {**score_settings(config, name, inputs, mask), "source": source}
        runs = {case: timed(partial(score_run, on(settings, case), tokens_path)) for case in cases}
        rows.append(summarise(f"{name} {inputs}_{mask}", runs, cases, lambda result: result[0], SCORE_KEYS,
                              lambda result: result[1].get("batch_size", "auto"), lambda result: result[1]["dtype"]))
        print(json.dumps(rows[-1]), flush=True)
    if model in position_models(config):
        tokens_path = work / model / "first.npy"
        np.save(tokens_path, token_set(config, model, "first", sequences, tokenizer, vocab_size).numpy())
        settings = {**patching_settings(config, model), "source": source}
        runs = {case: timed(partial(patching_check, on(settings, case), tokens_path)) for case in cases}
        rows.append(summarise(f"{model} patching", runs, cases,
                              lambda result: {"patches": np.asarray(leaves(result["patches"])),
                                              "closed_system": np.asarray(leaves(result["closed_system"]))},
                              ("patches", "closed_system"), lambda result: result["batch_size"],
                              lambda result: result["dtype"]))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def summarise(run: str, runs: dict, cases: list[str], arrays_of, keys, batch_of, dtype_of) -> dict:
    reference = arrays_of(runs[cases[0]][0])
    row = {"run": run, "cases": {}}
    for case in cases:
        result, seconds, peak = runs[case]
        arrays = arrays_of(result)
        gaps = {key: difference(reference[key], arrays[key]) for key in keys if key in reference}
        row["cases"][case] = {"seconds": seconds, "batch_size": batch_of(result), "dtype": dtype_of(result),
                              "peak_gpu_mb": peak, "max_relative_difference": max(gap for gap, _ in gaps.values()),
                              "same_mask": all(same for _, same in gaps.values()),
                              "worst_array": max(gaps, key=lambda key: gaps[key][0])}
    return row


def group_of(run: str) -> tuple[str, str]:
    """(model, kind of run) of a row: its token sets with the mask, an i.i.d. set without it, its variants, patching."""
    name, what = run.split(" ", 1)
    model = name.split(".", 1)[0]
    if what == "patching":
        return model, "claim C9's patches and closed-system check"
    if "." in name:
        return model, "variants on `first`, with the mask"
    return model, "token sets without the mask" if what.endswith("_noncausal") else "token sets with the mask"


def update_docs(result: dict) -> None:
    from benchmarks.results_doc import update

    cases = [case for case in result["cases"] if case != "cpu, float32"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in result["rows"]:
        groups.setdefault(group_of(row["run"]), []).append(row)
    dtype = {case: result["rows"][0]["cases"][case]["dtype"] for case in cases}
    lines = [f"_Measured by `python -m benchmarks.gpu_models --update-docs` on one {result['gpu']} (torch "
             f"{result['torch']}), the CPU reference on {result['cpu_threads']} threads of the same machine: each "
             f"model of the default config with random weights from its own config.json, {result['sequences']} "
             "random-token sequences per run at each token set's length, batch size auto.  Seconds are summed over "
             "the runs and include loading the model; a difference is the largest over the runs and the arrays "
             "the claims read, relative to the CPU array's largest magnitude._\n",
             "| model | runs | CPU, float32: s | "
             + " | ".join(f"{case.split(',')[0]}, {dtype[case]}: s, batch, peak GPU MB" for case in cases) + " | "
             + " | ".join(f"{case.split(',')[0]}, {dtype[case]}: largest difference (array)" for case in cases)
             + " | masked entries the CPU's |", "|---" * (4 + 2 * len(cases)) + "|"]
    for (model, kind), rows in groups.items():
        by_case = {case: [row["cases"][case] for row in rows] for case in ["cpu, float32", *cases]}
        worst = {case: max(by_case[case], key=lambda c: c["max_relative_difference"]) for case in cases}
        timing = [f"{sum(c['seconds'] for c in by_case[case]):.1f}, {max(c['batch_size'] for c in by_case[case])}, "
                  f"{max(c['peak_gpu_mb'] for c in by_case[case]):.0f}" for case in cases]
        gaps = [f"{worst[case]['max_relative_difference']:.1e} (`{worst[case]['worst_array']}`)" for case in cases]
        same = all(c["same_mask"] for case in cases for c in by_case[case])
        cpu_seconds = sum(c["seconds"] for c in by_case["cpu, float32"])
        lines.append(f"| {model} | {kind} ({len(rows)}) | {cpu_seconds:.1f} | " + " | ".join(timing) + " | "
                     + " | ".join(gaps) + f" | {'yes' if same else 'NO'} |")
    update("gpu_models", "\n".join(lines), CLUSTER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-from", default=str(ROOT / "results" / "models"),
                        help="where each model's config.json (<model>/hf) and tokenizer (<model>/tokenizer) are")
    parser.add_argument("--models", nargs="+", help="only these models (default: every model the config scores)")
    parser.add_argument("--sequences", type=int, default=2, help="random-token sequences per run")
    parser.add_argument("--devices", choices=("cpu", "all"), default="all",
                        help="cpu: the CPU reference alone, to try the script without a GPU")
    add_result_options(parser, "gpu_models", CLUSTER)
    args = parser.parse_args()
    if args.from_json:
        update_docs(json.loads(Path(args.from_json).read_text()))
        return
    cases = list(CASES) if args.devices == "all" else ["cpu, float32"]
    if args.devices == "all" and not torch.cuda.is_available():
        sys.exit("gpu_models.py compares the GPU path with the CPU path: it needs a CUDA GPU (or pass --devices cpu)")
    from behind_rope.config import load
    from behind_rope.experiments.runs import scored_llms

    config = load()
    models = args.models or scored_llms(config)
    missing = [m for m in models if not (Path(args.models_from) / m / "hf" / "config.json").is_file()]
    if missing:
        sys.exit(f"no config.json for {', '.join(missing)} under {args.models_from}/<model>/hf: run "
                 "`snakemake results/models/<model>/hf` once here, or copy those folders' config.json and tokenizer")
    result = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none", "torch": torch.__version__,
              "cpu_threads": torch.get_num_threads(), "sequences": args.sequences, "cases": cases, "rows": []}
    with tempfile.TemporaryDirectory() as work:
        for model in models:
            result["rows"] += compare_model(config, model, Path(args.models_from), Path(work), args.sequences, cases)
    keep_result(result, args, update_docs)


if __name__ == "__main__":
    main()
