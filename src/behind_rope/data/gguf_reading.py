"""Reading GGUF metadata fast, for transformers' own GGUF code (the config, the tokenizer, the weights).

gguf-py's ``GGUFReader`` slices its ``np.memmap`` once per array element, and every memmap slice
runs Python hooks: a million slices for a 262k-token vocabulary, 10-35 s a read on a 2-core CPU,
and transformers reads the file once for the config and again for the tokenizer.
``get_gguf_hf_weights_map`` rebuilds gguf's tensor-name table for every submodule (hundreds).
:func:`fast_gguf_reading` lets transformers' code run unchanged with a reader that gives the same
fields (:class:`FastGGUFReader`) and one name table per architecture and depth.
"""

from __future__ import annotations

import contextlib
import functools
import struct

import gguf
import numpy as np


class FastGGUFReader(gguf.GGUFReader):
    """gguf-py's reader, giving the same fields, with its metadata arrays cut up in bulk.

    The parent slices a ``np.memmap`` for every array element, and each memmap slice runs Python
    hooks. The parts here are the same bytes, same dtypes and shapes, viewed through a plain
    ndarray (checked against the parent in tests/test_dequantize.py).
    """

    def _get_field_parts(self, orig_offs, raw_type):
        if raw_type != gguf.GGUFValueType.ARRAY or self.byte_order != "I":
            return super()._get_field_parts(orig_offs, raw_type)
        buf = self.data.view(np.ndarray)
        item_type = buf[orig_offs:orig_offs + 4].view(np.uint32)
        length = buf[orig_offs + 4:orig_offs + 12].view(np.uint64)
        sub, count, offs = gguf.GGUFValueType(int(item_type[0])), int(length[0]), orig_offs + 12
        parts = [item_type, length]
        if sub == gguf.GGUFValueType.STRING:  # each string: a uint64 length, then its bytes
            unpack = struct.Struct("=Q").unpack_from
            for _ in range(count):
                (size,) = unpack(buf, offs)
                parts += (buf[offs:offs + 8].view(np.uint64), buf[offs + 8:offs + 8 + size])
                offs += 8 + size
            data = list(range(3, 3 + 2 * count, 2))
        elif (nptype := self.gguf_scalar_to_np.get(sub)) is not None:
            values = buf[offs:offs + count * np.dtype(nptype).itemsize].view(nptype)
            parts += (values[i:i + 1] for i in range(count))
            offs += values.nbytes
            data = list(range(2, 2 + count))
        else:  # arrays of arrays: rare and short, the parent's walk is fine
            return super()._get_field_parts(orig_offs, raw_type)
        return offs - orig_offs, parts, data, [gguf.GGUFValueType.ARRAY] + ([sub] if count else [])


@contextlib.contextmanager
def fast_gguf_reading():
    """Within this block, transformers' GGUF loaders read with :class:`FastGGUFReader` and build each
    tensor-name table once. They import both names from ``gguf`` when called, so the swap reaches them;
    the table is only read (``get_name``), so sharing it changes nothing."""
    saved = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader, gguf.get_tensor_name_map = FastGGUFReader, functools.lru_cache(maxsize=None)(saved[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved
