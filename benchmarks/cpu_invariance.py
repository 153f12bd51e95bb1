"""Claim C3 under float32 and bf16 training and under three CPU kernel sets, side by side: does its verdict
depend on the machine?

Float kernels differ between CPUs (and between vector instruction sets on one CPU), and bf16 rounds far
more than either, so the twins' weights differ and drift apart over training; a verdict that rests on
trained weights must not flip with them.  This script runs everything claim C3 reads (the data, every
seed of every twin, their score runs, metrics and Gram matrices, the simulations it compares with) on
scratch copies of the workflow at the default scale, one copy per arm:

- ``float32``: the twins trained in float32 (what ``training.dtype: auto`` does on a CPU), native kernels;
- ``bf16``: the twins trained in bf16 autocast (``training.dtype: bfloat16``), native kernels;
- ``avx2``: float32 on the kernels of a CPU without AVX-512, emulated on this one: ``ATEN_CPU_CAPABILITY=avx2``
  (PyTorch's own kernels and torch.compile's code), ``ONEDNN_MAX_CPU_ISA=AVX2`` and ``MKL_ENABLE_INSTRUCTIONS=AVX2``
  (the matrix products);
- ``portable``: float32 with ``ATEN_CPU_CAPABILITY=default`` (PyTorch's portable kernels, no AVX2/AVX-512).

Before an arm runs, a short probe in its environment prints the kernel set PyTorch reports and the rate of one
2,048 x 2,048 product against the native one: an emulation that changed no kernel would show the native set at
the native rate.  It then decides C3 from each copy with the pre-registered rule and prints every arm's per-seed
statistics, its verdicts against the first arm's, and the twins' summed training time.

    python -m benchmarks.cpu_invariance                  # print the tables
    python -m benchmarks.cpu_invariance --update-docs    # also write them into docs/results.md
    python -m benchmarks.cpu_invariance --arms bf16 float32   # only these arms
    python -m benchmarks.cpu_invariance --keep DIR       # keep the copies in DIR/<arm>
    python -m benchmarks.cpu_invariance --reuse DIR      # decide again from copies kept earlier (no training);
                                                         # --note says where each came from
    python -m benchmarks.cpu_invariance --speed 300      # only the training speed: the NoPE twin's first 300
                                                         # steps in bf16 and float32, side by side, 1 thread each
                                                         # (with --update-docs, into docs/performance.md)

``--speed`` is what ``training.dtype: auto`` rests on: which dtype trains the twins faster on this CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from behind_rope import atomic
from behind_rope.claims.c3 import claim_c3
from behind_rope.claims.gate import leaves, verdicts
from behind_rope.claims.outcome import settle
from behind_rope.claims.panels import panel_statistics
from behind_rope.config import claim_arguments, load
from behind_rope.experiments.paths import gram_files, split_files, twin_files
from behind_rope.experiments.runs import c3_twin_runs, competence_twins
from behind_rope.experiments.steps import claims_settings, twin_settings
from behind_rope.pipeline.workspace import snakemake_environment
from benchmarks.results_doc import PERFORMANCE, RESULTS, update
from benchmarks.workspace import copy_workflow

ROOT = Path(__file__).resolve().parents[1]

# Arm -> the environment that picks its float kernels (empty: the machine's own) and the config it overlays.
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
ARMS = {"float32": ({}, {"training": {"dtype": "float32"}}), "bf16": ({}, {"training": {"dtype": "bfloat16"}}),
        "avx2": (AVX2, {"training": {"dtype": "float32"}}),
        "portable": ({"ATEN_CPU_CAPABILITY": "default"}, {"training": {"dtype": "float32"}})}
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def c3_targets(config: dict) -> list[str]:
    """Every file claim C3 is decided from."""
    runs = c3_twin_runs(config)
    metrics = [run for group in ("seeds", "untrained") for roles in runs[group].values() for run in roles.values()]
    metrics += [f"simulation/{name}" for name in claim_arguments(config, "C3")["simulation_variants"]]
    training = [twin_files(twin)["metrics"] for twin in config["training"]["twins"]]
    competence = [f"results/competence/{twin}.json" for twin in competence_twins(config)]
    return ([f"results/metrics/{run}.json" for run in metrics] + training + competence
            + list(gram_files(config).values()))


def decide_c3(work: Path, config: dict) -> dict:
    """C3 from a copy's files, with the criteria of config/claims.yaml.  Its metrics are computed again from the
    copy's score files with this checkout's measures (what the metrics rule does), so that a kept copy, whose
    twins took an hour to train, is read with the measures this checkout defines."""
    from behind_rope.experiments.steps import measures_settings
    from behind_rope.maths.metrics import Measures, score_file_metrics

    measures = Measures.of(measures_settings(config))

    def metrics_of(run: str) -> dict:
        return score_file_metrics(atomic.read_npz(work / "results" / "scores" / f"{run}.npz"), measures)

    runs = c3_twin_runs(config)
    needed = [run for group in ("seeds", "untrained") for roles in runs[group].values() for run in roles.values()]
    metrics = {run: metrics_of(run) for run in needed}
    c3 = claims_settings(config)["claims"]["C3"]  # the arguments the claims step passes
    simulation = {name: metrics_of(f"simulation/{name}") for name in c3["simulation_variants"]}
    training = {twin: atomic.read_json(work / twin_files(twin)["metrics"]) for twin in config["training"]["twins"]}
    for twin in competence_twins(config):  # what the claims step merges in: the order gap of C3's competence
        training[twin]["order_gap"] = atomic.read_json(work / "results" / "competence" / f"{twin}.json")
    panels = {twin: panel_statistics(atomic.read_npz(work / path)) for twin, path in gram_files(config).items()}
    return settle(claim_c3(metrics, simulation, training, panels, runs, c3))


def arm_environment(kernels: dict[str, str], **extra: str) -> dict[str, str]:
    """This process's environment with an arm's float kernels (none named: the machine's own)."""
    env = {key: value for key, value in os.environ.items() if key not in KERNEL_VARIABLES} | extra
    return env | kernels


PROBE = """
import time, torch
torch.set_num_threads(1)
a = torch.randn(2048, 2048)
a @ a
started = time.perf_counter()
for _ in range(3):
    a @ a
print(torch.backends.cpu.get_cpu_capability(), 3 * 2 * 2048**3 / (time.perf_counter() - started) / 1e9)
"""


def kernel_probe(kernels: dict[str, str]) -> tuple[str, float]:
    """(the kernel set PyTorch reports, single-thread GFLOP/s of a 2,048 x 2,048 product) in an arm's environment."""
    done = subprocess.run([sys.executable, "-c", PROBE], env=arm_environment(kernels), capture_output=True, text=True,
                          check=True)
    capability, rate = done.stdout.split()
    return capability, float(rate)


def kernels_line(arms: list[str]) -> str:
    """Each arm's kernel probe, against the native one: proof that an emulation changed the kernels it names."""
    native = kernel_probe({})
    parts = []
    for arm in arms:
        capability, rate = kernel_probe(ARMS[arm][0]) if ARMS[arm][0] else native
        parts.append(f"{arm}: {capability}, {rate:.0f} GFLOP/s ({rate / native[1]:.2f} of native)")
    return "Kernel probe (one 2,048 x 2,048 product, 1 thread): " + "; ".join(parts) + "."


def run_copy(arm: str, scratch: Path, targets: list[str]) -> tuple[Path, float]:
    kernels, overlay = ARMS[arm]
    work = copy_workflow(scratch / arm)
    env = snakemake_environment(work, arm_environment(kernels, HF_HUB_OFFLINE="1"))
    (work / "arm.yaml").write_text(json.dumps(overlay))  # JSON is YAML
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "all", *targets, "--configfile", "arm.yaml"],
                          cwd=work, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the C3 runs of the arm {arm} failed:\n{done.stderr[-3000:]}")
    return work, time.perf_counter() - started


