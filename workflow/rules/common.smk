# What every rules file uses: this checkout's library, the validated config and the figure table,
# the environments, job resources from the config, the settings each rule hands its step, and the
# code digests that rerun a step when the library code it imports changes.  What a stage's rules
# need from the config comes from the library (behind_rope.experiments), where the tests reach it.
import sys
from functools import partial
from pathlib import Path

from snakemake.exceptions import WorkflowError

# The rules read this checkout's library: envs/setup.sh installs it into the .venv that runs them, and a copy of the
# workflow run by another checkout's .venv puts its src/ first on PYTHONPATH (pipeline.workspace.snakemake_environment).
SRC = str(Path(workflow.basedir) / "src")
PYTHON = sys.executable  # the Python that runs Snakemake
import behind_rope

if Path(behind_rope.__file__).resolve().parents[1] != Path(SRC).resolve():
    raise WorkflowError(
        f"This workflow's library is {SRC}, but the Python running it imports {behind_rope.__file__}: "
        "run `source envs/setup.sh` in this checkout, or put its src/ first on PYTHONPATH."
    )
from behind_rope import atomic
from behind_rope.claims.preregistration import REGISTRATION, criterion_commits, registration
from behind_rope.claims.summary import print_summary
from behind_rope.config import ConfigError, claim_arguments, merge, typed_command_line, validate
from behind_rope.experiments import paths, pins, runs, steps
from behind_rope.figures import table as figure_table
from behind_rope.paper.document import settings_from_config as paper_settings
from behind_rope.pipeline import rules as rule_helpers
from behind_rope.pipeline import warm_start
from behind_rope.pipeline.codedigest import script_code, step_code
from behind_rope.pipeline.rules import cancel_idle_rechecks, names, verbatim
from behind_rope.pipeline.workspace import workflow_digest
from behind_rope.registration import deciding_paths, draw, registration_paths, run_data

# A wildcard constraint no value meets (an empty one would constrain nothing).
NO_VALUE = "(?!)"

# The rules' code digests are kept for the next start in Snakemake's own folder (pipeline.codedigest),
# which a first run makes only after reading the rules.
Path(".snakemake").mkdir(exist_ok=True)

try:
    # --config's nested values come as text; read them as YAML, as a config file's are.
    merge(config, typed_command_line(workflow.config_settings.config or {}))
    # Checked, and completed with every default and shorthand filled in (behind_rope.config.complete).
    config.update(validate(config))
    SECTIONS, EVERY_FIGURE = figure_table.load(config)
    # all and the paper build FIGURES; the extended target the others (workflow/figures.yaml's extended ones)
    FIGURES = {name: figure for name, figure in EVERY_FIGURE.items() if not figure.extended}
    EXTENDED_FIGURES = {name: figure for name, figure in EVERY_FIGURE.items() if figure.extended}
    # The report's captions, read by rule name (workflow/report/figure.rst): no plot rule has its caption
    # as a param, so editing a caption reruns the paper's steps and no plot.
    config["report_captions"] = {name: figure_table.caption_rst(figure) for name, figure in EVERY_FIGURE.items()}
except (ConfigError, figure_table.FigureTableError) as error:
    raise WorkflowError(str(error)) from None

# `--sdm conda` environments: light jobs (derivation, metrics, claims, figures, downloads) need
# no torch; heavy ones (simulation, training, tokenizer, scores) do.
LIGHT_ENV = "../../envs/light.yaml"
HEAVY_ENV = "../../envs/heavy.yaml"
PAPER_ENV = "../../envs/paper.yaml"  # numpy and TeX Live (envs/paper.yaml)
RESOURCES = config["resources"]
job_threads = partial(rule_helpers.job_threads, RESOURCES)
job_resources = partial(rule_helpers.job_resources, RESOURCES)
on_submit_host = partial(rule_helpers.on_submit_host, RESOURCES)
settings = partial(rule_helpers.settings, config)
# Per claim, the commit that last changed its criterion, read with git now (the claims rule passes it on); the
# versions of the config it parses are kept in Snakemake's folder for the next start.
CRITERION_COMMITS = criterion_commits(
    Path(workflow.basedir),
    {name: deciding_paths(config, name) for name in config["claims"]} | {REGISTRATION: registration_paths(config)},
    kept=Path(".snakemake") / "behind_rope_criteria_yaml.json",
)
# The registration every claim is decided by: the hash of all deciding values, and the commit that fixed them.
# With it, what the claims are decided on: the arm, the seeds and how they were drawn, the corpora by their pins.
REGISTERED = registration(Path(workflow.basedir), config, CRITERION_COMMITS.pop(REGISTRATION)) | {
    "data": run_data(config)
}
# A confirmatory run's seeds drawn from that hash (seed: registered); the exploratory arm's as it names them.
config.update(draw(config))
TWINS = config["training"]["twins"]
# The twins trained here, and those read from a checkpoint (behind_rope.twins.checkpoint).
TRAINED = runs.trained_twins(config)
CHECKPOINTS = runs.checkpoint_twins(config)
LLMS = runs.scored_llms(config)
# The extended target's config: llm.extended_models among the models its recorded claims and ladder read.
EXTENDED_CONFIG = runs.extended_config(config)
# A score run's resource group, from its model: twin_analysis for a twin, llm for a pretrained LLM.
score_group = partial(rule_helpers.score_group, config)


wildcard_constraints:
    variant=names(config["simulation"]["variants"]),
    pretrained=names(config["pretrained"]),
    twin=names(TWINS),
    llm=names(LLMS),
    model=names([*TWINS, *LLMS, *runs.llm_variant_names(config)]),
    mask=names(runs.MASKS),
