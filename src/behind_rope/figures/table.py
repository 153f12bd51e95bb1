"""The figure table (``workflow/figures.yaml``): every figure named once, with all it needs.

An entry gives the figure's title and caption, its script, the result files it reads, the values
its script gets as ``snakemake.params``, its section (the report's category and the part of the
paper it belongs to) and where it goes in the paper.  The rules (one plotting rule and one named
target per figure), ``all``, the report, the paper's figure environments and the tests are all
made from this table, so adding a figure is one entry, one script and one caption.

Captions are written once, in a small subset of LaTeX that both outputs can show: ``$math$``,
``\\emph{...}`` and ``Figure~\\ref{fig:<name>}``.  ``{llm}`` in a name makes one figure per model of
``llm.models``; elsewhere in an entry it stands for the model (or, in the inputs of a figure that
is not per model, expands to one input per model).  A figure of a model in ``llm.extended_models``, and an
entry with ``extended: true`` (whose ``{llm}`` inputs cover those models too), is built by the ``extended``
target only: not by ``all``, not in the paper.  ``{seeds:<twin>}`` in an input expands to one
input per seed of that twin (``training.twins.<twin>.seeds``), and ``{figure3_twin}`` stands for the NoPE
model Figure 3 draws (:func:`behind_rope.experiments.runs.figure3_twin`: the authors' checkpoint at paper scale).

Inputs are named, not written out: a result file's name (``claims``), or its name with the values of
its wildcards (``{simulation: [l2_alpha0.0, l2_alpha0.2]}``, ``{scores: {model: nope, run: text_causal}}``),
from :data:`behind_rope.experiments.paths.RESULT_FILES`.  Several values make one input each, the last wildcard
varying fastest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from string import Formatter

from behind_rope.config import load_yaml
from behind_rope.experiments.paths import RESULT_FILES

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "workflow" / "figures.yaml"
SCRIPTS = ROOT / "workflow" / "scripts"
PLACES = ("main", "appendix", "none")
ENTRY_KEYS = {"title", "caption", "script", "inputs", "params", "section", "paper", "width", "extended"}
PER_MODEL = "{llm}"
SEEDS = re.compile(r"\{seeds:(\w+)\}")
FIGURE3_TWIN = "{figure3_twin}"


class FigureTableError(ValueError):
    """The figure table names something that does not exist, or misses a required field."""


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    caption: str  # as written: {llm} stands for the model, filled in per output format
    script: str
    inputs: tuple[str, ...]
    section: str
    paper: str = "main"
    params: dict = field(default_factory=dict)
    width: float = 1.0
    model: str | None = None  # the model a per-model figure draws
    extended: bool = False  # built by the extended target only (not by all, not in the paper)

    @property
    def files(self) -> list[str]:
        return [f"figures/{self.name}.pdf", f"figures/{self.name}.png"]


def _fill(value, model: str | None):
    """Put the model's name in for {llm} in every string of an entry."""
    if model is None:
        return value
    if isinstance(value, str):
        return value.replace(PER_MODEL, model)
    if isinstance(value, list):
        return [_fill(item, model) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, model) for key, item in value.items()}
    return value


def _expand_seeds(path: str, config: dict) -> list[str]:
    """One path per seed of the twin a ``{seeds:<twin>}`` placeholder names (the path itself if it has none), with
    the twin Figure 3 draws for ``{figure3_twin}``."""
    from behind_rope.config import seed_twins

    if FIGURE3_TWIN in path:
        from behind_rope.experiments.runs import figure3_twin

        path = path.replace(FIGURE3_TWIN, figure3_twin(config))
    found = SEEDS.search(path)
    if not found:
        return [path]
    if found.group(1) not in config["training"]["twins"]:
        raise FigureTableError(f"Figure table error: {path!r} names the twin {found.group(1)!r}, which is not under "
                               "training.twins.")
    return [SEEDS.sub(twin, path, count=1) for twin in seed_twins(config, found.group(1))]


def _result_paths(figure: str, item, config: dict) -> list[str]:
    """The paths one input of the table names: ``claims``, or ``{simulation: [a, b]}``, or
    ``{scores: {model: nope, run: text_causal}}`` (placeholders such as ``{llm}`` kept for later)."""
    if isinstance(item, str):
        name, values = item, {}
    elif isinstance(item, dict) and len(item) == 1:
        [(name, values)] = item.items()
    else:
        name, values = None, None
    if name not in RESULT_FILES:
        raise FigureTableError(f"Figure table error: '{figure}' reads {item!r}; an input is one of {', '.join(RESULT_FILES)}, "
                               "alone or as a mapping to the values of its wildcards.")
    pattern = RESULT_FILES[name]
    wildcards = [field for _, field, _, _ in Formatter().parse(pattern) if field]
    if not isinstance(values, dict):  # a result with one wildcard takes its values directly
        values = {wildcards[0]: values} if len(wildcards) == 1 else None
    if values is None or set(values) != set(wildcards):
        raise FigureTableError(f"Figure table error: '{figure}' reads {item!r}; {name} ({pattern}) needs a value for "
                               f"each of {', '.join(wildcards) or 'nothing'}, and only those.")
    lists = {wildcard: [value] if isinstance(value, str) else list(value) for wildcard, value in values.items()}
    unknown = set(lists.get("variant", [])) - set(config["simulation"]["variants"])
    if unknown:
        raise FigureTableError(f"Figure table error: '{figure}' reads the simulations {sorted(unknown)}, which are not "
                               "under simulation.variants.")
    return [pattern.format(**dict(zip(lists, chosen, strict=True))) for chosen in product(*lists.values())]


