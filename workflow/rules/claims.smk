# C3's competence precondition per twin; claims C6-C9 (where absolute position comes from) in
# results/claims/position.json; then every claim
# in results/claims.json: each decided from the metrics of the runs experiments.steps.claims_settings and
# experiments.steps.position_claims_settings name, with the criteria of the pre-registration (config/claims.yaml).
# The figures of C6-C9 read the first file, so a change to C1-C5 leaves them alone.


# Whether a twin uses the order of its context, on held-out text: claim C3's competence precondition.
rule competence:
    input:
        model="results/training/{twin}/model.safetensors",
        valid=paths.split_files(config)["valid"],
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
        settings=settings(steps.competence_settings),
    shell:
        "python -m behind_rope competence --settings {params.settings:q} --threads {threads}"
        " --model-dir $(dirname {input.model}) --valid {input.valid} --output {output} > {log} 2>&1"


rule position_claims:
    input:
        metrics=paths.position_claims_metric_files(config),
        patching=paths.patching_files(config),
        scores=paths.position_claims_score_files(config),
    output:
        "results/claims/position.json",
    log:
        "results/logs/position_claims.log",
    benchmark:
        "results/benchmarks/position_claims.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("position-claims"),
        settings=settings(steps.position_claims_settings),
    shell:
        "python -m behind_rope position-claims --settings {params.settings:q} --metrics {input.metrics}"
        " --patching {input.patching} --scores {input.scores} --output {output} > {log} 2>&1"


rule claims:
    input:
        **paths.claims_inputs(config),
    output:
        report("results/claims.json", caption="../report/claims.rst", category="Claims"),
    log:
        "results/logs/claims.log",
    benchmark:
        "results/benchmarks/claims.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("claims"),
        # With the commit that last changed each claim's criterion (read with git when the workflow is
        # parsed), so committing a criterion rewrites claims.json.
        settings=settings(
            steps.claims_settings,
            criterion_commits=CRITERION_COMMITS,
            registration=REGISTERED,
        ),
    shell:
        "python -m behind_rope claims --settings {params.settings:q} --derivation {input.derivation}"
        " --monte-carlo {input.monte_carlo} --metrics {input.metrics} --training {input.training}"
        " --competence {input.competence}"
        " --gram {input.gram} --position-claims {input.position_claims} --revision-claims {input.revision_claims}"
        " --output {output} > {log} 2>&1"


# The extended target's claims: the same step over llm.models and llm.extended_models together, so that the
# scale ladder can read those models' C5 measures.  Recorded only: results/claims.json decides every claim.
use rule claims as extended_claims with:
    input:
        **paths.claims_inputs(config, EXTENDED_CONFIG),
    output:
        "results/extended/claims.json",
    log:
        "results/logs/extended_claims.log",
    benchmark:
        "results/benchmarks/extended_claims.tsv"
    params:
        code=step_code("claims"),
        settings=rule_helpers.settings(
            EXTENDED_CONFIG,
            steps.claims_settings,
            criterion_commits=CRITERION_COMMITS,
            registration=REGISTERED,
        ),


# The run's row for the record of registrations: its registration, arm and data, each claim's outcome, this host
# and the checkout's commit (`python -m behind_rope record-registration` appends it to config/registrations.yaml).
rule registration_row:
    input:
        "results/claims.json",
    output:
        "results/registration.yaml",
    log:
        "results/logs/registration_row.log",
    benchmark:
        "results/benchmarks/registration_row.tsv"
    localrule: on_submit_host("metrics")
    conda:
        LIGHT_ENV
    threads: job_threads("metrics")
    resources:
        **job_resources("metrics"),
    params:
        code=step_code("registration-row"),
        scale=config["scale_name"],
    shell:
        "python -m behind_rope registration-row --claims {input} --scale {params.scale}"
        " --output {output} > {log} 2>&1"


# The exploratory arm, on demand (`snakemake exploratory`): the whole workflow on the draws the criteria were shaped
# on (config/exploratory.yaml over this run's config), in a copy of the checkout under results/exploratory/run/ that
# keeps its own Snakemake record, so that a rerun there redoes only what changed; its claims and row copied out.
rule exploratory_arm:
    output:
        claims="results/exploratory/claims.json",
        row="results/exploratory/registration.yaml",
    log:
        "results/logs/exploratory_arm.log",
    benchmark:
        "results/benchmarks/exploratory_arm.tsv"
    localrule: on_submit_host("arm")
    conda:
        LIGHT_ENV
    threads: job_threads("arm")
    resources:
        **job_resources("arm"),
    params:
        # Every file of the workflow: an edit anywhere reruns the arm, whose own record then reruns what it reaches.
        code=lambda wildcards: workflow_digest(Path(workflow.basedir)),
        checkout=workflow.basedir,
        # The arm's own Snakemake: the one running this, whatever environment the job runs in.
        python=PYTHON,
        configfiles=[str(Path(path).resolve()) for path in workflow.config_settings.configfiles],
        config=[f"{key}={value}" for key, value in (workflow.config_settings.config or {}).items()],
    shell:
        "python -m behind_rope exploratory-arm --threads {threads} --python {params.python:q}"
        " --checkout {params.checkout:q} --workdir results/exploratory/run"
        " --configfile {params.configfiles:q} --config {params.config:q}"
        " --claims {output.claims} --row {output.row} > {log} 2>&1"
