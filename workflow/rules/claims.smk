rule claims:
    input:
        derivation="results/theory/derivation.json",
        monte_carlo="results/theory/monte_carlo.json",
        metrics=expand("results/metrics/simulation/{variant}.json", variant=claim_variants()),
    output:
        "results/claims.json",
    params:
        settings=json.dumps(config["claims"]),
    log:
        "results/logs/claims.log",
    conda:
        ENV
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "python -m behind_rope claims --output {output} --derivation {input.derivation}"
        " --monte-carlo {input.monte_carlo} --metrics {input.metrics} --settings {params.settings:q} > {log} 2>&1"
