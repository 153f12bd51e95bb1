# The twins (training.twins: NoPE and RoPE, the seeds of each, and variants of them), trained on the
# prepared corpus.


rule train:
    input:
        unpack(lambda wildcards: paths.train_inputs(config, wildcards.twin)),
    output:
        **paths.twin_files("{twin}"),
    # The run record: the run's throughput, time and memory, which are no result (a twin trained again is the same).
    log:
        log="results/logs/train/{twin}.log",
        run="results/logs/train/{twin}.json",
    benchmark:
        "results/benchmarks/train/{twin}.tsv"
    wildcard_constraints:
        twin=names(TRAINED),
    # Training is the longest chain: started first, the LLM jobs fill the cores around it; below them, the
    # twins would start only when every score job had (13 minutes into a cold run) and end the run alone.
    priority: 25
    conda:
        HEAVY_ENV
    threads: job_threads("training")
    resources:
        **job_resources("training"),
    params:
        code=step_code("train"),
        settings=settings(steps.twin_settings, "twin"),
        # Not an output: Snakemake would delete it when the job fails, and it is what a rerun resumes from.
        resume_dir="results/checkpoints/{twin}",
        scale=lambda wildcards, input: (
            f"--scale-reference {input.scale_reference}" if "scale_reference" in input.keys() else ""
        ),
    shell:
        "python -m behind_rope train --settings {params.settings:q} --threads {threads} --train {input.train}"
        " --valid {input.valid} --output-dir $(dirname {output.model}) --resume-dir {params.resume_dir}"
        " --code {params.code} {params.scale} --run-record {log.run} > {log.log} 2>&1"


# A checkpoint trained without RoPE elsewhere (the authors' model at paper scale), read as a twin: its config with
# the rotary embedding off in every layer, and its weights, where every twin step reads a twin's.
rule checkpoint_twin:
    input:
        unpack(lambda wildcards: paths.checkpoint_sources(config, wildcards.twin)),
    output:
        **paths.checkpoint_files("{twin}"),
    log:
        "results/logs/checkpoint_twin/{twin}.log",
    benchmark:
        "results/benchmarks/checkpoint_twin/{twin}.tsv"
    wildcard_constraints:
        twin=names(CHECKPOINTS) or NO_VALUE,
    priority: 10
    conda:
        HEAVY_ENV
    # Merging a sharded checkpoint holds its weights in memory: the group of the jobs that read a twin's.
    threads: job_threads("twin_analysis")
    resources:
        **job_resources("twin_analysis"),
    params:
        code=step_code("checkpoint-twin"),
        record=lambda wildcards, input: f"--record {input.record}" if "record" in input.keys() else "",
    shell:
        "python -m behind_rope checkpoint-twin --model {input.model} {params.record}"
        " --output-dir $(dirname {output.model}) > {log} 2>&1"


# Named targets, one per trained twin: `snakemake train_nope`.
for _twin in TRAINED:

    rule:
        name:
            f"train_{_twin}"
        input:
            paths.twin_files(_twin).values(),
