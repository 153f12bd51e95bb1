"""Command-line entry points that the Snakemake rules call: ``python -m behind_rope <step> ...``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from behind_rope import atomic


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def derive(args) -> None:
    from behind_rope import theory

    result = theory.derive()
    result["figure1"] = theory.figure1_scores(n=3, alpha=0.0)
    atomic.write_json(args.output, result)
    for check in result["checks"]:
        print(f"{'PASS' if check['passed'] else 'FAIL'}  {check['name']}")


def monte_carlo(args) -> None:
    import torch

    from behind_rope.simulate import monte_carlo_layer2_error

    torch.set_num_threads(args.threads)
    rows = monte_carlo_layer2_error(args.alphas, args.dims, args.samples, args.seq_len, args.chunk_size, args.seed)
    atomic.write_json(args.output, rows)
    for row in rows:
        print(f"E={row['dim']:4d} alpha={row['alpha']:.2f} max|theory - simulation| = {row['max_abs_error']:.4f}")


def simulate(args) -> None:
    import torch

    from behind_rope.simulate import SimulationSize, Variant, simulate as run

    torch.set_num_threads(args.threads)
    variant = Variant(alpha=args.alpha, norm=args.norm, causal=args.causal, rope=args.rope, score_scale=args.score_scale)
    size = SimulationSize(args.batch_size, args.seq_len, args.dim, args.layers, args.chunk_size, args.rope_theta)
    arrays = run(variant, size, args.seed)
    atomic.write_npz(args.output, **arrays, variant=json.dumps(vars(variant)), size=json.dumps(vars(size)), seed=args.seed)


def metrics(args) -> None:
    from behind_rope.metrics import layer_metrics

    data = atomic.read_npz(args.input)
    layers = [
        {"layer": layer + 1, **layer_metrics(data["mean_scores"][layer], data["half_a"][layer], data["half_b"][layer])}
        for layer in range(data["mean_scores"].shape[0])
    ]
    atomic.write_json(args.output, {"variant": json.loads(str(data["variant"])), "layers": layers})


def claims(args) -> None:
    from behind_rope import claims as build

    settings = json.loads(args.settings)
    metrics_by_variant = {Path(p).stem: atomic.read_json(p) for p in args.metrics}
    result = {
        "C1": build.claim_c1(atomic.read_json(args.derivation), atomic.read_json(args.monte_carlo), **settings["C1"]),
        "C2": build.claim_c2(metrics_by_variant, **settings["C2"]),
        "C4": build.claim_c4(metrics_by_variant, **settings["C4"]),
    }
    atomic.write_json(args.output, result)
    for name, claim in result.items():
        print(f"{name}: {'PASS' if claim['passed'] else 'FAIL'}  ({claim['threshold']})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m behind_rope", description=__doc__)
    steps = parser.add_subparsers(dest="step", required=True)

    p = steps.add_parser("derive", help="sympy derivation checks and the Figure 1 numbers")
    p.add_argument("--output", required=True)
    p.set_defaults(run=derive)

    p = steps.add_parser("monte-carlo", help="closed-form layer-2 scores against a Monte-Carlo run")
    p.add_argument("--output", required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--dims", type=int, nargs="+", required=True)
    p.add_argument("--alphas", type=float, nargs="+", required=True)
    p.add_argument("--chunk-size", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(run=monte_carlo)

    p = steps.add_parser("simulate", help="mean pre-softmax scores of a parameter-free stack")
    p.add_argument("--output", required=True)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--norm", choices=["l2", "layernorm"], default="l2")
    p.add_argument("--causal", type=_bool, default=True)
    p.add_argument("--rope", type=_bool, default=False)
    p.add_argument("--score-scale", choices=["one", "sqrt_d", "d"], default="one")
    for name in ("batch-size", "seq-len", "dim", "layers", "chunk-size", "seed"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--rope-theta", type=float, default=10_000.0)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(run=simulate)

    p = steps.add_parser("metrics", help="per-layer metrics of one simulation file")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.set_defaults(run=metrics)

    p = steps.add_parser("claims", help="assemble results/claims.json")
    p.add_argument("--output", required=True)
    p.add_argument("--derivation", required=True)
    p.add_argument("--monte-carlo", required=True)
    p.add_argument("--metrics", nargs="+", required=True)
    p.add_argument("--settings", required=True, help="JSON with the thresholds of config['claims']")
    p.set_defaults(run=claims)

    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