def training_seconds(work: Path, config: dict) -> float:
    """The twins' summed training time (each trains on one thread, so about its CPU time)."""
    return sum(atomic.read_json(work / "results" / "logs" / "train" / f"{twin}.json")["train_seconds"]
               for twin in config["training"]["twins"])


def table(results: dict[str, dict], per_seed: bool = False) -> str:
    """Each statistic over the seeds and the verdict, per arm; with ``per_seed``, first each seed's capability
    and dtype, steps trained and probe statistics."""
    names = list(next(iter(results.values()))["measured"]["probe"]["statistics"])
    rows = ["| arm | seed | CPU capability, dtype | steps | " + " | ".join(names) + " | on its own |",
            "|---" * (len(names) + 5) + "|"] if per_seed else []
    for arm, claim in results.items() if per_seed else ():
        for seed in claim["measured"]["seeds"].values():
            rows.append(f"| {arm} | {seed['seed']} | {seed['cpu_capability']}, {seed['dtype']} | {seed['steps']} | "
                        + " | ".join(f"{seed['probe'][name]:.3f}" for name in names)
                        + f" | {'PASS' if seed['passes_on_its_own'] else 'FAIL'} |")
    rows += [""] if per_seed else []
    rows += ["| arm | statistic | mean [95 % interval] | seeds passing | verdict |", "|---|---|---|---|---|"]
    for arm, claim in results.items():
        for name, rule in claim["measured"]["probe"]["statistics"].items():
            low, high = rule["interval"]
            rows.append(f"| {arm} | {name} | {rule['mean']:.3f} [{low:.3f}, {high:.3f}] | "
                        f"{rule['seeds_passing']}/{rule['seeds']} | {'PASS' if rule['passed'] else 'FAIL'} |")
        rows.append(f"| {arm} | **C3** | | | **{claim['outcome']}** |")
    rows += ["", "| arm | Figure 3 panels that hold | controls that pass (each must fail) |", "|---|---|---|"]
    for arm, claim in results.items():
        panels = [letter for letter, panel in claim["measured"]["panels"].items() if panel["passed"]]
        controls = [name for name, control in claim["measured"]["controls"].items() if control["passed"]]
        rows.append(f"| {arm} | {', '.join(panels) or 'none'} | {', '.join(controls) or 'none'} |")
    # Every verdict the gate holds C3 to (behind_rope.claims.gate.verdicts), each arm against the first; then the
    # verdicts recorded and not gated (the panels', and the statistics' where the probe lacks the power), so that
    # a flip the gate does not hold is still shown.
    gated = {arm: verdicts({"C3": claim}) for arm, claim in results.items()}
    recorded = {arm: {path: value for path, value in leaves({"C3": claim}) if isinstance(value, bool)
                      and path.split(".")[-1] == "passed" and ".seeds." not in path and path not in gated[arm]}
                for arm, claim in results.items()}
    first, *others = gated
    differing = {arm: sorted(path for path in gated[first] if gated[first][path] != gated[arm].get(path))
                 for arm in others}
    moved = {arm: sorted(path for path in recorded[first] if recorded[first][path] != recorded[arm].get(path))
             for arm in others}
    rows.append("")
    if not any(differing.values()):
        rows.append(f"Every one of the {len(gated[first])} verdicts of C3 that the verdict gate holds is the same in the "
                    f"arms {', '.join(gated)}.")
    rows += [f"**These verdicts of C3 differ between the arms {first} and {arm}:** {', '.join(paths)}."
             for arm, paths in differing.items() if paths]
    if any(moved.values()):
        rows.append(f"Recorded and not gated, these differ from {first}'s: "
                    + "; ".join(f"{arm}: {', '.join(paths)}" for arm, paths in moved.items() if paths) + ".")
    return "\n".join(rows)


