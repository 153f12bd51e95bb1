# Mean pre-softmax scores, of the twins and the pretrained LLMs alike: the token sets each model
# reads (results/inputs/<model>/<set>.npy), one score run per model x token set x mask
# (results/scores/<model>/<inputs>_<mask>.npz; on a GPU when there is one), the twins' Gram matrices,
# and the metrics of every score file, simulations included (results/metrics/<source>/<run>.json).


rule twin_inputs:
    input:
        **paths.split_files(config),
        vocabulary="results/training/{twin}/vocabulary.npy",
    output:
        **{name: f"results/inputs/{{twin}}/{name}.npy" for name in runs.TWIN_INPUTS},
    log:
        "results/logs/inputs/{twin}.log",
    benchmark:
        "results/benchmarks/inputs/{twin}.tsv"
    wildcard_constraints:
        twin=names(TRAINED),
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("twin-inputs"),
        settings=settings(steps.twin_input_settings),
    shell:
        "python -m behind_rope twin-inputs --settings {params.settings:q} --vocabulary {input.vocabulary}"
        " --valid {input.valid} --train {input.train} --output-dir $(dirname {output.text}) > {log} 2>&1"


# A checkpoint twin's token sets: the first tokens of documents of its dataset sample, in its own tokenizer, and
# i.i.d. tokens with the frequencies of the sample's other documents (behind_rope.twins.checkpoint).
rule checkpoint_inputs:
    input:
        unpack(lambda wildcards: paths.checkpoint_input_files(config, wildcards.twin)),
    output:
        **{name: f"results/inputs/{{twin}}/{name}.npy" for name in runs.TWIN_INPUTS},
        stats="results/inputs/{twin}/inputs.json",
    log:
        "results/logs/inputs/{twin}.log",
    benchmark:
        "results/benchmarks/inputs/{twin}.tsv"
    wildcard_constraints:
        twin=names(CHECKPOINTS) or NO_VALUE,
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("checkpoint-inputs"),
        settings=settings(steps.checkpoint_input_settings, "twin"),
    shell:
        "python -m behind_rope checkpoint-inputs --settings {params.settings:q} --corpus {input.corpus}"
        " --model {input.model} --output-dir $(dirname {output.stats}) > {log} 2>&1"


rule llm_inputs:
    input:
        archive=paths.corpus_archive(config, config["llm"]["corpus"]),
        model=lambda wildcards: paths.llm_source_files(config, wildcards.llm),
    output:
        [f"results/inputs/{{llm}}/{name}.npy" for name in config["llm"]["inputs"]],
        [f"results/inputs/{{llm}}/{name}.json" for name in config["llm"]["inputs"]],
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
        settings=settings(steps.llm_input_settings, "llm"),
    shell:
        "python -m behind_rope llm-inputs --settings {params.settings:q} --archive {input.archive}"
        " --output-dir $(dirname {output.stats}) > {log} 2>&1"


# One rule for every score run: a twin, a pretrained LLM or a variant of one (llm.variants), on one
# token set, with or without the mask.  Only the runs that something reads are made, each in a job of
# its own, so a cluster spreads them over its GPUs and adding a variant runs only it.  A model's token
# sets are drawn in one job (llm_inputs): adding or resizing a set redraws them, which reruns the
# model's score runs; editing what a set's runs record (layers, per_head, models) does not.
rule scores:
    input:
        model=lambda wildcards: paths.score_model_files(config, wildcards.model),
        tokens=lambda wildcards: paths.tokens_file(wildcards.model, wildcards.inputs),
        token_set=lambda wildcards: paths.token_set_files(config, wildcards.model, wildcards.inputs),
    output:
        "results/scores/{model}/{inputs}_{mask}.npz",
    log:
        "results/logs/scores/{model}/{inputs}_{mask}.log",
    benchmark:
        "results/benchmarks/scores/{model}/{inputs}_{mask}.tsv"
    priority: 20
    conda:
        HEAVY_ENV
    # A twin's run takes one core and no GPU (resources.twin_analysis); a pretrained LLM's, resources.llm.
    threads: job_threads(score_group)
    resources:
        **job_resources(score_group),
    params:
        code=step_code("scores"),
        settings=settings(steps.score_settings, "model", "inputs", "mask"),
    shell:
        "python -m behind_rope scores --settings {params.settings:q} --tokens {input.tokens} --threads {threads}"
        " --output {output} > {log} 2>&1"


# Figure 3's Gram matrices of a twin, on its held-out text.
rule gram:
    input:
        model="results/training/{twin}/model.safetensors",
        tokens=paths.tokens_file("{twin}", "text"),
    output:
        "results/gram/{twin}.npz",
    log:
        "results/logs/gram/{twin}.log",
    benchmark:
        "results/benchmarks/gram/{twin}.tsv"
    priority: 20
    conda:
        HEAVY_ENV
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=step_code("gram"),
    shell:
        "python -m behind_rope gram --model-dir $(dirname {input.model}) --tokens {input.tokens} --threads {threads}"
        " --output {output} > {log} 2>&1"


rule metrics:
    input:
        "results/scores/{source}/{run}.npz",
    output:
        "results/metrics/{source}/{run}.json",
    log:
        "results/logs/metrics/{source}/{run}.log",
    benchmark:
        "results/benchmarks/metrics/{source}/{run}.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("metrics"),
        # The pre-registration's shared definitions (config/claims.yaml): a change reruns every metric.
        settings=settings(steps.measures_settings),
    shell:
        "python -m behind_rope metrics --settings {params.settings:q} --input {input} --output {output} > {log} 2>&1"
