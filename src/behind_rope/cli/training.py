"""Steps of workflow/rules/training.smk: the twins (NoPE and RoPE)."""

from __future__ import annotations

import os
from pathlib import Path

from behind_rope.cli.common import SETTINGS, THREADS, arg, step


@step("train", "train one twin (resumes from its checkpoint)", SETTINGS, THREADS, arg("--train", required=True),
      arg("--valid", required=True), arg("--output-dir", required=True), arg("--resume-dir", required=True),
      arg("--code", default="", help="a digest of the training code (the rule's code param): a checkpoint written by "
          "other code is not resumed"),
      arg("--scale-reference", help="a trained twin's model.safetensors: the initial weights are scaled, tensor by "
          "tensor, to its weights' RMS (the twin's weight_scale_of)"),
      arg("--run-record", help="where the run's throughput, time and memory go (JSON), apart from the twin's files"))
def train(args) -> None:
    import torch

    from behind_rope.twins.train import train_and_save

    torch.set_num_threads(args.threads)
    # On a GPU, cuBLAS is deterministic only with a fixed workspace (read when CUDA starts, so set before it does).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    summary = train_and_save(args.settings, args.train, args.valid, Path(args.output_dir), Path(args.resume_dir),
                             code=args.code, scale_reference=args.scale_reference, run_record=args.run_record)
    print(f"{args.settings['twin']}: {summary['steps']} steps (at most {summary['max_steps']}); validation loss "
          f"{summary['validation_loss']:.3f} against unigram {summary['unigram_loss']:.3f}; "
          f"{summary['tokens_per_second'] or 0:.0f} tokens/s")