def timing_table(seconds: dict[str, float]) -> str:
    first = next(iter(seconds))
    rows = ["| arm | the twins' training, s (summed) | / the first arm's |", "|---|---|---|"]
    rows += [f"| {arm} | {value:.0f} | {value / seconds[first]:.2f} |" for arm, value in seconds.items()]
    return "\n".join(rows)


def training_speed(config: dict, arms: list[str], steps: int) -> str:
    """The NoPE twin's first ``steps`` steps once per arm, the arms side by side (one thread each, so that they
    share the machine alike), and each arm's tokens per second against the first's."""
    import torch

    from behind_rope.twins.train import training_dtype

    files = split_files(config)
    if not all((ROOT / files[split]).is_file() for split in ("train", "valid")):
        raise SystemExit("no prepared corpus in this checkout: run `snakemake prepare_corpus` first")
    scratch = Path(tempfile.mkdtemp(prefix="training-speed-"))
    runs = {}
    try:
        for arm in arms:
            kernels, overlay = ARMS[arm]
            settings = twin_settings(config, "nope")
            settings["train"] |= {"steps": steps, "checkpoint_every": steps}
            settings |= {"device": "cpu", "dtype": overlay["training"]["dtype"],
                         "stop_when": settings["stop_when"] | {"every": steps + 1}}
            env = arm_environment(kernels, OMP_NUM_THREADS="1")
            out = scratch / arm
            runs[arm] = (out, subprocess.Popen(
                [sys.executable, "-m", "behind_rope", "train", "--settings", json.dumps(settings), "--threads", "1",
                 "--train", str(ROOT / files["train"]), "--valid", str(ROOT / files["valid"]), "--output-dir", str(out),
                 "--resume-dir", str(scratch / f"{arm}_resume"), "--code", "speed", "--run-record",
                 str(scratch / f"{arm}_run.json")], env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True))
        metrics = {}
        for arm, (out, process) in runs.items():
            if process.wait():
                raise SystemExit(f"the arm {arm} failed:\n{process.stderr.read()[-3000:]}")
            metrics[arm] = atomic.read_json(out / "metrics.json") | atomic.read_json(scratch / f"{arm}_run.json")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    auto = str(training_dtype(torch.device("cpu"), "auto")).removeprefix("torch.")
    first = next(iter(metrics))
    rows = [f"_Measured by `python -m benchmarks.cpu_invariance --speed {steps}`: the NoPE twin's first {steps} steps, "
            f"the arms side by side, 1 thread each; `training.dtype: auto` picks {auto} on this CPU._", "",
            "| arm | CPU capability, dtype | tokens/s | / the first arm's |", "|---|---|---|---|"]
    rows += [f"| {arm} | {m['cpu_capability']}, {m['dtype']} | {m['tokens_per_second']:,.0f} | "
             f"{m['tokens_per_second'] / metrics[first]['tokens_per_second']:.2f} |" for arm, m in metrics.items()]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/results.md")
    parser.add_argument("--keep", help="keep the scratch copies in this folder")
    parser.add_argument("--reuse", help="decide from the copies a run with --keep left in this folder")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS),
                        help="the arms to run (default: all; with --speed, float32 and bf16, one per core)")
    parser.add_argument("--per-seed", action="store_true", help="also print each seed's statistics, arm by arm")
    parser.add_argument("--speed", type=int, metavar="STEPS", help="only time STEPS training steps per arm")
    parser.add_argument("--note", default="", help="with --reuse: where each kept arm came from, for the table's header")
    args = parser.parse_args()
    config = load()
    if args.speed:
        text = training_speed(config, args.arms or ["float32", "bf16"], args.speed)
        print(text)
        if args.update_docs:
            update("training_speed", text, PERFORMANCE)
        return
    args.arms = args.arms or list(ARMS)
    probe = kernels_line(args.arms)
    print(probe, flush=True)
    targets = c3_targets(config)
    scratch = Path(args.reuse or args.keep or tempfile.mkdtemp(prefix="cpu-invariance-"))
    results, seconds, training = {}, {}, {}
    try:
        for arm in args.arms:
            if args.reuse:
                work = scratch / arm
            else:
                work, seconds[arm] = run_copy(arm, scratch, targets)
            results[arm], training[arm] = decide_c3(work, config), training_seconds(work, config)
            print(f"{arm}: C3 {results[arm]['outcome']}", flush=True)
    finally:
        if not (args.keep or args.reuse):
            shutil.rmtree(scratch, ignore_errors=True)
    took = f" ({', '.join(f'{arm} {value:.0f} s' for arm, value in seconds.items())})" if seconds else ""
    text = (f"_Measured by `python -m benchmarks.cpu_invariance --update-docs`: every twin and run claim C3 reads, at "
            f"the default scale, once per arm on 2 cores{took}. Arms: `float32`, the twins trained in float32 (what "
            "`auto` does on a CPU); `bf16`, in bf16 autocast; `avx2`, float32 on the kernels of a CPU without AVX-512, "
            "emulated; `portable`, float32 on PyTorch's portable kernels (`ATEN_CPU_CAPABILITY=default`)."
            + (f" {args.note}" if args.note else "") + "_\n\n"
            + probe + "\n\n" + table(results, args.per_seed) + "\n\n" + timing_table(training))
    print(text)
    print(json.dumps({arm: claim["outcome"] for arm, claim in results.items()}))
    if args.update_docs:
        update("cpu_invariance", text, RESULTS)


if __name__ == "__main__":
    main()
