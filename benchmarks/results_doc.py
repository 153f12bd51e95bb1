"""The docs hold tables that scripts write, each between markers:

    <!-- name:start --> ... <!-- name:end -->

A script run with --update-docs replaces its own blocks and leaves the rest of the page alone.  Each
table lives on the page a reader looks for it on: the claims' numbers in docs/results.md, the criteria
history in docs/criteria.md, what the workflow costs in docs/performance.md, and the GPU and SLURM
checks in docs/cluster.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from behind_rope.claims.markdown import replace_block, update  # noqa: F401  (the benchmarks import them from here)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results.md"
CRITERIA = ROOT / "docs" / "criteria.md"
PERFORMANCE = ROOT / "docs" / "performance.md"
CLUSTER = ROOT / "docs" / "cluster.md"
README = ROOT / "README.md"


def add_result_options(parser, block: str, path: Path) -> None:
    """The options of a script run on another machine (a lent GPU): its result as JSON, and the docs table from it."""
    page = path.relative_to(ROOT)
    parser.add_argument("--output", help="write the results as JSON here")
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the {block} table of {page}")
    parser.add_argument("--from-json", help="only rewrite that table from an --output file of an earlier run")


def keep_result(result: dict, args, update_docs) -> str:
    """Write ``result`` to ``--output`` and the docs table (``update_docs(result)``) as the options ask; the JSON."""
    text = json.dumps(result, indent=1)
    if args.output:
        Path(args.output).write_text(text)
    if args.update_docs:
        update_docs(result)
    return text
