# One plotting rule per figure of the figure table (workflow/figures.yaml), named after the figure:
# `snakemake fig2_simulation` rebuilds figures/fig2_simulation.{pdf,png} from results/ alone.


for _figure in EVERY_FIGURE.values():

    rule:
        name:
            _figure.name
        input:
            _figure.inputs,
        output:
            report(
                _figure.files[0],
                caption="../report/figure.rst",
                category=SECTIONS[_figure.section],
            ),
            _figure.files[1],
        log:
            f"results/logs/figures/{_figure.name}.log",
        benchmark:
            f"results/benchmarks/figures/{_figure.name}.tsv"
        localrule: on_submit_host("figures")
        conda:
            LIGHT_ENV
        threads: job_threads("figures")
        resources:
            **job_resources("figures"),
        params:
            **{key: verbatim(value) for key, value in _figure.params.items()},
            code=script_code(f"workflow/scripts/{_figure.script}"),
            # The script path is read when the job runs, after this loop has moved on: take it from params.
            script=_figure.script,
        script:
            "../scripts/{params.script}"
