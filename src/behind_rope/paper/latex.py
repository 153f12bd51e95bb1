"""Building the paper: LaTeX checks, the latexmk run, and the arXiv tarball."""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from behind_rope import atomic


class LatexMissing(RuntimeError):
    pass


class LatexFailed(RuntimeError):
    """LaTeX ran and stopped on an error: the message quotes it and names the full log."""


def required_tex_files(main_tex: str) -> list[str]:
    """The .sty and .bst files main.tex loads, to check before running LaTeX."""
    files = []
    for options_and_names in re.findall(r"^\s*\\usepackage(?:\[[^\]]*\])?\{([^}]+)\}", main_tex, flags=re.MULTILINE):
        files += [f"{name.strip()}.sty" for name in options_and_names.split(",")]
    files += [f"{style}.bst" for style in re.findall(r"\\bibliographystyle\{([^}]+)\}", main_tex)]
    return files


def check_latex(main_tex: Path, packages: list[str]) -> None:
    """Fail with one sentence naming the Debian packages when a tool or a LaTeX package is missing."""
    install = f"apt-get install --no-install-recommends {' '.join(packages)} (or run envs/setup_tex.sh as root)"
    tools = [tool for tool in ("latexmk", "pdflatex", "bibtex", "kpsewhich") if shutil.which(tool) is None]
    if tools:
        raise LatexMissing(f"LaTeX is missing ({', '.join(tools)} not found), so the paper cannot be built; every "
                           f"other target builds without it. Install Debian's packages: {install}")
    wanted = required_tex_files(main_tex.read_text())
    found = subprocess.run(["kpsewhich", *wanted], capture_output=True, text=True).stdout.split()
    missing = [name for name in wanted if not any(path.endswith("/" + name) for path in found)]
    if missing:
        raise LatexMissing(f"LaTeX cannot find {', '.join(missing)}, so the paper cannot be built. Install Debian's "
                           f"packages: {install}")


def latex_errors(log_text: str, lines: int = 12) -> str:
    errors = [line for line in log_text.splitlines() if line.startswith("!") or re.match(r"^[^:\s]+\.tex:\d+:", line)]
    return "\n".join(errors[:lines])


def build_pdf(main_tex: Path, pdf: Path, log: Path, search_path: list[Path], packages: list[str]) -> None:
    """Run latexmk (pdflatex, bibtex) on main_tex; \\input and figures are found through ``search_path``.

    latexmk keeps its auxiliary files in ``<pdf dir>/latex`` so a rebuild is incremental; the PDF
    and the bibliography (.bbl) are then moved next to it atomically.
    """
    check_latex(main_tex, packages)
    work = pdf.parent / "latex"
    work.mkdir(parents=True, exist_ok=True)
    # Paths relative to main.tex's folder, so a moved or copied project still builds; -g because
    # Snakemake runs this rule only when an input changed, whatever latexmk's own records say.
    path = os.pathsep.join(os.path.relpath(p, main_tex.parent) for p in [main_tex.parent, *search_path]) + os.pathsep
    # The PDF's dates and identifier from SOURCE_DATE_EPOCH rather than the clock (\date names the commit instead),
    # so that the same sources make the same PDF, byte for byte.
    env = {**os.environ, "TEXINPUTS": path, "BIBINPUTS": path,
           "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "0")}
    command = ["latexmk", "-pdf", "-g", "-recorder", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
               f"-outdir={os.path.relpath(work, main_tex.parent)}", main_tex.name]
    done = subprocess.run(command, cwd=main_tex.parent, env=env, capture_output=True, text=True)
    latex_log = work / f"{main_tex.stem}.log"
    latex_log_text = latex_log.read_text(errors="replace") if latex_log.exists() else ""
    atomic.write_text(log, f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}\n--- {latex_log.name} ---\n{latex_log_text}")
    if done.returncode != 0:
        raise LatexFailed(f"latexmk failed on {main_tex} (full log: {log}):\n{latex_errors(latex_log_text)}")
    # The .bbl goes next to the PDF too: arXiv does not run bibtex, so the tarball carries it.
    for suffix in (".bbl", ".pdf"):
        atomic.write_bytes(pdf.with_suffix(suffix), (work / main_tex.stem).with_suffix(suffix).read_bytes())


def figures_read(fls: Path) -> list[str]:
    """The figure PDFs a LaTeX run read, from its -recorder file list."""
    names = {Path(line.split(" ", 1)[1]).name for line in fls.read_text().splitlines()
             if line.startswith("INPUT ") and line.endswith(".pdf")}
    return sorted(names)


def write_tarball(output: Path, files: list[Path]) -> None:
    """A flat, reproducible .tar.gz (fixed order, times and owners) that arXiv compiles as is."""
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        raise ValueError(f"two files of the tarball share a name: {sorted(names)}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for file in sorted(files, key=lambda f: f.name):
            data = file.read_bytes()
            info = tarfile.TarInfo(file.name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    atomic.write_bytes(output, gzip.compress(buffer.getvalue(), mtime=0))


def tex_packages(path: Path) -> list[str]:
    """The Debian packages listed in envs/tex-packages.txt (named when LaTeX is missing)."""
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
