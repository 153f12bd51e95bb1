"""A config file given by ``--configfile`` that cannot be read is said in one sentence, with its name and line.

Snakemake reads those files before it parses the Snakefile, so no check of the workflow's can see them: a missing
file ends in a traceback (its reader opens the file outside its own ``try``), and a YAML error in "Config file is
not valid JSON or YAML", without the file or the line.  The local and SLURM profiles load this file (by its path,
so it imports nothing of the package) and call :func:`install`, which checks each file first and hands it on to
Snakemake's own reader unchanged.
"""

from __future__ import annotations

from pathlib import Path


def problem(path: str | Path) -> str | None:
    """Why the config file ``path`` cannot be read, in one sentence; None when it can."""
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"The config file {path} does not exist; check the path given to --configfile."
    except (OSError, UnicodeDecodeError) as error:
        return f"The config file {path} cannot be read ({error}); check the path given to --configfile."
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(error, "problem", None) or str(error).splitlines()[0]
        return f"The config file {path} is not valid YAML{where} ({what}); fix it there."
    if loaded is not None and not isinstance(loaded, dict):
        return f"The config file {path} holds a {type(loaded).__name__}, not keys and values; write it as `key: value` lines."
    return None


def install() -> None:
    """Check every ``--configfile`` before Snakemake reads it (where Snakemake's settings read them)."""
    from snakemake.settings import types
    from snakemake_interface_common.exceptions import WorkflowError

    read = types.load_configfile
    if getattr(read, "checked_first", False):
        return

    def load_configfile(path):
        said = problem(path)
        if said is not None:
            raise WorkflowError(said)
        return read(path)

    load_configfile.checked_first = True
    types.load_configfile = load_configfile
