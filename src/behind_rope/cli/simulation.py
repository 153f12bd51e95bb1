"""Steps of workflow/rules/simulation.smk: the parameter-free stacks (claims C2 and C4)."""

from __future__ import annotations

import json

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, step


@step("simulate", "mean pre-softmax scores of a parameter-free stack (one variant)", SETTINGS, THREADS, OUTPUT)
def simulate(args) -> None:
    import torch

    from behind_rope.simulation.simulate import SimulationSize, Variant, simulate

    torch.set_num_threads(args.threads)
    variant, size = Variant(**args.settings["variant"]), SimulationSize(**args.settings["size"])
    arrays = simulate(variant, size, args.settings["seed"])
    atomic.write_npz(args.output, **arrays, metadata=json.dumps(args.settings))
