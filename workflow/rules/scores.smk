# Mean pre-softmax scores, of the twins and the pretrained LLMs alike: the token sets each model
# reads (results/inputs/<model>/<set>.npy), one score run per model x token set x mask
# (results/scores/<model>/<inputs>_<mask>.npz; on a GPU when there is one; the variants of a model
# together), and the metrics of every score file, simulations included (results/metrics/<source>/<run>.json).


rule twin_inputs:
    input:
        **experiments.split_files(config),
        vocabulary="results/training/{twin}/vocabulary.npy",
    output:
        **{name: f"results/inputs/{{twin}}/{name}.npy" for name in experiments.TWIN_INPUTS},
    log:
        "results/logs/inputs/{twin}.log",
    benchmark:
        "results/benchmarks/inputs/{twin}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("twin-inputs"),
        settings=settings(experiments.twin_input_settings),
    shell:
        "python -m behind_rope twin-inputs --settings {params.settings:q} --vocabulary {input.vocabulary}"
        " --valid {input.valid} --train {input.train} --output-dir $(dirname {output.text}) > {log} 2>&1"


rule llm_inputs:
    input:
        archive=experiments.corpus_archive(config),
        model=lambda wildcards: experiments.llm_source_files(config, wildcards.llm),
    output:
        [f"results/inputs/{{llm}}/{name}.npy" for name in config["llm"]["inputs"]],
        stats="results/inputs/{llm}/inputs.json",
    log:
        "results/logs/inputs/{llm}.log",
    benchmark:
        "results/benchmarks/inputs/{llm}.tsv"
    priority: 30
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("llm-inputs"),
        settings=settings(experiments.llm_input_settings, "llm"),
    shell:
        "python -m behind_rope llm-inputs --settings {params.settings:q} --archive {input.archive}"
        " --output-dir $(dirname {output.stats}) > {log} 2>&1"


rule scores:
    input:
        model=lambda wildcards: experiments.score_model_files(config, wildcards.model),
        tokens=lambda wildcards: experiments.tokens_file(wildcards.model, wildcards.inputs),
    output:
        "results/scores/{model}/{inputs}_{mask}.npz",
    log:
        "results/logs/scores/{model}/{inputs}_{mask}.log",
    benchmark:
        "results/benchmarks/scores/{model}/{inputs}_{mask}.tsv"
    wildcard_constraints:
        model=names(LLMS),  # a variant's runs come from its model's variant_scores job, a twin's from twin_scores
    priority: 20
    conda:
        HEAVY_ENV
    threads: job_threads("llm")
    resources:
        **job_resources("llm"),
    params:
        code=step_code("scores"),
        settings=settings(experiments.score_settings, "model", "inputs", "mask"),
    shell:
        "python -m behind_rope scores --settings {params.settings:q} --tokens {input.tokens} --threads {threads}"
        " --output {output} > {log} 2>&1"


# Every score run of a twin, and its Figure 3 Gram matrices, in one job: each run takes seconds, and a
# process of its own would spend more on start-up (imports, loading) than on the run.
rule twin_scores:
    input:
        model="results/training/{twin}/model.safetensors",
        tokens=[f"results/inputs/{{twin}}/{name}.npy" for name in experiments.TWIN_INPUTS],
    output:
        runs=[f"results/scores/{{twin}}/{run}.npz" for run in experiments.twin_score_runs()],
        gram="results/gram/{twin}.npz",
    log:
        "results/logs/scores/{twin}.log",
    benchmark:
        "results/benchmarks/scores/{twin}.tsv"
    priority: 20
    conda:
        HEAVY_ENV
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=step_code("twin-scores"),
        settings=settings(experiments.twin_score_settings, "twin"),
    shell:
        "python -m behind_rope twin-scores --settings {params.settings:q} --threads {threads} --output {output.runs}"
        " --gram {output.gram} > {log} 2>&1"


# Every variant of a model (llm.variants) on one token set is one job, in one process: such runs are
# short, and a process of its own would spend more on start-up (imports, loading) than on the run.
for _llm in LLMS:
    _variants = experiments.model_variants(config, _llm)
    if not _variants:
        continue

    rule:
        name:
            f"variant_scores_{_llm}"
        input:
            model=experiments.score_model_files(config, _llm),
            tokens=experiments.tokens_file(_llm, "{inputs}"),
        output:
            [f"results/scores/{variant}/{{inputs}}_{{mask}}.npz" for variant in _variants],
        log:
            f"results/logs/scores/{_llm}.variants/{{inputs}}_{{mask}}.log",
        benchmark:
            f"results/benchmarks/scores/{_llm}.variants/{{inputs}}_{{mask}}.tsv"
        priority: 20
        conda:
            HEAVY_ENV
        threads: job_threads("llm")
        resources:
            **job_resources("llm"),
        params:
            code=step_code("variant-scores"),
            settings=settings(experiments.variant_score_settings, "inputs", "mask", model=_llm),
        shell:
            "python -m behind_rope variant-scores --settings {params.settings:q} --tokens {input.tokens}"
            " --threads {threads} --output {output} > {log} 2>&1"


rule metrics:
    input:
        "results/scores/{source}/{run}.npz",
    output:
        "results/metrics/{source}/{run}.json",
    log:
        "results/logs/metrics/{source}/{run}.log",
    benchmark:
        "results/benchmarks/metrics/{source}/{run}.tsv"
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("metrics"),
        # The pre-registration's shared definitions (config/claims.yaml): a change reruns every metric.
        settings=settings(experiments.measures_settings),
    shell:
        "python -m behind_rope metrics --settings {params.settings:q} --input {input} --output {output} > {log} 2>&1"
