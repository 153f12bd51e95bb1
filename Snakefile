# Behind RoPE: how does the causal mask encode positional information?  (Kim et al., 2025)
#
#   snakemake --cores all                                  everything, at the scale of config/config.yaml
#   snakemake --cores all --configfile config/paper.yaml   the paper's sizes
#   snakemake fig2_simulation                              one figure (every figure: workflow/figures.yaml)
#   snakemake paper                                        the PDF, paper/build/main.pdf (needs LaTeX: envs/setup_tex.sh)


configfile: "config/config.yaml"
# The pre-registration: every claim, its criteria and controls (read after the config; --configfile goes on top).
configfile: "config/claims.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/simulation.smk"
include: "workflow/rules/revision.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/scores.smk"
include: "workflow/rules/position.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/paper.smk"


rule all:
    default_target: True
    input:
        "results/claims.json",
        "results/registration.yaml",
        [path for figure in FIGURES.values() for path in figure.files],
        "paper/build/main.pdf",


# What decides nothing and the default run leaves out (llm.extended_models: the scale ladder's largest rung),
# with the ladder that reads it: `snakemake extended`.
rule extended:
    input:
        "results/extended/claims.json",
        [path for figure in EXTENDED_FIGURES.values() for path in figure.files],


# The exploratory arm (config/exploratory.yaml: the seeds and the corpus the criteria were shaped on), run whole in
# a folder of its own: `snakemake exploratory` (docs/usage.md, "The two arms").
rule exploratory:
    input:
        "results/exploratory/claims.json",
        "results/exploratory/registration.yaml",


onstart:
    # What the jobs inherit, set now and not while the workflow is parsed: a dry run changes nothing.
    rule_helpers.export_job_environment(workflow.basedir)
    if config["warm_start"] and warm_start.worthwhile(workflow, HEAVY_ENV):
        warm_start.start()


onsuccess:
    warm_start.stop()
    print_summary("results/claims.json")
    cancel_idle_rechecks()


onerror:
    warm_start.stop()
    cancel_idle_rechecks()
