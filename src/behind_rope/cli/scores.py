"""Steps of workflow/rules/scores.smk: the token sets the models read, their scores, and the metrics of
every score file (simulations, twins and pretrained LLMs alike)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("twin-inputs", "held-out text and i.i.d. tokens in a twin's vocabulary", SETTINGS,
      arg("--vocabulary", required=True), arg("--valid", required=True), arg("--train", required=True),
      arg("--output-dir", required=True))
def twin_inputs(args) -> None:
    from behind_rope.twins.vocabulary import twin_input_sets

    sets = twin_input_sets(args.vocabulary, args.valid, args.train, **args.settings)
    if len(sets["text"]) < args.settings["sequences"]:  # a short held-out split: the text set is all of it
        print(f"warning: the held-out split holds {len(sets['text'])} sequences, fewer than the "
              f"{args.settings['sequences']} twin_analysis.sequences asks; the text set has them all (a larger corpus "
              "in data.corpus gives more)", file=sys.stderr)
    for name, tokens in sets.items():
        atomic.write_npy(Path(args.output_dir) / f"{name}.npy", tokens)
        print(f"{name}: {tokens.shape[0]} sequences of {tokens.shape[1]} tokens")


@step("llm-inputs", "every token set of llm.inputs, in one pretrained model's tokens", SETTINGS,
      arg("--archive", required=True), arg("--output-dir", required=True))
def llm_inputs(args) -> None:
    from behind_rope.llm.loading import write_input_sets

    stats = write_input_sets(args.archive, Path(args.output_dir), **args.settings)
    print(json.dumps(stats))


@step("scores", "mean pre-softmax scores of a model's layers on one token set (a twin or a pretrained LLM)",
      SETTINGS, THREADS, OUTPUT, arg("--tokens", required=True))
def scores(args) -> None:
    import torch

    from behind_rope.llm.score_run import score_run

    torch.set_num_threads(args.threads)
    save_scores(args.output, *score_run(args.settings, args.tokens))


def save_scores(output: str, arrays: dict, metadata: dict) -> None:
    atomic.write_npz(output, **arrays, metadata=json.dumps(metadata))
    print(f"{metadata['model']}: {len(arrays['layers'])} layers of {metadata['sequences']} x {metadata['seq_len']} "
          f"tokens ({metadata['inputs']}, {'causal' if metadata['causal'] else 'no mask'}) "
          f"on {metadata['device']}/{metadata['dtype']}")


@step("gram", "Figure 3's Gram matrices of one twin on its held-out text", THREADS, OUTPUT,
      arg("--model-dir", required=True, help="results/training/<twin>"), arg("--tokens", required=True))
def gram(args) -> None:
    import numpy as np
    import torch

    from behind_rope.twins.gram import gram_matrices
    from behind_rope.twins.model import load_twin

    torch.set_num_threads(args.threads)
    inputs = torch.from_numpy(np.load(args.tokens))
    panels, check = gram_matrices(load_twin(args.model_dir), inputs)
    atomic.write_npz(args.output, **panels, check=json.dumps(check), sequences=len(inputs))
    print(f"Gram matrices: recomputation agrees with the forward pass: {check['max_abs_gap']}")


@step("metrics", "per-layer metrics of one score file", SETTINGS, OUTPUT, arg("--input", required=True))
def metrics(args) -> None:
    from behind_rope.maths.metrics import Measures, score_file_metrics

    atomic.write_json(args.output, score_file_metrics(atomic.read_npz(args.input), Measures.of(args.settings)))
