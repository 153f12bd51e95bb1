# Claim C1: the sympy derivation of the layer-2 scores, and the closed form against a Monte-Carlo run.


rule derivation:
    output:
        "results/theory/derivation.json",
    log:
        "results/logs/derivation.log",
    benchmark:
        "results/benchmarks/derivation.tsv"
    conda:
        LIGHT_ENV
    threads: job_threads("theory")
    resources:
        **job_resources("theory"),
    params:
        code=step_code("derive"),
    shell:
        "python -m behind_rope derive --output {output} > {log} 2>&1"


rule theory_monte_carlo:
    output:
        "results/theory/monte_carlo.json",
    log:
        "results/logs/theory_monte_carlo.log",
    benchmark:
        "results/benchmarks/theory_monte_carlo.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("theory")
    resources:
        **job_resources("theory"),
    params:
        code=step_code("monte-carlo"),
        settings=settings(steps.monte_carlo_settings),
    shell:
        "python -m behind_rope monte-carlo --settings {params.settings:q} --threads {threads}"
        " --output {output} > {log} 2>&1"
