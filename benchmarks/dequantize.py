"""GGUF -> float32 Hugging Face folder: transformers' own path against behind_rope.llm.dequantize, side by side.

Reference: ``behind_rope.llm.dequantize.reference_cache_gguf_model``, the code of
``behind_rope.llm.dequantize.cache_gguf_model`` before the fast path (``from_pretrained(gguf_file=...)``).
Ours: ``behind_rope.llm.dequantize.cache_gguf_model_fast``.

For each model, each method runs in its own child process (timed from the parent, interpreter start
and imports included, as a workflow rule pays them), alternating which goes first, ``--repeats``
times. The two folders are then compared: the same files, config.json equal, every tensor of
model.safetensors equal bit for bit (and every other file byte for byte). The table gives the
best time of each method, the ratio, the peak memory of each, and whether the outputs are identical.

    python -m benchmarks.dequantize                          # the three pipeline models
    python -m benchmarks.dequantize --models smollm2 --repeats 3
    python -m benchmarks.dequantize --gguf-dir /path/to/results/models
    python -m benchmarks.dequantize --models qwen2_5_coder_1_5b --first-layers 4

With ``--first-layers N`` it compares instead the fast path on the whole model with the fast path on
its first N decoder layers only (``pretrained.<model>.layers``): time, peak memory, and whether every
tensor of the cut model equals the whole model's tensor of the same name.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("smollm2", "qwen2_5_coder", "gemma3")
GGUF_DIRS = (ROOT / "results" / "models", Path("/work/baseline/results/models"))
METHODS = {"reference": "reference_cache_gguf_model", "fast": "cache_gguf_model_fast"}


def run_child(method: str, gguf_path: Path, output: Path, threads: int | None,
              layers: int | None = None) -> tuple[float, float]:
    """Seconds and peak memory (GB) of one conversion in a fresh interpreter; the output folder is
    removed first, untimed."""
    shutil.rmtree(output, ignore_errors=True)
    command = [sys.executable, __file__, "--child", method, str(gguf_path), str(output)]
    if threads:
        command += ["--threads", str(threads)]
    if layers:
        command += ["--first-layers", str(layers)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # as the workflow runs it (tokenizer_config.json records it)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{method} failed on {gguf_path}:\n{done.stderr[-3000:]}")
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])["peak_gb"]


def child(method: str, gguf_path: str, output: str, threads: int | None, layers: int | None = None) -> None:
    from behind_rope.llm import dequantize

    kwargs = {"threads": threads} if method == "fast" and threads else {}
    if layers:
        kwargs["layers"] = layers
    getattr(dequantize, METHODS[method])(gguf_path, output, **kwargs)
    print(json.dumps({"peak_gb": peak_memory_gb()}))


def peak_memory_gb() -> float:
    """This process's peak resident memory (Linux). Not ru_maxrss: it keeps the parent's peak across fork and exec."""
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text()).group(1)) / 2**20


def differences(reference: Path, ours: Path) -> list[str]:
    """What differs between two model folders: files, config.json, tensors (bit for bit), other files' bytes."""
    from safetensors import safe_open

    names = sorted(p.name for p in reference.iterdir())
    problems = [f"files {names} != {sorted(p.name for p in ours.iterdir())}"] if names != sorted(p.name for p in ours.iterdir()) else []
    if json.loads((reference / "config.json").read_text()) != json.loads((ours / "config.json").read_text()):
        problems.append("config.json")
    with safe_open(reference / "model.safetensors", "np") as theirs, safe_open(ours / "model.safetensors", "np") as mine:
        if set(theirs.keys()) != set(mine.keys()) or theirs.metadata() != mine.metadata():
            problems.append(f"tensor names or metadata: {sorted(set(theirs.keys()) ^ set(mine.keys()))}")
        for key in sorted(set(theirs.keys()) & set(mine.keys())):
            a, b = theirs.get_tensor(key), mine.get_tensor(key)
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(
                    np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8)):
                problems.append(f"tensor {key}")
    for name in set(names) - {"model.safetensors"}:
        if (ours / name).exists() and (reference / name).read_bytes() != (ours / name).read_bytes():
            problems.append(name)
    return problems


