"""Reproduction library for "Behind RoPE: How Does Causal Mask Encode Positional Information?"."""

__version__ = "0.1.0"
