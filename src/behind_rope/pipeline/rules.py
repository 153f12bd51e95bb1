"""The helpers the rules files call when Snakemake parses them: wildcard patterns, job threads and
resources from the config's groups, the JSON settings a rule hands its step, the environment the jobs
inherit, and an exit without waiting.  No step imports this module, so editing it reruns nothing."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from pathlib import Path

from snakemake.exceptions import WorkflowError

# Under another name: the functions here take the config's resource groups as `resources`.
from behind_rope.experiments import resources as experiment_resources
from behind_rope.pipeline.allocator import job_environment as with_allocator_settings
from behind_rope.pipeline.workspace import snakemake_environment


def names(values) -> str:
    """A wildcard pattern that matches exactly these values."""
    return "|".join(re.escape(value) for value in values)


def job_threads(resources: dict, group):
    """Threads of a resource group of the config; ``group`` may be a function of the wildcards."""
    return (lambda wildcards: resources[group(wildcards)]["threads"]) if callable(group) else resources[group]["threads"]


def on_submit_host(resources: dict, group: str) -> bool:
    """Whether a cluster run keeps this group's jobs on the host that runs Snakemake (``submit_host`` in
    the config): a job of a second or two costs less there than a queue slot, and a download needs
    the network, which compute nodes often lack.  A local run runs every job on its host anyway."""
    return bool(resources[group].get("submit_host", False))


def job_resources(resources: dict, group):
    """Memory, wall time and GPUs of a resource group (experiments.resources.job_resources); ``group`` may be a
    function of the wildcards, for one rule that serves twins and pretrained models alike."""
    if not callable(group):
        return experiment_resources.job_resources(resources[group])

    def pick(key):
        return lambda wildcards: experiment_resources.job_resources(resources[group(wildcards)], every_key=True)[key]

    return {key: pick(key) for key in ("mem_mb", "runtime", "gpu", "gpu_model")}


def score_group(config: dict, wildcards) -> str:
    """The resource group of the score run these wildcards name (experiments.resources.score_group)."""
    return experiment_resources.score_group(config, wildcards.model)


def settings(config: dict, function, *wildcard_names, **fixed):
    """A rule's `settings` param: ``function(config, <those wildcards>, **fixed)`` as one JSON argument.

    Every step reads its settings this way (--settings); a ValueError (an unpinned package, say)
    stops the run with its one sentence.
    """

    def param(wildcards):
        try:
            value = function(config, *(wildcards[name] for name in wildcard_names), **fixed)
        except ValueError as error:
            raise WorkflowError(str(error)) from None
        return json.dumps(value, sort_keys=True)

    return param


def verbatim(value):
    """A param Snakemake must not format: captions hold LaTeX braces such as $\\sqrt{d}$."""
    return lambda wildcards: value


def job_environment(checkout: str, environ=os.environ) -> dict[str, str]:
    """The environment every job inherits, set as the run starts (the Snakefile's ``onstart``), never while the
    workflow is parsed: the checkout's library first on ``PYTHONPATH`` (also inside ``--sdm conda`` environments,
    which do not install it; :func:`behind_rope.pipeline.workspace.snakemake_environment`), the Python that runs
    Snakemake first on ``PATH`` even where its environment is not activated, and the allocator's settings
    (:mod:`behind_rope.pipeline.allocator`).  SLURM's jobs inherit it from the submitting process (``--export=ALL``)."""
    return with_allocator_settings(snakemake_environment(Path(checkout), environ)) | {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")]),
    }


def export_job_environment(checkout: str) -> None:
    """Give this process, and so every job it starts from now on, :func:`job_environment`."""
    os.environ.update(job_environment(checkout))


def cancel_idle_rechecks() -> None:
    """Snakemake's job-rate limiter leaves a timer for its next idle re-check (every 10 s, set in
    workflow/profiles/default), and Python waits for it before exiting: seconds added to every short
    run.  Once the run is over nothing needs it."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
