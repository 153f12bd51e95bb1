"""The step of workflow/rules/position.smk: is position 0 a closed system? (claim C7's premise)"""

from __future__ import annotations

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("closed-system", "position 0's hidden states across sequences with the same and with different first tokens",
      SETTINGS, THREADS, OUTPUT, arg("--tokens", required=True))
def closed_system(args) -> None:
    import torch

    from behind_rope.extract import closed_system_check

    torch.set_num_threads(args.threads)
    result = closed_system_check(args.settings, args.tokens)
    atomic.write_json(args.output, result)
    print(f"{result['model']}: first token {result['first_token']!r}; largest relative gap with the same first token "
          f"{max(result['same_first_token']):.2e}, smallest with different ones {min(result['different_first_tokens'][1:]):.2e}")
