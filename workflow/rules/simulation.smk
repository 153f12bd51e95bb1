rule simulate:
    output:
        "results/simulation/{variant}.npz",
    log:
        "results/logs/simulate/{variant}.log",
    benchmark:
        "results/benchmarks/simulate/{variant}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("simulation")
    resources:
        **job_resources("simulation"),
    params:
        code=library_code("simulate", "rope"),
        variant=lambda wildcards: VARIANTS[wildcards.variant],
        size=config["simulation"],
        seed=config["seed"],
    shell:
        "python -m behind_rope simulate --output {output}"
        " --alpha {params.variant[alpha]} --norm {params.variant[norm]} --causal {params.variant[causal]}"
        " --rope {params.variant[rope]} --score-scale {params.variant[score_scale]}"
        " --batch-size {params.size[batch_size]} --seq-len {params.size[seq_len]} --dim {params.size[dim]}"
        " --layers {params.size[layers]} --chunk-size {params.size[chunk_size]}"
        " --rope-theta {params.size[rope_theta]} --seed {params.seed} --threads {threads} > {log} 2>&1"


rule simulation_metrics:
    input:
        "results/simulation/{variant}.npz",
    output:
        "results/metrics/simulation/{variant}.json",
    log:
        "results/logs/simulation_metrics/{variant}.log",
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=library_code("metrics"),
    shell:
        "python -m behind_rope metrics --input {input} --output {output} > {log} 2>&1"
