# One rule per figure: it reads only results/ and writes figures/<name>.{pdf,png}.
# Each has a short named target (`snakemake fig2`) that rebuilds just that figure.

FIGURES = {
    "fig1": figure_files("fig1_mechanism"),
    "fig2": figure_files("fig2_simulation"),
    "figS_alpha_sweep": figure_files("figS_alpha_sweep"),
    "figS_layernorm": figure_files("figS_layernorm"),
    "fig4": figure_files("fig4_rope_simulation"),
    "figS_theory_vs_simulation": figure_files("figS_theory_vs_simulation"),
}


rule fig1_mechanism:
    input:
        derivation="results/theory/derivation.json",
    output:
        report("figures/fig1_mechanism.pdf", category="Figures"),
        "figures/fig1_mechanism.png",
    log:
        "results/logs/figures/fig1_mechanism.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/fig1_mechanism.py"


rule fig1:
    input:
        FIGURES["fig1"],

rule fig2_simulation:
    input:
        simulation_files(config["figures"]["fig2"]),
    output:
        report("figures/fig2_simulation.pdf", category="Figures"),
        "figures/fig2_simulation.png",
    log:
        "results/logs/figures/fig2_simulation.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/fig2_simulation.py"


rule fig2:
    input:
        FIGURES["fig2"],

rule figS_alpha_sweep_plot:
    input:
        simulation_files(config["figures"]["alpha_sweep"]),
    output:
        report("figures/figS_alpha_sweep.pdf", category="Figures"),
        "figures/figS_alpha_sweep.png",
    log:
        "results/logs/figures/figS_alpha_sweep.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/figS_alpha_sweep.py"


rule figS_alpha_sweep:
    input:
        FIGURES["figS_alpha_sweep"],

rule figS_layernorm_plot:
    input:
        simulation_files(config["figures"]["layernorm"]),
    output:
        report("figures/figS_layernorm.pdf", category="Figures"),
        "figures/figS_layernorm.png",
    log:
        "results/logs/figures/figS_layernorm.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/figS_layernorm.py"


rule figS_layernorm:
    input:
        FIGURES["figS_layernorm"],

rule fig4_rope_simulation:
    input:
        simulation_files(config["figures"]["fig4"]),
    output:
        report("figures/fig4_rope_simulation.pdf", category="Figures"),
        "figures/fig4_rope_simulation.png",
    log:
        "results/logs/figures/fig4_rope_simulation.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/fig4_rope_simulation.py"


rule fig4:
    input:
        FIGURES["fig4"],

rule figS_theory_vs_simulation_plot:
    input:
        simulation_files(config["figures"]["theory_vs_simulation"]),
    output:
        report("figures/figS_theory_vs_simulation.pdf", category="Figures"),
        "figures/figS_theory_vs_simulation.png",
    log:
        "results/logs/figures/figS_theory_vs_simulation.log",
    conda:
        ENV
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/figS_theory_vs_simulation.py"


rule figS_theory_vs_simulation:
    input:
        FIGURES["figS_theory_vs_simulation"],
