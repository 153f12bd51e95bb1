# The paper: values, tables, figure environments and appendices from results/, the pre-registration and
# its history (config/claims.yaml through the settings, config/criteria_history.yaml) and the figure table
# (results/paper/), then latexmk into paper/build/.  `snakemake paper` rebuilds the PDF; a changed
# result reruns only paper_inputs and paper.

PAPER_INPUTS = [
    "numbers.tex",
    "claims_table.tex",
    "c3_seeds_table.tex",
    "c3_panels_table.tex",
    "c5a_table.tex",
    "c5b_table.tex",
    "c5c_table.tex",
    "c5d_table.tex",
    "decomposition_table.tex",
    "ladder_table.tex",
    "position_table.tex",
    "revision_published_table.tex",
    "versions_table.tex",
    "provenance.tex",
    "registrations.tex",
    "preregistration.tex",
    "criteria_history.tex",
    *[f"figures_{section}.tex" for section in [*SECTIONS, "appendix"]],
]
FIGURE_PDFS = [figure.files[0] for figure in FIGURES.values() if figure.paper != "none"]


# The paper's settings (the figure table with its captions, the pre-registration, the sizes: about
# 40 KB) go to paper_inputs through a file, not its command line.  This job rewrites the file when
# they change, which reruns paper_inputs.
rule paper_settings_json:
    output:
        "results/paper/settings.json",
    log:
        "results/logs/paper/paper_settings.log",
    localrule: True
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        settings=settings(paper_settings, sections=SECTIONS, figures=FIGURES),
    run:
        atomic.write_text(output[0], params.settings)
        atomic.write_text(log[0], f"wrote {output[0]} ({len(params.settings)} characters)\n")


rule paper_inputs:
    input:
        settings="results/paper/settings.json",
        claims="results/claims.json",
        training=[paths.twin_files(twin)["metrics"] for twin in TRAINED],
        data_stats=f"{paths.data_dir(config)}/stats.json",
        history="config/criteria_history.yaml",  # the paper's appendix prints it
        record="config/registrations.yaml",  # and the record of registrations that have been run
    output:
        expand("results/paper/{name}", name=PAPER_INPUTS),
        report("results/paper/claims_table.html", caption="../report/claims_table.rst", category="Claims"),
    log:
        "results/logs/paper/paper_inputs.log",
    benchmark:
        "results/benchmarks/paper/paper_inputs.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("paper-inputs"),
    shell:
        "python -m behind_rope paper-inputs --settings @{input.settings} --claims {input.claims}"
        " --training {input.training} --data-stats {input.data_stats} --history {input.history} --record {input.record}"
        " --output-dir results/paper > {log} 2>&1"


rule paper:
    input:
        tex="paper/main.tex",
        bib="paper/references.bib",
        generated=expand("results/paper/{name}", name=PAPER_INPUTS),
        figures=FIGURE_PDFS,
    output:
        pdf=report("paper/build/main.pdf", caption="../report/paper.rst", category="Paper"),
        bbl="paper/build/main.bbl",
    log:
        build="results/logs/paper/paper.log",
        latex="results/logs/paper/latexmk.log",
    benchmark:
        "results/benchmarks/paper/paper.tsv"
    localrule: on_submit_host("document")
    conda:
        PAPER_ENV
    threads: job_threads("document")
    resources:
        **job_resources("document"),
    params:
        code=step_code("paper-pdf"),
    shell:
        "python -m behind_rope paper-pdf --tex {input.tex} --search-path results/paper figures"
        " --tex-packages envs/tex-packages.txt --output {output.pdf} --log {log.latex} > {log.build} 2>&1"


# arXiv-ready sources, flat: main.tex, the bibliography (.bib and the .bbl bibtex made), the
# generated .tex files and every figure PDF.
rule paper_tarball:
    input:
        tex="paper/main.tex",
        bib="paper/references.bib",
        bbl="paper/build/main.bbl",
        generated=expand("results/paper/{name}", name=PAPER_INPUTS),
        figures=FIGURE_PDFS,
    output:
        "paper/build/arxiv-source.tar.gz",
    log:
        "results/logs/paper/paper_tarball.log",
    benchmark:
        "results/benchmarks/paper/paper_tarball.tsv"
    localrule: on_submit_host("document")
    conda:
        LIGHT_ENV
    threads: job_threads("document")
    resources:
        **job_resources("document"),
    params:
        code=step_code("paper-tarball"),
    shell:
        "python -m behind_rope paper-tarball --output {output} --files {input.tex} {input.bib} {input.bbl}"
        " {input.generated} {input.figures} > {log} 2>&1"
