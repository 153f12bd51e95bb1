# Version 2 of the paper: its parameter-free stack, one job per setting of `revision.settings`, and
# claims R0-R5 decided on their recency probabilities (results/claims/revision.json, merged into
# results/claims.json by the claims step).


rule recency:
    output:
        "results/revision/{setting}.json",
    log:
        "results/logs/recency/{setting}.log",
    benchmark:
        "results/benchmarks/recency/{setting}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("simulation")
    resources:
        **job_resources("simulation"),
    params:
        code=step_code("recency"),
        settings=settings(steps.recency_settings, "setting"),
    shell:
        "python -m behind_rope recency --settings {params.settings:q} --threads {threads} --output {output} > {log} 2>&1"


rule revision_claims:
    input:
        paths.recency_files(config),
    output:
        "results/claims/revision.json",
    log:
        "results/logs/revision_claims.log",
    benchmark:
        "results/benchmarks/revision_claims.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("revision-claims"),
        settings=settings(steps.revision_claims_settings),
    shell:
        "python -m behind_rope revision-claims --settings {params.settings:q} --recency {input} --output {output} > {log} 2>&1"
