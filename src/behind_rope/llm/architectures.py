"""Which model architectures the score capture supports, and the error a model source raises.

Kept apart from loading.py so that dequantisation, which checks the architecture of a GGUF file,
does not import (and is not rerun by edits of) the loading code.
"""

from __future__ import annotations

from behind_rope.data.fetch import FetchError

# Architectures whose attention the score capture is tested on (tests/test_extract.py).
SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "qwen3", "phi3", "gemma3_text")


class ModelSourceError(FetchError):
    """A model cannot be loaded from its configured source, or its architecture is not supported."""


def check_architecture(config, name: str) -> None:
    if config.model_type not in SUPPORTED_ARCHITECTURES:
        raise ModelSourceError(
            f"Model {name!r} has architecture {config.model_type!r}, which the score capture is not tested on "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)}); add a test for it in tests/test_extract.py "
            "and list it in behind_rope.llm.architectures.SUPPORTED_ARCHITECTURES.")
