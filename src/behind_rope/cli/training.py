"""Steps of workflow/rules/training.smk: the twins (NoPE and RoPE), and Figure 3's Gram matrices."""

from __future__ import annotations

import json
from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("train", "train one twin (resumes from its checkpoint)", SETTINGS, THREADS, arg("--train", required=True),
      arg("--valid", required=True), arg("--output-dir", required=True), arg("--resume-dir", required=True))
def train(args) -> None:
    import torch

    from behind_rope.train import train_and_save

    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    summary = train_and_save(args.settings, args.train, args.valid, Path(args.output_dir), Path(args.resume_dir))
    verdict = "PASS" if summary["sanity"]["passed"] else "FAIL"
    print(f"{args.settings['twin']}: validation loss {summary['validation_loss']:.3f} against unigram "
          f"{summary['unigram_loss']:.3f} (sanity {verdict}: needs a gain of {args.settings['min_gain']}); "
          f"{summary['tokens_per_second'] or 0:.0f} tokens/s")


@step("gram", "the nine Gram matrices of Figure 3, checked against the forward pass", THREADS, OUTPUT,
      arg("--model-dir", required=True), arg("--tokens", required=True))
def gram(args) -> None:
    import numpy as np
    import torch

    from behind_rope.gram import PANELS, gram_matrices
    from behind_rope.models import load_twin

    torch.set_num_threads(args.threads)
    inputs = torch.from_numpy(np.load(args.tokens))
    panels, check = gram_matrices(load_twin(args.model_dir), inputs)
    # The titles travel with the panels, so the figure script needs neither torch nor transformers.
    atomic.write_npz(args.output, **panels, titles=json.dumps(PANELS), check=json.dumps(check), sequences=len(inputs))
    print(f"recomputation agrees with the forward pass: {check['max_abs_gap']}")
