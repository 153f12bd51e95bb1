# The twins (training.twins: NoPE and RoPE, the seeds of each, and variants of them), trained on the
# prepared corpus.


rule train:
    input:
        **experiments.split_files(config),
    output:
        **experiments.twin_files("{twin}"),
    log:
        "results/logs/train/{twin}.log",
    benchmark:
        "results/benchmarks/train/{twin}.tsv"
    # Training is the next longest chain.
    priority: 10
    conda:
        HEAVY_ENV
    threads: job_threads("training")
    resources:
        **job_resources("training"),
    params:
        code=step_code("train"),
        settings=settings(experiments.twin_settings, "twin"),
        # Not an output: Snakemake would delete it when the job fails, and it is what a rerun resumes from.
        resume_dir="results/checkpoints/{twin}",
    shell:
        "python -m behind_rope train --settings {params.settings:q} --threads {threads} --train {input.train}"
        " --valid {input.valid} --output-dir $(dirname {output.model}) --resume-dir {params.resume_dir}"
        " --code {params.code} > {log} 2>&1"


# Whether a twin uses the order of its context, on held-out text: claim C3's competence precondition.
rule competence:
    input:
        model="results/training/{twin}/model.safetensors",
        valid=experiments.split_files(config)["valid"],
    output:
        "results/competence/{twin}.json",
    log:
        "results/logs/competence/{twin}.log",
    benchmark:
        "results/benchmarks/competence/{twin}.tsv"
    priority: 20
    conda:
        HEAVY_ENV
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=step_code("competence"),
        settings=settings(experiments.competence_settings),
    shell:
        "python -m behind_rope competence --settings {params.settings:q} --threads {threads}"
        " --model-dir $(dirname {input.model}) --valid {input.valid} --output {output} > {log} 2>&1"


# Named targets, one per twin: `snakemake train_nope`.
for _twin in TWINS:

    rule:
        name:
            f"train_{_twin}"
        input:
            experiments.twin_files(_twin).values(),
