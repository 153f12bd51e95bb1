# Where absolute position comes from (claims C6-C8): is position 0 a closed system?  The other runs
# these claims read are score runs of model variants (llm.variants, scores.smk) and simulations.


rule closed_system:
    input:
        model=lambda wildcards: experiments.llm_source_files(config, wildcards.llm),
        tokens=lambda wildcards: experiments.tokens_file(
            wildcards.llm, experiments.claim_arguments(config, "C7")["inputs"]
        ),
    output:
        "results/position/{llm}/closed_system.json",
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
        code=step_code("closed-system"),
        settings=settings(experiments.closed_system_settings, "llm"),
    shell:
        "python -m behind_rope closed-system --settings {params.settings:q} --tokens {input.tokens}"
        " --threads {threads} --output {output} > {log} 2>&1"
