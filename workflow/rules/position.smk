# Where absolute position comes from (claims C6-C9): claim C9's patches of position 0's residual state
# and its closed-system check.  The other runs these claims read are score runs with per-head records
# (llm.inputs: per_head), of model variants (llm.variants, scores.smk) and simulations.


rule patching:
    input:
        model=lambda wildcards: paths.llm_source_files(config, wildcards.llm),
        tokens=lambda wildcards: paths.tokens_file(wildcards.llm, claim_arguments(config, "C9")["inputs"]),
    output:
        "results/position/{llm}/patching.json",
    log:
        "results/logs/position/{llm}.log",
    benchmark:
        "results/benchmarks/position/{llm}.tsv"
    # With the other LLM jobs (scores.smk): left for last, it ran alone on one of the two cores.
    priority: 20
    conda:
        HEAVY_ENV
    threads: job_threads("llm")
    resources:
        **job_resources("llm"),
    params:
        code=step_code("patching"),
        settings=settings(steps.patching_settings, "llm"),
    shell:
        "python -m behind_rope patching --settings {params.settings:q} --tokens {input.tokens}"
        " --threads {threads} --output {output} > {log} 2>&1"