def _figure(name: str, entry: dict, sections: dict, models: list[str], model: str | None, config: dict,
            extended: bool = False) -> Figure:
    unknown = set(entry) - ENTRY_KEYS
    missing = {"title", "caption", "inputs", "section"} - set(entry)
    if unknown or missing:
        problem = f"has unknown fields {sorted(unknown)}" if unknown else f"misses {sorted(missing)}"
        raise FigureTableError(f"Figure table error: '{name}' {problem}; the fields are {', '.join(sorted(ENTRY_KEYS))}.")
    if entry["section"] not in sections:
        raise FigureTableError(f"Figure table error: '{name}' has section {entry['section']!r}; it must be one of "
                               f"{', '.join(sections)}.")
    if entry.get("paper", "main") not in PLACES:
        raise FigureTableError(f"Figure table error: '{name}' has paper {entry['paper']!r}; it must be one of "
                               f"{', '.join(PLACES)}.")
    script = entry.get("script", f"{re.sub(r'_?' + re.escape(PER_MODEL), '', name)}.py")
    if not (SCRIPTS / script).is_file():
        raise FigureTableError(f"Figure table error: '{name}' names the script {script}, which is not in "
                               f"workflow/scripts/; write it or fix the name.")
    inputs = []
    named = [path for item in entry["inputs"] for path in _result_paths(name, item, config)]
    for path in (seeded for written in named for seeded in _expand_seeds(written, config)):
        inputs += [path.replace(PER_MODEL, m) for m in models] if PER_MODEL in path and model is None else [path]
    filled = _fill(entry, model)
    figure = Figure(name=_fill(name, model), title=filled["title"], caption=" ".join(entry["caption"].split()),
                    script=script, inputs=tuple(_fill(inputs, model)), section=entry["section"],
                    paper=entry.get("paper", "main"), params=filled.get("params", {}),
                    width=float(entry.get("width", 1.0)), model=model, extended=extended)
    caption_rst(figure)  # fails on LaTeX the report cannot show
    return figure


def load(config: dict, path: Path = TABLE) -> tuple[dict[str, str], dict[str, Figure]]:
    """({section: title}, {figure name: Figure}) with per-model entries expanded over ``llm.models`` and
    ``llm.extended_models`` (the figures of the latter, and entries marked ``extended``, marked extended)."""
    table = load_yaml(Path(path).read_text())
    sections, models = table["sections"], list(config["llm"]["models"])
    extended_models = list(config["llm"].get("extended_models", []))
    figures = {}
    for name, entry in table["figures"].items():
        marked = bool(entry.get("extended", False))
        for model in ([*models, *extended_models] if PER_MODEL in name else [None]):
            figure = _figure(name, entry, sections, [*models, *extended_models] if marked else models, model, config,
                             extended=marked or model in extended_models)
            figures[figure.name] = figure
    return sections, figures


# --- Captions -------------------------------------------------------------------------------------

_MATH = re.compile(r"\$([^$]+)\$")
_REF = re.compile(r"Figure~\\ref\{fig:([\w-]+)\}")
_EMPH = re.compile(r"\\emph\{([^{}]*)\}")


def caption_rst(figure: Figure) -> str:
    """The caption for the Snakemake report (reStructuredText)."""
    text = _REF.sub(r"figure \1", figure.caption.replace(PER_MODEL, f"``{figure.model}``"))
    text = _EMPH.sub(r"*\1*", text).replace("~", " ")
    pieces = _MATH.split(text)
    if any("\\" in piece for piece in pieces[::2]):
        raise FigureTableError(f"Figure table error: the caption of '{figure.name}' uses LaTeX the report cannot show; "
                               "use only $math$, \\emph{...} and Figure~\\ref{fig:<name>}.")
    text = "".join(piece if k % 2 == 0 else f":math:`{piece}`" for k, piece in enumerate(pieces))
    inputs = ", ".join(f"``{path}``" for path in figure.inputs)
    return (f"**{figure.title}.** {text}\n\nScript ``workflow/scripts/{figure.script}``; inputs {inputs}.")


def _tex_name(text: str) -> str:
    return text.replace("_", r"\_")


def figure_tex(figure: Figure) -> str:
    """One figure environment: in its section, placed where it is written; in the appendix, on a float page."""
    placement = "H" if figure.paper == "main" else "p"
    caption = figure.caption.replace(PER_MODEL, rf"\texttt{{{_tex_name(figure.model or '')}}}")
    inputs = ", ".join(figure.inputs)
    return "\n".join([
        rf"\begin{{figure}}[{placement}]", r"\centering",
        rf"\includegraphics[width={figure.width:g}\linewidth]{{{figure.name}}}",
        rf"\caption[{_tex_name(figure.title)}]{{\textbf{{{_tex_name(figure.title)}.}} {caption} "
        rf"\madeby{{{figure.script}}}{{{inputs}}}}}",
        rf"\label{{fig:{figure.name}}}", r"\end{figure}", ""])


def paper_figures(sections: dict[str, str], figures: dict[str, Figure]) -> dict[str, str]:
    """{file name: LaTeX}: the main-text figures of each section, and the appendix figures."""
    files = {f"figures_{section}.tex": "".join(figure_tex(f) for f in figures.values()
                                               if f.section == section and f.paper == "main") for section in sections}
    files["figures_appendix.tex"] = "".join(figure_tex(f) for f in figures.values() if f.paper == "appendix")
    return files
