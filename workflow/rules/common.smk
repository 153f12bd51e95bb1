# What every rules file uses: the library on the path, the validated config and the figure table,
# the environments, job resources from the config, the settings each rule hands its step, and the
# code digests that rerun a step when the library code it imports changes.  What a stage's rules
# need from the config comes from the library (behind_rope.experiments), where the tests reach it.
import json
import os
import re
import sys
import threading
from pathlib import Path

from snakemake.exceptions import WorkflowError

# Jobs import the library from src/ (also inside --sdm conda environments, which do not install it),
# and find the Python that runs Snakemake first on PATH even when its environment is not activated.
SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, SRC)
os.environ.update(
    PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])),
    PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
)

from behind_rope import experiments, figures as figure_table
from behind_rope.allocator import job_environment
from behind_rope.claims import print_summary
from behind_rope.codedigest import script_code, step_code
from behind_rope.paper import settings_from_config as paper_settings
from behind_rope.preregistration import criterion_commits, deciding_paths
from behind_rope.config import ConfigError, validate

# Every job reuses freed memory instead of page-faulting it back in (behind_rope.allocator).
os.environ.update(job_environment())

try:
    validate(config)
    SECTIONS, FIGURES = figure_table.load(config)
except (ConfigError, figure_table.FigureTableError) as error:
    raise WorkflowError(str(error)) from None

# `--sdm conda` environments: light jobs (derivation, metrics, claims, figures, downloads) need
# no torch; heavy ones (simulation, training, tokenizer, scores) do.
LIGHT_ENV = "../../envs/light.yaml"
HEAVY_ENV = "../../envs/heavy.yaml"
PAPER_ENV = "../../envs/paper.yaml"  # the light packages plus TeX Live
RESOURCES = config["resources"]
# Per claim, the commit that last changed its criterion, read with git now (the claims rule passes it on).
CRITERION_COMMITS = criterion_commits(
    Path(workflow.basedir), {name: deciding_paths(config, name) for name in config["claims"]}
)
TWINS = config["training"]["twins"]
LLMS = experiments.scored_llms(config)


def names(values):
    return "|".join(re.escape(value) for value in values)


wildcard_constraints:
    variant=names(config["simulation"]["variants"]),
    pretrained=names(config["pretrained"]),
    twin=names(TWINS),
    llm=names(LLMS),
    model=names([*TWINS, *LLMS, *experiments.llm_variant_names(config)]),
    mask=names(experiments.MASKS),


def job_threads(group):
    """Threads of a resource group of the config; ``group`` may be a function of the wildcards."""
    return (
        (lambda wildcards: RESOURCES[group(wildcards)]["threads"]) if callable(group) else RESOURCES[group]["threads"]
    )


def job_resources(group):
    """Memory, wall time and GPUs of a resource group (experiments.job_resources); ``group`` may be a
    function of the wildcards, for one rule that serves twins and pretrained models alike."""
    if not callable(group):
        return experiments.job_resources(RESOURCES[group])

    def pick(key):
        return lambda wildcards: experiments.job_resources(RESOURCES[group(wildcards)], every_key=True)[key]

    return {key: pick(key) for key in ("mem_mb", "runtime", "gpu", "gpu_model")}


def settings(function, *wildcard_names, **fixed):
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


def cancel_idle_rechecks():
    """Snakemake's job-rate limiter leaves a timer for its next idle re-check (every 10 s, set in
    workflow/profiles/default), and Python waits for it before exiting: seconds added to every short
    run.  Once the run is over nothing needs it."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
