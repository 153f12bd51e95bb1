"""``python -m behind_rope <step>``: the command line the Snakemake rules call (steps in behind_rope/cli/)."""

from __future__ import annotations

import sys

from behind_rope.cli import claims, data, paper, position, scores, simulation, theory, training  # noqa: F401
from behind_rope.cli.common import build_parser


def main(argv=None) -> None:
    args = build_parser(__doc__).parse_args(argv)
    from behind_rope.data.fetch import FetchError
    from behind_rope.paper.latex import LatexMissing

    try:
        args.run(args)
    except (FetchError, FileNotFoundError, LatexMissing) as error:
        raise SystemExit(f"Error: {error}") from None


if __name__ == "__main__":
    sys.exit(main())
