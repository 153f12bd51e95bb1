"""What every CLI step shares: the ``@step`` registry and the common arguments."""

from __future__ import annotations

import argparse
import json

STEPS: dict[str, tuple] = {}


def step(name: str, help: str, *arguments):
    """Register the decorated function as ``python -m behind_rope <name>`` with these arguments."""
    def register(handler):
        STEPS[name] = (handler, help, arguments)
        return handler

    return register


def arg(*flags, **options):
    return flags, options


def _json(text: str):
    """JSON, or ``@path``: JSON read from that file (settings too long for a command line)."""
    if text.startswith("@"):
        try:
            with open(text[1:]) as file:
                text = file.read()
        except OSError as error:
            raise argparse.ArgumentTypeError(f"cannot read {text[1:]} ({error.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON ({error})") from None


SETTINGS = arg("--settings", type=_json, required=True,
               help="JSON, or @file: the step's settings (the rule builds them from the config)")
OUTPUT = arg("--output", required=True)
THREADS = arg("--threads", type=int, default=1, help="CPU threads for torch")


def build_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m behind_rope", description=description)
    steps = parser.add_subparsers(dest="step", required=True)
    for name, (handler, help_text, arguments) in STEPS.items():
        sub = steps.add_parser(name, help=help_text, description=help_text)
        for flags, options in arguments:
            sub.add_argument(*flags, **options)
        sub.set_defaults(run=handler)
    return parser
