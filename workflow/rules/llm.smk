# Pretrained RoPE LLMs: cache each model once as safetensors, cut the corpus into its tokens,
# record the mean pre-softmax scores of its layers (on a GPU when there is one), summarise them.


rule cache_llm:
    input:
        "results/models/{model}/model.gguf",
    output:
        directory("results/models/{model}/hf"),
    log:
        "results/logs/cache_llm/{model}.log",
    benchmark:
        "results/benchmarks/cache_llm/{model}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("llm_cache")
    resources:
        **job_resources("llm_cache"),
    params:
        code=library_code("llm"),
    shell:
        "python -m behind_rope cache-model --gguf {input} --output {output} > {log} 2>&1"


rule llm_inputs:
    input:
        archive=corpus_archive(config["data"]["corpus"]),
        model=lambda wildcards: llm_source_files(wildcards.model),
    output:
        text="results/llm/inputs/{model}/text.npy",
        random="results/llm/inputs/{model}/random.npy",
        stats="results/llm/inputs/{model}/inputs.json",
    log:
        "results/logs/llm_inputs/{model}.log",
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=library_code("llm", "data"),
        format=CORPORA[config["data"]["corpus"]]["format"],
        source=lambda wildcards: json.dumps(llm_source(wildcards.model)),
        seed=config["seed"],
        seq_len=LLM["seq_len"],
        sequences=LLM["sequences"],
    shell:
        "python -m behind_rope llm-inputs --archive {input.archive} --format {params.format}"
        " --source {params.source:q} --seq-len {params.seq_len} --sequences {params.sequences}"
        " --seed {params.seed} --output-dir $(dirname {output.text}) > {log} 2>&1"


LLM_SCORES_SHELL = (
    "python -m behind_rope llm-scores --model {wildcards.model} --source {params.source:q}"
    " --provenance {params.provenance:q} --tokens {input.tokens} --inputs-kind {params.inputs}"
    " --causal {params.causal} --layers {params.layers} --batch-size {params.batch_size}"
    " --device {params.device} --threads {threads} --output {output} > {log} 2>&1"
)


# The `gpu` resource (config: resources.llm.gpus) routes these jobs to GPU nodes on a cluster; locally it limits nothing
# unless given with --resources gpu=N.
rule llm_scores:
    input:
        model=lambda wildcards: llm_source_files(wildcards.model),
        tokens="results/llm/inputs/{model}/text.npy",
    output:
        "results/attention/{model}.npz",
    log:
        "results/logs/llm_scores/{model}.log",
    benchmark:
        "results/benchmarks/llm_scores/{model}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("llm")
    resources:
        **job_resources("llm"),
    params:
        code=library_code("extract", "llm"),
        source=lambda wildcards: json.dumps(llm_source(wildcards.model)),
        provenance=lambda wildcards: json.dumps(llm_provenance(wildcards.model)),
        inputs="text",
        causal="true",
        layers=LLM["layers"],
        batch_size=LLM["batch_size"],
        device=LLM["device"],
    shell:
        LLM_SCORES_SHELL


rule llm_control_scores:
    input:
        model=lambda wildcards: llm_source_files(wildcards.model),
        tokens="results/llm/inputs/{model}/{inputs}.npy",
    output:
        "results/attention/controls/{model}_{inputs}_{mask}.npz",
    log:
        "results/logs/llm_scores/{model}_{inputs}_{mask}.log",
    benchmark:
        "results/benchmarks/llm_scores/{model}_{inputs}_{mask}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("llm")
    resources:
        **job_resources("llm"),
    params:
        code=library_code("extract", "llm"),
        source=lambda wildcards: json.dumps(llm_source(wildcards.model)),
        provenance=lambda wildcards: json.dumps(llm_provenance(wildcards.model)),
        inputs=lambda wildcards: wildcards.inputs,
        causal=lambda wildcards: str(wildcards.mask == "causal").lower(),
        layers=LLM["control_layers"],
        batch_size=LLM["batch_size"],
        device=LLM["device"],
    shell:
        LLM_SCORES_SHELL


rule llm_metrics:
    input:
        "results/attention/{run}.npz",
    output:
        "results/metrics/llm/{run}.json",
    log:
        "results/logs/llm_metrics/{run}.log",
    wildcard_constraints:
        run=r"[^/]+|controls/[^/]+",
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=library_code("metrics"),
    shell:
        "python -m behind_rope metrics --input {input} --output {output} > {log} 2>&1"
