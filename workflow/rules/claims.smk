rule claims:
    input:
        derivation="results/theory/derivation.json",
        monte_carlo="results/theory/monte_carlo.json",
        metrics=expand("results/metrics/simulation/{variant}.json", variant=claim_variants()),
        twin_metrics=expand("results/metrics/twins/{run}.json", run=sum(c3_twin_runs().values(), [])),
        training=[f"results/training/{twin}/metrics.json" for twin in TWINS],
        llm_metrics=[f"results/metrics/llm/{run}.json" for model in LLM["models"] for run in llm_runs(model).values()],
    output:
        report("results/claims.json", caption="../report/claims.rst", category="Claims"),
    log:
        "results/logs/claims.log",
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=library_code("claims"),
        settings=json.dumps(config["claims"]),
        twin_runs=json.dumps(c3_twin_runs()),
        llm_runs=json.dumps({model: llm_runs(model) for model in LLM["models"]}),
    shell:
        "python -m behind_rope claims --output {output} --derivation {input.derivation}"
        " --monte-carlo {input.monte_carlo} --metrics {input.metrics} --twin-metrics {input.twin_metrics}"
        " --training {input.training} --twin-runs {params.twin_runs:q} --llm-metrics {input.llm_metrics}"
        " --llm-metrics-root results/metrics/llm --llm-runs {params.llm_runs:q} --settings {params.settings:q} > {log} 2>&1"
