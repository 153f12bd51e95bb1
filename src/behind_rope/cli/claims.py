"""The steps of workflow/rules/claims.smk: a twin's competence (C3's precondition), C6-C9
(results/claims/position.json), then every claim (results/claims.json, with version 2's from
results/claims/revision.json)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step

METRICS = arg("--metrics", nargs="+", required=True, help="results/metrics/<source>/<run>.json files")


def _metrics(paths) -> dict:
    return {f"{Path(p).parent.name}/{Path(p).stem}": atomic.read_json(p) for p in paths}


@step("position-claims", "decide claims C6-C9 (where absolute position comes from)", SETTINGS, OUTPUT, METRICS,
      arg("--patching", nargs="+", required=True, help="results/position/<model>/patching.json files"),
      arg("--scores", nargs="+", required=True,
          help="results/scores/<source>/<run>.npz: the score files the claims read directly (no other is read)"))
def position_claims(args) -> None:
    from behind_rope.claims.position import decide
    from behind_rope.claims.summary import summary_lines

    patching = {Path(p).parent.name: atomic.read_json(p) for p in args.patching}
    result = decide(_metrics(args.metrics), args.settings, patching, ScoreFiles(args.scores))
    atomic.write_json(args.output, result)
    print("\n".join(summary_lines(result)))


class ScoreFiles(Mapping):
    """The score files a step declares, keyed ``<source>/<run>``, each read when first asked for and kept.

    A claim that asks for a file the rule does not declare as input stops here, rather than read a file Snakemake
    neither orders before the step nor stages to a cluster node."""

    def __init__(self, paths):
        self.paths = {f"{Path(p).parent.name}/{Path(p).stem}": Path(p) for p in paths}
        self.read: dict[str, dict] = {}

    def __getitem__(self, run: str) -> dict:
        if run not in self.paths:
            raise KeyError(f"claims C6-C9 read the score file of {run!r}, which the rule's input does not declare "
                           "(experiments.paths.position_claims_score_files)")
        if run not in self.read:
            self.read[run] = atomic.read_npz(self.paths[run])
        return self.read[run]

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


@step("competence", "whether one twin uses the order of its context (claim C3's competence precondition)", SETTINGS,
      THREADS, arg("--model-dir", required=True, help="results/training/<twin>"), arg("--valid", required=True),
      arg("--output", required=True))
def competence(args) -> None:
    import numpy as np
    import torch

    from behind_rope.twins.competence import order_gap
    from behind_rope.twins.model import load_twin
    from behind_rope.twins.vocabulary import remap

    torch.set_num_threads(args.threads)
    folder = Path(args.model_dir)
    held_out = remap(np.load(args.valid)[: args.settings["sequences"]], np.load(folder / "vocabulary.npy"))
    result = order_gap(load_twin(folder), held_out, args.settings["positions"], seed=args.settings["seed"])
    atomic.write_json(args.output, result)
    print(f"{folder.name}: order gap {result['mean_gap']:+.4f} ± {result['standard_error']:.4f} nats over "
          f"{result['sequences']} held-out sequences")


@step("claims", "decide claims C1-C5 and write every claim to results/claims.json", SETTINGS, OUTPUT, METRICS,
      arg("--derivation", required=True), arg("--monte-carlo", required=True),
      arg("--training", nargs="+", required=True, help="metrics.json of every twin"),
      arg("--competence", nargs="+", required=True, help="results/competence/<twin>.json of every twin C3 reads"),
      arg("--gram", nargs="+", required=True, help="results/gram/<twin>.npz of every seed of C3's twin (Figure 3)"),
      arg("--position-claims", required=True, help="results/claims/position.json (claims C6-C9)"),
      arg("--revision-claims", required=True, help="results/claims/revision.json (version 2's claims R0-R5)"))
def claims(args) -> None:
    from behind_rope.claims.decide import decide
    from behind_rope.claims.panels import panel_statistics
    from behind_rope.claims.summary import summary_lines

    training = {Path(p).parent.name: atomic.read_json(p) for p in args.training}
    for path in args.competence:  # a twin's competence goes with its training record
        training[Path(path).stem]["order_gap"] = atomic.read_json(path)
    panels = {Path(p).stem: panel_statistics(atomic.read_npz(p)) for p in args.gram}
    result = decide(atomic.read_json(args.derivation), atomic.read_json(args.monte_carlo), _metrics(args.metrics),
                    training, panels, args.settings, atomic.read_json(args.position_claims),
                    atomic.read_json(args.revision_claims))
    atomic.write_json(args.output, result)
    print("\n".join(summary_lines(result)))


@step("exploratory-arm", "run the whole workflow on the exploratory arm's data (config/exploratory.yaml) in a folder "
      "of its own, and copy its claims and its row out", THREADS,
      arg("--python", required=True, help="the Python whose Snakemake runs the arm"),
      arg("--checkout", required=True, help="the checkout whose workflow runs (the Snakefile's folder)"),
      arg("--workdir", required=True, help="where the arm runs, kept between runs (results/exploratory/run)"),
      arg("--configfile", nargs="*", default=[],
          help="the run's own config files, config/exploratory.yaml goes over them"),
      arg("--config", nargs="*", default=[], help="the run's --config items, key=value"),
      arg("--claims", required=True), arg("--row", required=True))
def exploratory_arm(args) -> None:
    from behind_rope.pipeline.workspace import run_arm

    run_arm(args.python, Path(args.checkout), Path(args.workdir), args.configfile, args.config, args.threads,
            {"results/claims.json": args.claims, "results/registration.yaml": args.row})
