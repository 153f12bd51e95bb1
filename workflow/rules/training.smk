# The twins (NoPE and RoPE), trained on the prepared corpus, and their scores on held-out text.


rule train:
    input:
        train=f"{DATA_DIR}/train.npy",
        valid=f"{DATA_DIR}/valid.npy",
    output:
        **twin_files("{twin}"),
    log:
        "results/logs/train/{twin}.log",
    benchmark:
        "results/benchmarks/train/{twin}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("training")
    resources:
        **job_resources("training"),
    params:
        code=library_code("train", "models", "extract"),
        positional=lambda wildcards: TWINS[wildcards.twin]["positional"],
        size=twin_size_json(),
        settings=lambda wildcards: twin_settings_json(wildcards.twin),
        min_gain=config["training"]["min_gain_over_unigram"],
        device=config["training"]["device"],
        # Not an output: Snakemake would delete it when the job fails, and it is what a rerun resumes from.
        resume_dir="results/checkpoints/{twin}",
    shell:
        "python -m behind_rope train --twin {wildcards.twin} --positional {params.positional}"
        " --size {params.size:q} --settings {params.settings:q} --train {input.train} --valid {input.valid}"
        " --output-dir $(dirname {output.model}) --resume-dir {params.resume_dir} --min-gain {params.min_gain}"
        " --device {params.device} --threads {threads} > {log} 2>&1"


rule train_nope:
    input:
        twin_files("nope").values(),


rule train_rope:
    input:
        twin_files("rope").values(),


# {inputs}: "text" (held-out sequences) or "random" (i.i.d. tokens with the training frequencies,
# which have no word order: any position dependence there comes from the model, not the text).
rule twin_scores:
    input:
        model="results/training/{twin}/model.safetensors",
        valid=f"{DATA_DIR}/valid.npy",
        train=f"{DATA_DIR}/train.npy",
    output:
        "results/twins/scores/{twin}_{inputs}_{mask}.npz",
    log:
        "results/logs/twin_scores/{twin}_{inputs}_{mask}.log",
    benchmark:
        "results/benchmarks/twin_scores/{twin}_{inputs}_{mask}.tsv"
    conda:
        HEAVY_ENV
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=library_code("extract", "models", "train"),
        analysis=config["twin_analysis"],
        causal=lambda wildcards: str(wildcards.mask == "causal").lower(),
        seed=config["seed"],
    shell:
        "python -m behind_rope twin-scores --model-dir $(dirname {input.model}) --valid {input.valid}"
        " --seq-len {params.analysis[seq_len]} --sequences {params.analysis[sequences]}"
        " --batch-size {params.analysis[batch_size]} --causal {params.causal} --threads {threads}"
        " --inputs {wildcards.inputs} --train {input.train} --seed {params.seed} --output {output} > {log} 2>&1"


rule twin_metrics:
    input:
        "results/twins/scores/{twin}_{inputs}_{mask}.npz",
    output:
        "results/metrics/twins/{twin}_{inputs}_{mask}.json",
    log:
        "results/logs/twin_metrics/{twin}_{inputs}_{mask}.log",
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=library_code("metrics"),
    shell:
        "python -m behind_rope metrics --input {input} --output {output} > {log} 2>&1"


rule gram:
    input:
        model="results/training/{twin}/model.safetensors",
        valid=f"{DATA_DIR}/valid.npy",
    output:
        "results/twins/gram/{twin}.npz",
    log:
        "results/logs/gram/{twin}.log",
    conda:
        HEAVY_ENV
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=library_code("gram", "extract", "models"),
        analysis=config["twin_analysis"],
    shell:
        "python -m behind_rope gram --model-dir $(dirname {input.model}) --valid {input.valid}"
        " --seq-len {params.analysis[seq_len]} --sequences {params.analysis[sequences]}"
        " --threads {threads} --output {output} > {log} 2>&1"
