# Claims C2 and C4: parameter-free stacks, one job per variant of `simulation.variants`.


rule simulate:
    output:
        "results/scores/simulation/{variant}.npz",
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
        code=step_code("simulate"),
        settings=settings(steps.simulation_settings, "variant"),
    shell:
        "python -m behind_rope simulate --settings {params.settings:q} --threads {threads} --output {output} > {log} 2>&1"
