# Behind RoPE: how does the causal mask encode positional information?  (Kim et al., 2025)
#
#   snakemake --cores all                                  everything, at the scale of config/config.yaml
#   snakemake --cores all --configfile config/paper.yaml   the paper's sizes
#   snakemake fig2                                         one figure (targets: see `snakemake --list-target-rules`)
#   snakemake paper                                        the PDF, paper/build/main.pdf (needs LaTeX: envs/setup_tex.sh)


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/simulation.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/llm.smk"
include: "workflow/rules/claims.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/paper.smk"


rule all:
    default_target: True
    input:
        "results/claims.json",
        FIGURES.values(),
        "paper/build/main.pdf",


onsuccess:
    print_claims_summary("results/claims.json")