def find_gguf(model: str, gguf_dir: Path | None) -> Path:
    for folder in [gguf_dir] if gguf_dir else GGUF_DIRS:
        if (folder / model / "model.gguf").exists():
            return folder / model / "model.gguf"
    raise SystemExit(f"no {model}/model.gguf under {gguf_dir or ' or '.join(map(str, GGUF_DIRS))}; "
                     "run the pipeline's assemble_gguf rule first, or pass --gguf-dir")


def compare_first_layers(args) -> None:
    """The fast path on each whole model against the same on its first ``args.first_layers`` layers."""
    from safetensors import safe_open

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dequantize-bench-"))
    print(f"{'model':<20}{'whole (s)':>10}{'first ' + str(args.first_layers) + ' (s)':>12}{'ratio':>8}"
          f"{'peak GB whole/first':>21}  same tensors")
    for index, model in enumerate(args.models):
        gguf_path = find_gguf(model, args.gguf_dir)
        runs = {"whole": [], "first": []}
        for repeat in range(args.repeats):
            for how in ("whole", "first") if (index + repeat) % 2 == 0 else ("first", "whole"):
                layers = args.first_layers if how == "first" else None
                runs[how].append(run_child("fast", gguf_path, workdir / model / how, args.threads, layers))
                print(f"{model} {how}: {runs[how][-1][0]:.1f} s", file=sys.stderr, flush=True)
        with safe_open(workdir / model / "whole" / "model.safetensors", "np") as whole, \
                safe_open(workdir / model / "first" / "model.safetensors", "np") as first:
            same = all(np.array_equal(first.get_tensor(key), whole.get_tensor(key)) for key in first.keys())
        (whole_s, whole_gb), (first_s, first_gb) = min(runs["whole"]), min(runs["first"])
        print(f"{model:<20}{whole_s:>10.1f}{first_s:>12.1f}{whole_s / first_s:>7.1f}x{whole_gb:>14.1f} / {first_gb:.1f}"
              f"  {'yes' if same else 'no'}", flush=True)
        shutil.rmtree(workdir / model)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, help="threads of the fast path (default: the CPUs available)")
    parser.add_argument("--gguf-dir", type=Path, help="folder holding <model>/model.gguf")
    parser.add_argument("--workdir", type=Path, help="where the outputs go (default: a temporary folder)")
    parser.add_argument("--first-layers", type=int, help="compare the whole model with its first N layers (fast path)")
    parser.add_argument("--child", nargs=3, metavar=("METHOD", "GGUF", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child, args.threads, args.first_layers)
    if args.first_layers:
        return compare_first_layers(args)

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dequantize-bench-"))
    rows = []
    for index, model in enumerate(args.models):
        gguf_path = find_gguf(model, args.gguf_dir)
        runs = {method: [] for method in METHODS}
        for repeat in range(args.repeats):
            order = list(METHODS) if (index + repeat) % 2 == 0 else list(METHODS)[::-1]
            for method in order:
                runs[method].append(run_child(method, gguf_path, workdir / model / method, args.threads))
                print(f"{model} {method}: {runs[method][-1][0]:.1f} s", file=sys.stderr, flush=True)
        problems = differences(workdir / model / "reference", workdir / model / "fast")
        rows.append((model, min(runs["reference"]), min(runs["fast"]), problems))
        shutil.rmtree(workdir / model)  # gigabytes per model

    print(f"\n{'model':<15}{'today (s)':>10}{'fast (s)':>10}{'speed-up':>10}{'peak GB today/fast':>20}  identical")
    for model, (reference, reference_gb), (ours, ours_gb), problems in rows:
        print(f"{model:<15}{reference:>10.1f}{ours:>10.1f}{reference / ours:>9.1f}x{reference_gb:>13.1f} / {ours_gb:.1f}  "
              + ("yes" if not problems else "no: " + ", ".join(problems[:5])))
    total_reference, total_ours = sum(row[1][0] for row in rows), sum(row[2][0] for row in rows)
    print(f"{'all':<15}{total_reference:>10.1f}{total_ours:>10.1f}{total_reference / total_ours:>9.1f}x{'':>20}  "
          + ("yes" if not any(row[3] for row in rows) else "no"))
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
