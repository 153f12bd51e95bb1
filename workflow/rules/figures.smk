# One rule per figure: it reads only results/ and writes figures/<name>.{pdf,png}.
# Each has a short named target (`snakemake fig2`) that rebuilds just that figure.

FIGURES = {
    "fig1": figure_files("fig1_mechanism"),
    "fig2": figure_files("fig2_simulation"),
    "figS_alpha_sweep": figure_files("figS_alpha_sweep"),
    "figS_layernorm": figure_files("figS_layernorm"),
    "fig4": figure_files("fig4_rope_simulation"),
    "figS_theory_vs_simulation": figure_files("figS_theory_vs_simulation"),
    "fig3": figure_files("fig3_nope_gram"),
    "figS_nope_all_layers": figure_files("figS_nope_all_layers"),
    "figS_rope_twin_all_layers": figure_files("figS_rope_twin_all_layers"),
    "figS_twin_training": figure_files("figS_twin_training"),
}


rule fig1_mechanism:
    input:
        derivation="results/theory/derivation.json",
    output:
        figure_report("fig1_mechanism"),
        "figures/fig1_mechanism.png",
    log:
        "results/logs/figures/fig1_mechanism.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/fig1_mechanism.py"


rule fig1:
    input:
        FIGURES["fig1"],


rule fig2_simulation:
    input:
        simulation_files(config["figures"]["fig2"]),
    output:
        figure_report("fig2_simulation"),
        "figures/fig2_simulation.png",
    log:
        "results/logs/figures/fig2_simulation.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/fig2_simulation.py"


rule fig2:
    input:
        FIGURES["fig2"],


rule figS_alpha_sweep_plot:
    input:
        simulation_files(config["figures"]["alpha_sweep"]),
    output:
        figure_report("figS_alpha_sweep"),
        "figures/figS_alpha_sweep.png",
    log:
        "results/logs/figures/figS_alpha_sweep.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/figS_alpha_sweep.py"


rule figS_alpha_sweep:
    input:
        FIGURES["figS_alpha_sweep"],


rule figS_layernorm_plot:
    input:
        simulation_files(config["figures"]["layernorm"]),
    output:
        figure_report("figS_layernorm"),
        "figures/figS_layernorm.png",
    log:
        "results/logs/figures/figS_layernorm.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/figS_layernorm.py"


rule figS_layernorm:
    input:
        FIGURES["figS_layernorm"],


rule fig4_rope_simulation:
    input:
        simulation_files(config["figures"]["fig4"]),
    output:
        figure_report("fig4_rope_simulation"),
        "figures/fig4_rope_simulation.png",
    log:
        "results/logs/figures/fig4_rope_simulation.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/fig4_rope_simulation.py"


rule fig4:
    input:
        FIGURES["fig4"],


rule figS_theory_vs_simulation_plot:
    input:
        simulation_files(config["figures"]["theory_vs_simulation"]),
    output:
        figure_report("figS_theory_vs_simulation"),
        "figures/figS_theory_vs_simulation.png",
    log:
        "results/logs/figures/figS_theory_vs_simulation.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/figS_theory_vs_simulation.py"


rule figS_theory_vs_simulation:
    input:
        FIGURES["figS_theory_vs_simulation"],


rule fig3_nope_gram:
    input:
        "results/twins/gram/nope.npz",
    output:
        figure_report("fig3_nope_gram"),
        "figures/fig3_nope_gram.png",
    log:
        "results/logs/figures/fig3_nope_gram.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/fig3_nope_gram.py"


rule fig3:
    input:
        FIGURES["fig3"],


rule figS_nope_all_layers_plot:
    input:
        "results/twins/scores/nope_text_causal.npz",
    output:
        figure_report("figS_nope_all_layers"),
        "figures/figS_nope_all_layers.png",
    log:
        "results/logs/figures/figS_nope_all_layers.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        label="NoPE twin",
    script:
        "../scripts/figS_twin_all_layers.py"


rule figS_nope_all_layers:
    input:
        FIGURES["figS_nope_all_layers"],


rule figS_rope_twin_all_layers_plot:
    input:
        "results/twins/scores/rope_text_causal.npz",
    output:
        figure_report("figS_rope_twin_all_layers"),
        "figures/figS_rope_twin_all_layers.png",
    log:
        "results/logs/figures/figS_rope_twin_all_layers.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        label="RoPE twin",
    script:
        "../scripts/figS_twin_all_layers.py"


rule figS_rope_twin_all_layers:
    input:
        FIGURES["figS_rope_twin_all_layers"],


rule figS_twin_training_plot:
    input:
        losses=[twin_files(twin)["loss"] for twin in ("nope", "rope")],
        metrics=[twin_files(twin)["metrics"] for twin in ("nope", "rope")],
    output:
        figure_report("figS_twin_training"),
        "figures/figS_twin_training.png",
    log:
        "results/logs/figures/figS_twin_training.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        labels=["NoPE", "RoPE"],
    script:
        "../scripts/figS_twin_training.py"


rule figS_twin_training:
    input:
        FIGURES["figS_twin_training"],


FIGURES["fig5"] = figure_files("fig5_llm_layers")
for _model in LLM["models"]:
    FIGURES[f"figS_llm_{_model}_all_layers"] = figure_files(f"figS_llm_{_model}_all_layers")


rule fig5_llm_layers:
    input:
        [f"results/attention/{model}.npz" for model in LLM["models"]],
    output:
        figure_report("fig5_llm_layers"),
        "figures/fig5_llm_layers.png",
    log:
        "results/logs/figures/fig5_llm_layers.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        layers=4,
    script:
        "../scripts/fig5_llm_layers.py"


rule fig5:
    input:
        FIGURES["fig5"],


rule figS_llm_all_layers_plot:
    input:
        "results/attention/{model}.npz",
    output:
        figure_report("figS_llm_{model}_all_layers", caption="figS_llm_all_layers"),
        "figures/figS_llm_{model}_all_layers.png",
    log:
        "results/logs/figures/figS_llm_{model}_all_layers.log",
    conda:
        LIGHT_ENV
    threads: job_threads("figures")
    resources:
        **job_resources("figures"),
    script:
        "../scripts/figS_llm_all_layers.py"


# Named targets, one per model: `snakemake figS_llm_gemma3_all_layers`.
for _model in LLM["models"]:

    rule:
        name:
            f"figS_llm_{_model}_all_layers"
        input:
            FIGURES[f"figS_llm_{_model}_all_layers"],
