"""Which commit fixed each claim's deciding criteria, and the history of every change to them.

A verdict is only as good as the moment its criteria were written: results/claims.json records, per claim,
the last commit that changed the values the verdict depends on (``criterion_commits``), and
config/criteria_history.yaml says why each change was made (``load_history``, printed by
``history_markdown``, and in the paper's appendix by behind_rope.paper.document.history_latex).
``unrecorded_changes`` lets a test keep that history complete.

Everything here reads git with subprocess and never writes to the repository (``criterion_commits`` may
keep what it parsed in a file it is given: Snakemake's own folder).  A failure of git gives
"unknown", never an error: the commit is provenance, not a reason to stop the workflow.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

from behind_rope import atomic
from behind_rope.config import load_yaml
from behind_rope.registration import claims_of, deciding_paths, registration_hash, values_at

CONFIG_FILES = ("config/config.yaml", "config/claims.yaml")
HISTORY_PATH = "config/criteria_history.yaml"
UNKNOWN, UNCOMMITTED = "unknown", "uncommitted"
# The Markdown table's columns; the paper prints the same fields as one entry per change.
COLUMNS = ("commit", "date", "claims", "what changed", "why", "written after results?")


# The key of criterion_commits' answer that covers every claim's deciding paths: the registration's commit.
REGISTRATION = "registration"


def registration(root: Path, config: dict, commit: str) -> dict:
    """The registration a run decides by: its hash, the commit that last changed any deciding value (``commit``,
    criterion_commits' :data:`REGISTRATION` answer) and that commit's date (None where there is no commit)."""
    date = None
    if commit not in (UNKNOWN, UNCOMMITTED):
        try:
            date = _git(Path(root), "show", "-s", "--format=%cs", commit).strip() or None
        except Exception:  # provenance, not a reason to stop: as for the commit itself
            date = None
    return {"hash": registration_hash(config), "commit": commit, "date": date}


def criterion_commits(root: Path, paths_by_claim: dict[str, list[str]], files=CONFIG_FILES,
                      kept: Path | None = None) -> dict[str, str]:
    """Per claim, the 12-character commit that last changed the values at its paths.

    Values are compared as parsed YAML of ``files`` merged in order, so a comment or a reformatting is no
    change.  "uncommitted" when the working tree's values differ from HEAD's, "unknown" when git cannot
    tell (no repository, no git, no value anywhere).  Snakemake calls this on every parse of the workflow,
    so it runs two git processes whatever the length of the history: one log, one cat-file --batch.
    ``kept``: a JSON file that keeps each version's parsed YAML for the next call, by git object id (parsing
    every version again took most of this function's time, docs/performance.md).
    """
    root = Path(root)
    try:
        commits = _git(root, "log", "--format=%H", "--", *files).split()
        blobs = _cat_file(root, [f"{commit}:./{file}" for commit in ["HEAD", *commits] for file in files])
        parsed = _read_kept(kept)
        kept_before = set(parsed)
        configs = [_merged([blobs[f"{commit}:./{file}"] for file in files], parsed) for commit in ["HEAD", *commits]]
        working = _overlay_all(_read_working(root / file) for file in files)
    except Exception:
        return {name: UNKNOWN for name in paths_by_claim}
    _keep_parsed(kept, parsed, {blob[0] for blob in blobs.values() if blob is not None}, kept_before)
    head, history = configs[0], configs[1:]
    answers = {}
    for name, paths in paths_by_claim.items():
        if values_at(working, paths) != values_at(head, paths):
            answers[name] = UNCOMMITTED
            continue
        values = [values_at(config, paths) for config in history]
        older = values[1:] + [[None] * len(paths)]  # the first commit changed what was nothing before
        answers[name] = next((commit[:12] for commit, new, old in zip(commits, values, older, strict=True) if new != old),
                             UNKNOWN)
    return answers


def load_history(root: Path, path: str = HISTORY_PATH) -> list[dict]:
    """The rows of the criteria history, with ``commit`` and ``date`` as strings.

    A row written without a commit (it is committed with the change it records, whose hash it cannot know)
    gets the commit that first added its ``change`` text, "uncommitted" (dated today) when none has yet, or
    "unknown" outside git.  ``after_results`` stays the word that was written (YAML would read yes as True).
    """
    root = Path(root)
    file = root / path
    if not file.exists():
        return []
    text = file.read_text()
    rows = []
    for row in _rows(load_yaml(text)):
        row = dict(row)
        commit, date = row.get("commit"), row.get("date")
        if commit is None:
            commit, found = _adding_commit(root, path, text, str(row.get("change", "")))
            date = found or date
        row["commit"] = str(commit)
        row["date"] = date.isoformat() if isinstance(date, datetime.date) else str(date if date is not None else UNKNOWN)
        after = row.get("after_results")
        row["after_results"] = "yes" if after is True else "no" if after is False else str(after if after is not None else UNKNOWN)
        rows.append(row)
    return rows


def history_cells(row: dict) -> list[str]:
    """One row of the history as the text of its ``COLUMNS``, each on one line (the paper's appendix prints them)."""
    return [_flat(cell) for cell in _cells(row)]


def history_markdown(rows) -> str:
    """The history as a Markdown table (docs/criteria.md), one row per change."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(_markdown_cell(cell) for cell in _cells(row)) + " |")
    return "\n".join(lines) + "\n"


def touches(row: dict, name: str) -> bool:
    """Whether a history row changed claim ``name``: it names the claim or its group (C5 for C5a, C8 for C8b)."""
    return any(claim == name or (name.startswith(str(claim)) and name[len(str(claim)):].isalpha())
               for claim in row.get("claims") or [])


def before_and_after(rows, name: str) -> str:
    """How many of claim ``name``'s criterion changes were written before its results were known and how many
    after (``after_results`` yes or partly), and how many cannot tell: what the README, docs/results.md and the
    paper say of each claim, so that no sentence says more than the history shows."""
    marks = [row["after_results"] for row in rows if touches(row, name)]
    before = sum(mark == "no" for mark in marks)
    after = sum(mark in ("yes", "partly") for mark in marks)
    unknown = len(marks) - before - after
    return f"{before} before, {after} after" + (f", {unknown} unknown" if unknown else "")


def unrecorded_changes(root: Path, files=CONFIG_FILES, history: str = HISTORY_PATH) -> list[tuple[str, list[str]]]:
    """Commits (newest first) that changed some claim's deciding values without a row in the criteria history.

    A commit is recorded when a row of the working tree's history names it (a prefix of its hash) or when
    one of its rows written without a commit was added in that very commit (a row that names another commit
    records that one).  Each commit of either config file's history is compared with its first parent, over
    the claims of either version, so a depends_on key changed in config.yaml counts too.  Empty outside git.
    """
    walk = _history_walk(Path(root), files, history)
    if walk is None:
        return []
    log, parsed_at, recorded = walk
    found = []
    for full, short in log:
        if recorded(full):
            continue
        new, old = (_overlay_all(parsed_at(version, file) for file in files) for version in (full, f"{full}^"))
        changed = []
        for name in dict.fromkeys([*claims_of(new), *claims_of(old)]):
            paths = list(dict.fromkeys(deciding_paths(new, name) + deciding_paths(old, name)))
            if values_at(new, paths) != values_at(old, paths):
                changed.append(name)
        if changed:
            found.append((short, changed))
    return found


def unrecorded_verdict_changes(root: Path, expected: str = "tests/expected_verdicts.json",
                               history: str = HISTORY_PATH) -> list[str]:
    """Commits (newest first) that changed an expected verdict of the verdict gate without a row in the
    criteria history (recorded as in :func:`unrecorded_changes`).  The commit that first wrote the file
    sets the verdicts and changes none.  Empty outside git."""
    walk = _history_walk(Path(root), (expected,), history)
    if walk is None:
        return []
    log, parsed_at, recorded = walk

    def verdicts_at(version: str):
        found = parsed_at(version, expected)
        return found.get("verdicts") if isinstance(found, dict) and found else None

    return [short for full, short in log if verdicts_at(f"{full}^") is not None
            and verdicts_at(full) != verdicts_at(f"{full}^") and not recorded(full)]


def _history_walk(root: Path, files, history: str):
    """(the commits that changed ``files``, newest first, as (hash, short hash); the parsed YAML of a file at
    a version; whether a commit has a row in the working tree's criteria history), or None outside git."""
    try:
        log = [line.split() for line in _git(root, "log", "--format=%H %h", "--", *files).splitlines()]
        versions = [version for full, _ in log for version in (full, f"{full}^")]
        blobs = _cat_file(root, [f"{version}:./{file}" for version in versions for file in (*files, history)])
        rows = _rows(load_yaml(_read_text(root / history) or "{}"))
    except Exception:
        return None
    parsed: dict[str, object] = {}
    named = [str(row["commit"]) for row in rows if row.get("commit") is not None]
    changes_now = {_flat(row.get("change")) for row in rows if row.get("commit") is None}

    def parsed_at(version: str, file: str) -> object:
        return _parse(blobs[f"{version}:./{file}"], parsed)

    def changes_at(version: str) -> set[str]:
        return {_flat(row.get("change")) for row in _rows(parsed_at(version, history))}

    def recorded(full: str) -> bool:
        return (any(len(name) >= 4 and full.startswith(name) for name in named)
                or bool(changes_now & (changes_at(full) - changes_at(f"{full}^"))))

    return log, parsed_at, recorded


def _git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    """The stdout of ``git -C root ...``; raises when git fails or is missing."""
    done = subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True, check=True, timeout=60)
    return done.stdout.decode()


def _cat_file(root: Path, specs: list[str]) -> dict[str, tuple[str, bytes] | None]:
    """``<rev>:<path>`` -> (object id, contents), or None where there is no such blob; one git process for all."""
    done = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input="".join(f"{spec}\n" for spec in specs).encode(),
                          capture_output=True, check=True, timeout=60)
    out, at, blobs = done.stdout, 0, {}
    for spec in specs:
        end = out.index(b"\n", at)
        header = out[at:end].decode().split()
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            blobs[spec] = (header[0], out[at:at + size]) if header[1] == "blob" else None
            at += size + 1
        else:
            blobs[spec] = None  # "<spec> missing" or "<spec> ambiguous"
    return blobs


def _parse(blob: tuple[str, bytes] | None, parsed: dict) -> object:
    """A blob's YAML, parsed once per object id: most commits change one file and leave the other as it was."""
    if blob is None:
        return {}
    oid, data = blob
    if oid not in parsed:
        parsed[oid] = load_yaml(data.decode())
    return parsed[oid]


def _read_kept(kept: Path | None) -> dict[str, object]:
    """The kept versions by object id; none when there is no file or it cannot be read."""
    try:
        found = json.loads(Path(kept).read_text()) if kept else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _keep_parsed(kept: Path | None, parsed: dict[str, object], used: set[str], kept_before: set[str]) -> None:
    """Write the parsed versions in ``used`` to ``kept`` when that adds or drops one; best effort.

    An object id names its bytes, so a kept entry never goes stale.  Only an entry that JSON gives back
    exactly is kept (YAML may hold what JSON has not: a date, a number as a key); any other is parsed again.
    """
    if kept is None or used == kept_before:
        return
    keep = {oid: parsed[oid] for oid in used if oid in parsed and json.loads(json.dumps(parsed[oid])) == parsed[oid]}
    if keep.keys() == kept_before:
        return
    try:
        atomic.write_text(kept, json.dumps(keep, sort_keys=True))
    except OSError:  # a read-only folder: the next call parses again
        pass


def _merged(blobs, parsed: dict) -> dict:
    return _overlay_all(_parse(blob, parsed) for blob in blobs)


def _overlay_all(configs) -> dict:
    """The configs laid over each other in order (later wins, key by key); a missing or empty file is {}.

    Unlike config.merge this copies instead of changing its inputs, which are shared between commits.
    """
    merged: dict = {}
    for config in configs:
        merged = _overlay(merged, config if isinstance(config, dict) else {})
    return merged


def _overlay(base: dict, overlay: dict) -> dict:
    merged = dict(base)
    for key, value in overlay.items():
        merged[key] = _overlay(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


def _read_text(file: Path) -> str | None:
    return file.read_text() if file.exists() else None


def _read_working(file: Path) -> object:
    text = _read_text(file)
    return {} if text is None else load_yaml(text)


def _rows(history) -> list[dict]:
    rows = history.get("changes") if isinstance(history, dict) else None
    return [row for row in rows or [] if isinstance(row, dict)]


def _adding_commit(root: Path, path: str, text: str, change: str) -> tuple[str, str | None]:
    """(short commit, date) of the first commit that added ``change`` to the history file.

    git -S counts occurrences of an exact string, but YAML folds a wrapped ``change`` into one line: the text is
    cut back to whole words until it occurs in the file as written (its first line there), which tells apart
    rows that open with the same words.
    """
    needle = _flat(change)
    while needle not in text and " " in needle:
        needle = needle.rsplit(" ", 1)[0]
    try:
        log = _git(root, "log", "--reverse", "--format=%h %ad", "--date=short", f"-S{needle}", "--", path)
    except Exception:
        return UNKNOWN, None
    first = log.splitlines()[0].split() if log.strip() else None
    return (first[0], first[1]) if first else (UNCOMMITTED, datetime.date.today().isoformat())


def _flat(text) -> str:
    """Text on one line: YAML's folded and literal blocks keep newlines that a table cell cannot."""
    return " ".join(str(text if text is not None else "").split())


def _cells(row: dict) -> list[str]:
    claims = row.get("claims") or []
    after = _flat(row.get("after_results", UNKNOWN))
    evidence = _flat(row.get("evidence"))
    return [str(row.get("commit", UNKNOWN)), str(row.get("date", UNKNOWN)),
            ", ".join(map(str, claims)) if isinstance(claims, list) else str(claims),
            _flat(row.get("change")), _flat(row.get("why")), f"{after}: {evidence}" if evidence else after]


def _markdown_cell(text: str) -> str:
    return _flat(text).replace("|", r"\|")
