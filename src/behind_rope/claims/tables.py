"""The tables that come from a run's results/claims.json: docs/results.md's (the two arms side by side among them),
the README's claims table, and docs/criteria.md's criteria history (config/criteria_history.yaml) and record of
registrations (config/registrations.yaml).  Each claim group's own table is written
by its module (claims.c3, claims.c5, claims.ladder, claims.position, claims.revision, claims.decide for C4);
here are the ones that span the groups and the writing of the pages.

    python -m behind_rope.claims.tables results/claims.json      # rewrite them from this run
    python -m behind_rope.claims.tables DIR/results/claims.json --source "a default-scale run of commit abc1234 (an AVX2 host)"
    python -m behind_rope.claims.tables results/claims.json --extended results/extended/claims.json   # the ladder too
    python -m behind_rope.claims.tables results/claims.json --exploratory ../exploratory/results/claims.json

Every sentence in them that states a verdict is written from the claims file, never by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from behind_rope.claims import c3, c5, decide, ladder, position, revision
from behind_rope.claims import markdown as md
from behind_rope.claims.outcome import outcome
from behind_rope.claims.preregistration import before_and_after, history_markdown, load_history
from behind_rope.claims.record import RECORD_PATH, claims_data, read_rows
from behind_rope.registration import status

# The pages, under the checkout's root, whose marked blocks the tables replace.
RESULTS, CRITERIA, README = Path("docs/results.md"), Path("docs/criteria.md"), Path("README.md")


def decomposition_table(claims: dict) -> str:
    """Relative / query offset / softmax-visible shares, layers 1-4, for every kind of run."""
    shares = ("relative_share", "query_offset_share", "visible_share")
    runs = []
    for model, result in claims["C5a"]["measured"]["models"].items():
        for run, label in (("text", "text"), ("iid_tokens", "i.i.d."), ("iid_tokens_no_mask", "i.i.d., no mask")):
            runs.append((f"{model}, {label}", result["decomposition"][run]))
    for run, layers in claims["C3"]["measured"]["all_layers"].items():
        runs.append((f"twin {run}", {str(row["layer"]): row for row in layers}))
    runs += [(f"simulation {name}", layers) for name, layers in claims["C4"]["measured"]["decomposition"].items()]
    rows = ["| run | layer 1 | layer 2 | layer 3 | layer 4 |", "|---|---|---|---|---|"]
    for label, by_layer in runs:
        cells = [" / ".join(md.value(by_layer[str(k)][key], ".2f") for key in shares) if str(k) in by_layer else ""
                 for k in (1, 2, 3, 4)]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def history_table(root: Path) -> str:
    """Every change of a criterion (config/criteria_history.yaml), rows without a commit given theirs by git."""
    return "_From `config/criteria_history.yaml` by `python -m behind_rope.claims.tables`._\n\n" + history_markdown(load_history(root))


def readme_table(claims: dict, source: str, root: Path, exploratory: dict | None = None) -> str:
    """The README's claims table: each claim's statement as results/claims.json words it, what the revised
    paper (version 2) does with it, how many of its criterion's changes were written before and after results
    were known (config/criteria_history.yaml), its outcome on the exploratory arm's draws (where given) and on this
    run's, and what the record supports saying of this run's (behind_rope.registration.status)."""
    history = load_history(root)
    rows = [f"_From `results/claims.json` of {source}; criterion changes from `config/criteria_history.yaml`._", "",
            "| claim | what it says | version 2 | criterion changes, before / after results | exploratory | outcome | "
            "its status |", "|---|---|---|---|---|---|---|"]
    for name, claim in claims.items():
        if isinstance(claim, dict) and "statement" in claim:
            said = "its own claim" if name.startswith("R") else revision.stance(name)[0]
            explored = outcome(exploratory[name]) if exploratory and name in exploratory else "not run"
            rows.append(f"| {name} | {claim['statement']} | {said} | {before_and_after(history, name)} | {explored} | "
                        f"**{outcome(claim)}** | {status(claim['registration'], claim.get('data', {}))} |")
    return "\n".join(rows)


def arms_table(claims: dict, exploratory: dict | None, source: str, exploratory_source: str) -> str:
    """Each claim's outcome on the exploratory arm's draws and on the confirmatory run's, side by side, and each
    claim where they differ with what the confirmatory record says would decide it: whether the two corpora and
    seed sets agree is itself a result, reported here and never resolved by editing the registration."""
    first = next(iter(claims.values()))
    data = claims_data(claims)
    text = data.get("llm_text", {})
    names = [name for name, claim in claims.items() if isinstance(claim, dict) and "statement" in claim]
    explored = {name: outcome(exploratory[name]) if exploratory and name in exploratory else "not run" for name in names}
    confirmed = {name: outcome(claims[name]) for name in names}
    lines = [f"_Confirmatory: `results/claims.json` of {source} (registration {first['registration']['hash']}, "
             f"{status(first['registration'], data)}; seeds {data.get('seed_rule', 'unknown')}; LLM text "
             f"{text.get('package', '?')} {text.get('version', '')}). Exploratory: {exploratory_source}._", "",
             "| arm | " + " | ".join(names) + " |", "|---|" + "---|" * len(names),
             "| exploratory | " + " | ".join(explored[name] for name in names) + " |",
             "| confirmatory | " + " | ".join(f"**{confirmed[name]}**" for name in names) + " |"]
    differ = [name for name in names if explored[name] not in ("not run", confirmed[name])]
    if differ:
        lines += ["", "They differ for " + "; ".join(
            f"{name} ({explored[name]} against {confirmed[name]}"
            + (f": {claims[name]['undecided']['would_decide']}" if "undecided" in claims[name] else "") + ")"
            for name in differ) + "."]
    elif exploratory:
        lines += ["", "Every outcome is the same on both arms."]
    return "\n".join(lines)


def record_table(root: Path) -> str:
    """The record of registrations that have been run (config/registrations.yaml), one row each."""
    rows = read_rows((root / RECORD_PATH).read_text()) if (root / RECORD_PATH).is_file() else []
    lines = ["_From `config/registrations.yaml` by `python -m behind_rope.claims.tables`._", "",
             "| registration | scale | arm | registered | data | run | outcomes |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        registered, run, data = row.get("registered", {}), row.get("run", {}), row.get("data", {})
        text = data.get("llm_text", {})
        outcomes = ", ".join(f"{name} {value}" for name, value in row.get("outcomes", {}).items())
        lines.append(f"| {row['registration']} | {row.get('scale')} | {row.get('arm')} | {registered.get('commit')}, "
                     f"{registered.get('date')} | seed {data.get('seed')}; LLM text {text.get('package')} "
                     f"{text.get('version')} | {run.get('commit')}, {run.get('date')}, {run.get('host')} | {outcomes} |")
    return "\n".join(lines if rows else lines[:1] + ["", "No registration has been recorded yet."])


def write_tables(claims: dict, source: str, run: Path | None = None, extended: dict | None = None,
                 root: Path = Path("."), exploratory: dict | None = None,
                 exploratory_source: str = "not run") -> None:
    """Every claims block of docs/results.md and the README, the criteria history and the record of
    registrations, in the checkout at ``root``; ``run`` is the run's folder.  The scale ladder comes from
    ``extended`` (the extended target's results/extended/claims.json) when given; ``exploratory`` is the
    exploratory arm's results/claims.json (config/exploratory.yaml), set beside this run's outcomes."""
    note = f"_From `results/claims.json` of {source}._\n\n"
    ladder_note = f"_From `results/extended/claims.json` (`snakemake extended`) of {source}._\n\n"
    unknown = sorted(name for name, claim in claims.items() if isinstance(claim, dict)
                     and claim.get("criterion_commit", "unknown") in ("unknown", "uncommitted"))
    if unknown:
        print(f"Warning: in this claims file the criterion commit of {', '.join(unknown)} reads 'unknown' or "
              "'uncommitted' (a run outside a git checkout, or with criteria not yet committed); the tables say so.",
              file=sys.stderr)
    results = root / RESULTS
    md.update("criteria_history", history_table(root), root / CRITERIA)
    md.update("registrations", record_table(root), root / CRITERIA)
    md.update("arms", arms_table(claims, exploratory, source, exploratory_source), results)
    md.update("c4", note + decide.c4_line(claims), results)
    md.update("twins", note + c3.results_table(claims, run), results)
    md.update("llm", note + c5.results_table(claims), results)
    md.update("ladder", ladder_note + ladder.results_table(extended) if extended else note + ladder.results_table(claims),
              results)
    md.update("decomposition", note + decomposition_table(claims), results)
    md.update("position", note + position.results_table(claims), results)
    md.update("revision", note + revision.results_table(claims), results)
    md.update("readme_claims", readme_table(claims, source, root, exploratory), root / README)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("claims", type=Path, help="a run's results/claims.json")
    parser.add_argument("--source", default="a default-scale run",
                        help="the run, as each table's note names it: its commit, its host")
    parser.add_argument("--extended", type=Path,
                        help="the run's results/extended/claims.json (snakemake extended), for the scale ladder")
    parser.add_argument("--exploratory", type=Path,
                        help="the exploratory arm's results/claims.json (config/exploratory.yaml), set beside this run's")
    parser.add_argument("--exploratory-source", default="the exploratory arm (config/exploratory.yaml)",
                        help="that run, as the side-by-side table names it")
    parser.add_argument("--root", type=Path, default=Path("."), help="the checkout whose pages to rewrite (default: here)")
    args = parser.parse_args()
    claims_file = args.claims.resolve()
    extended = json.loads(args.extended.read_text()) if args.extended else None
    exploratory = json.loads(args.exploratory.read_text()) if args.exploratory else None
    write_tables(json.loads(claims_file.read_text()), args.source, claims_file.parents[1], extended, args.root,
                 exploratory, args.exploratory_source if exploratory else "not run")
