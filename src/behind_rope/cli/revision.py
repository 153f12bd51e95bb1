"""Steps of workflow/rules/revision.smk: version 2's stack, one setting a job, then claims R0-R5."""

from __future__ import annotations

from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("recency", "the recency probability of version 2's parameter-free stack (one setting)", SETTINGS, THREADS, OUTPUT)
def recency(args) -> None:
    import torch

    from behind_rope.revision.stack import Setting, recency, setting_seed

    torch.set_num_threads(args.threads)
    settings = args.settings
    result = recency(Setting(**settings["setting"]), **settings["size"],
                     seed=setting_seed(settings["seed"], settings["name"]))
    result["mean_scores"] = result["mean_scores"].tolist()
    atomic.write_json(args.output, result | {"settings": settings})
    print(f"{settings['name']}: RP by layer " + " / ".join(f"{value:.4f}" for value in result["rp"]))


@step("revision-claims", "decide version 2's claims R0-R5 (results/claims/revision.json)", SETTINGS, OUTPUT,
      arg("--recency", nargs="+", required=True, help="results/revision/<setting>.json of every setting"))
def revision_claims(args) -> None:
    from behind_rope.claims.revision import decide, summary_lines

    files = {Path(path).stem: atomic.read_json(path) for path in args.recency}
    settings = args.settings
    result = decide(files, settings["claims"], settings["sequences"], settings["layers"])
    atomic.write_json(args.output, result)
    print("\n".join(summary_lines(result)))
