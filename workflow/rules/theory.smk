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
        code=library_code("theory"),
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
        code=library_code("simulate", "theory", "rope"),
        mc=config["theory"]["monte_carlo"],
        seed=config["seed"],
    shell:
        "python -m behind_rope monte-carlo --output {output} --samples {params.mc[samples]}"
        " --seq-len {params.mc[seq_len]} --dims {params.mc[dims]} --alphas {params.mc[alphas]}"
        " --chunk-size {params.mc[chunk_size]} --seed {params.seed} --threads {threads} > {log} 2>&1"
