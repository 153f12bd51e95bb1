"""Steps of workflow/rules/theory.smk: the sympy derivation and its Monte-Carlo check (claim C1)."""

from __future__ import annotations

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, step


@step("derive", "sympy derivation checks and the Figure 1 numbers", OUTPUT)
def derive(args) -> None:
    from behind_rope.theory import derivation as theory

    result = theory.derive()
    result["figure1"] = theory.figure1_scores(n=3, alpha=0.0)
    atomic.write_json(args.output, result)
    for check in result["checks"]:
        print(f"{'PASS' if check['passed'] else 'FAIL'}  {check['name']}")


@step("monte-carlo", "closed-form layer-2 scores against a Monte-Carlo run", SETTINGS, THREADS, OUTPUT)
def monte_carlo(args) -> None:
    import torch

    from behind_rope.simulation.simulate import monte_carlo_layer2_error

    torch.set_num_threads(args.threads)
    s = args.settings
    rows = monte_carlo_layer2_error(s["alphas"], s["dims"], s["samples"], s["seq_len"], s["chunk_size"], s["seed"])
    atomic.write_json(args.output, rows)
    for row in rows:
        print(f"E={row['dim']:4d} alpha={row['alpha']:.2f} max|theory - simulation| = {row['max_abs_error']:.4f}")
