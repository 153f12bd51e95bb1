# The paper: values and tables from results/ (results/paper/), then latexmk into paper/build/.
# `snakemake paper` rebuilds the PDF; a changed result reruns only paper_inputs and paper.

PAPER_INPUTS = ["numbers.tex", "claims_table.tex", "c5_table.tex", "provenance.tex", "llm_figures.tex"]
FIGURE_PDFS = [path for files in FIGURES.values() for path in files if path.endswith(".pdf")]


rule paper_inputs:
    input:
        claims="results/claims.json",
        training=[f"results/training/{twin}/metrics.json" for twin in TWINS],
        data_stats=f"{DATA_DIR}/stats.json",
    output:
        expand("results/paper/{name}", name=PAPER_INPUTS),
        report("results/paper/claims_table.html", caption="../report/claims_table.rst", category="Claims"),
    log:
        "results/logs/paper/paper_inputs.log",
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=library_code("paper"),
        settings=paper_settings(),
    shell:
        "python -m behind_rope paper-inputs --claims {input.claims} --training {input.training}"
        " --data-stats {input.data_stats} --settings {params.settings:q} --output-dir results/paper > {log} 2>&1"


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
    conda:
        PAPER_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        code=library_code("paper"),
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
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        code=library_code("paper"),
    shell:
        "python -m behind_rope paper-tarball --output {output} --files {input.tex} {input.bib} {input.bbl}"
        " {input.generated} {input.figures} > {log} 2>&1"
