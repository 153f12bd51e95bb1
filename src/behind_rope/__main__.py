"""``python -m behind_rope <step>``: the command line the Snakemake rules call (steps in behind_rope/cli/)."""

from __future__ import annotations

import gc
import sys


def main(argv=None) -> None:
    from behind_rope.cli import (  # noqa: F401
        claims,
        data,
        gate,
        hub,
        paper,
        position,
        revision,
        scores,
        simulation,
        theory,
        training,
    )
    from behind_rope.cli.common import build_parser

    args = build_parser(__doc__).parse_args(argv)
    from behind_rope.data.fetch import FetchError
    from behind_rope.paper.latex import LatexFailed, LatexMissing

    try:
        args.run(args)
    except (FetchError, FileNotFoundError, LatexMissing, LatexFailed) as error:
        raise SystemExit(f"Error: {error}") from None


def run_without_collector(argv=None) -> None:
    """:func:`main` as the command line runs it: with Python's cyclic garbage collector off.

    Importing torch and transformers makes some 350,000 objects that the cyclic collector tracks; it
    would walk them again and again while they load, and once more at exit: about a third of the CPU
    time a step that loads a model spends before its first token (docs/performance.md).  The
    steps' loops make no cyclic garbage (tests/test_train.py and tests/test_extract.py check the
    training loop and the score capture), so nothing piles up; memory is still freed as soon as
    nothing refers to it.  What exists at the end is frozen, so that the exit does not walk it either.
    """
    gc.disable()
    try:
        main(argv)
    finally:
        gc.freeze()


if __name__ == "__main__":
    # During a local run, a fork of the run's warm-start server takes the step (behind_rope.pipeline.warm_start).
    from behind_rope.pipeline.warm_start import delegate

    status = delegate(sys.argv[1:])
    sys.exit(run_without_collector() if status is None else status)
