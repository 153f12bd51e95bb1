rule derivation:
    output:
        "results/theory/derivation.json",
    params:
        code=library_code("theory"),
    log:
        "results/logs/derivation.log",
    benchmark:
        "results/benchmarks/derivation.tsv"
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m behind_rope derive --output {output} > {log} 2>&1"


rule theory_monte_carlo:
    output:
        "results/theory/monte_carlo.json",
    params:
        code=library_code("simulate", "theory", "rope"),
        mc=config["theory"]["monte_carlo"],
        seed=config["seed"],
    threads: config["simulation"]["threads"]
    log:
        "results/logs/theory_monte_carlo.log",
    benchmark:
        "results/benchmarks/theory_monte_carlo.tsv"
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m behind_rope monte-carlo --output {output} --samples {params.mc[samples]}"
        " --seq-len {params.mc[seq_len]} --dims {params.mc[dims]} --alphas {params.mc[alphas]}"
        " --chunk-size {params.mc[chunk_size]} --seed {params.seed} --threads {threads} > {log} 2>&1"
