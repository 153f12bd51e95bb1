"""The step of workflow/rules/position.smk: claim C9's patches of position 0, and its closed-system check."""

from __future__ import annotations

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("patching", "patch position 0's residual state (and, as the control, the middle one's) at each checked layer",
      SETTINGS, THREADS, OUTPUT, arg("--tokens", required=True))
def patching(args) -> None:
    import torch

    from behind_rope.position.patching import patching_check

    torch.set_num_threads(args.threads)
    result = patching_check(args.settings, args.tokens)
    atomic.write_json(args.output, result)
    closed = result["closed_system"]
    print(f"{result['model']}: first token {closed['first_token']!r}; largest relative gap of position 0 with the same "
          f"first token {max(closed['same_first_token']):.2e}, smallest with different ones "
          f"{min(closed['different_first_tokens'][1:]):.2e}")
    for name, patch in result["patches"].items():
        print(f"  {name} (position {patch['position']}): largest head-output change by layer "
              + ", ".join(f"{layer}: {max(row['head_output_change']):.3f}" for layer, row in patch["layers"].items()))
