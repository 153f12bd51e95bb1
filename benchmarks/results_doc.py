"""docs/results.md holds the tables the pipeline and the benchmarks write; each sits between markers.

    <!-- name:start --> ... <!-- name:end -->

A benchmark run with --update-docs replaces its own blocks and leaves the rest of the page alone.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def replace_block(text: str, name: str, body: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{RESULTS} has no block {start} ... {end}")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return head + start + "\n" + body.strip("\n") + "\n" + end + tail


def update(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace the block ``name`` of docs/results.md with ``body``."""
    path.write_text(replace_block(path.read_text(), name, body))
