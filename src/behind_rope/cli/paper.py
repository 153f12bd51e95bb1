"""Steps of workflow/rules/paper.smk: the paper's values and tables, the PDF and the arXiv tarball."""

from __future__ import annotations

from pathlib import Path

from behind_rope import atomic
from behind_rope.cli.common import OUTPUT, SETTINGS, arg, step


@step("paper-inputs", "numbers.tex, the generated tables, the appendices and the figure environments of the paper",
      SETTINGS,
      arg("--claims", required=True), arg("--training", nargs="+", required=True, help="metrics.json of every twin"),
      arg("--data-stats", required=True), arg("--history", required=True, help="config/criteria_history.yaml"),
      arg("--record", required=True, help="config/registrations.yaml"), arg("--output-dir", required=True))
def paper_inputs(args) -> None:
    from behind_rope.claims.preregistration import before_and_after, load_history
    from behind_rope.claims.record import read_rows
    from behind_rope.paper import document as paper

    training = {Path(p).parent.name: atomic.read_json(p) for p in args.training}
    rows = load_history(Path.cwd(), args.history)  # rows without a commit get theirs from git
    claims = atomic.read_json(args.claims)
    changes = {name: before_and_after(rows, name) for name, claim in claims.items()
               if isinstance(claim, dict) and "statement" in claim}
    values = paper.write_paper_inputs(claims, training, atomic.read_json(args.data_stats), args.settings,
                                      paper.git_commit(Path.cwd()), Path(args.output_dir), paper.history_latex(rows),
                                      changes, read_rows(Path(args.record).read_text()))
    print(f"{len(values)} values -> {args.output_dir}/numbers.tex")


@step("paper-pdf", "build the paper with latexmk (pdflatex)", OUTPUT, arg("--tex", required=True),
      arg("--search-path", nargs="+", required=True, help="folders with the \\input files and figures"),
      arg("--tex-packages", required=True, help="the Debian packages to name when LaTeX is missing"),
      arg("--log", required=True))
def paper_pdf(args) -> None:
    from behind_rope.paper import latex

    latex.build_pdf(Path(args.tex), Path(args.output), Path(args.log), [Path(p) for p in args.search_path],
                    latex.tex_packages(Path(args.tex_packages)))
    recorded = Path(args.output).parent / "latex" / f"{Path(args.tex).stem}.fls"
    print(f"{args.output}: figures read: {', '.join(latex.figures_read(recorded))}")


@step("paper-tarball", "a flat, reproducible .tar.gz of the paper's sources", OUTPUT,
      arg("--files", nargs="+", required=True))
def paper_tarball(args) -> None:
    from behind_rope.paper import latex

    latex.write_tarball(Path(args.output), [Path(p) for p in args.files])
    print(f"{args.output}: {len(args.files)} files")
