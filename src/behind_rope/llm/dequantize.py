"""A fast GGUF -> float32 Hugging Face folder, equal bit for bit to transformers' own GGUF path.

Where ``from_pretrained(gguf_file=...)`` spends its time on a 2-core CPU (SmolLM2 / Qwen2.5-Coder /
Gemma-3, 40-110 s each; benchmarks/dequantize.py):

- metadata: gguf-py's ``GGUFReader`` slices its ``np.memmap`` once per value, a million times
  for a 262k-token vocabulary (4 / 12 / 15-18 s), and transformers reads the file four times
  (the config twice, the tokenizer's config, the weights), parsing every vocabulary entry
  each time (another 0.5-3 s);
- ``get_gguf_hf_weights_map`` rebuilds gguf's tensor-name table for every submodule (~20 ms
  each, hundreds of submodules);
- ``gguf.dequantize``, on one core, 16 rows at a time: 1.3 / 11.6 / 4.1 s, the smaller part.

Here transformers' own code reads the config and the tensor names through
:func:`behind_rope.data.gguf_reading.fast_gguf_reading` (a subclass of the same reader that cuts its
arrays up in bulk, and one name table), the weights are read once by that reader, and they go
through gguf-py's own block kernels in large slices on a thread pool (numpy drops the GIL in
them; blocks are independent, so slicing them differently gives the same floats). The config,
the tokenizer, the tensor names, the per-architecture fixes (llama's q/k permutation, Gemma's
norm offset), the loading, tying and saving stay transformers' own code, called as it calls them.
"""

from __future__ import annotations

import functools
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import gguf
import gguf.quants
import numpy as np
import torch

from behind_rope.atomic import atomic_dir
from behind_rope.data.fetch import write_folder_digests
from behind_rope.data.gguf_reading import FastGGUFReader, fast_gguf_reading
from behind_rope.llm.architectures import ModelSourceError, check_architecture

# A tensor of decoder layer N is named blk.N.<what> in a GGUF file.
GGUF_LAYER = re.compile(r"^blk\.(\d+)\.")
# Values unpacked per thread-pool task: enough to amortise numpy's per-call overhead, small
# enough (512 KiB of float32) to stay in cache between the kernel's steps.
ELEMENTS_PER_TASK = 1 << 17


def dequantize_async(data: np.ndarray, qtype, pool: ThreadPoolExecutor) -> Callable[[], np.ndarray]:
    """Start unpacking one tensor on ``pool``; the returned call waits and gives what
    ``gguf.dequantize(data, qtype)`` gives, bit for bit."""
    kernel = getattr(gguf.quants, gguf.GGMLQuantizationType(qtype).name, None)
    if not hasattr(kernel, "dequantize_blocks"):  # F32 and F16 hold values, not blocks
        return functools.partial(gguf.dequantize, data, qtype)
    kernel.init_grid()  # the i-quants' lookup grid, built once; a no-op for the other types
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = np.asarray(data).reshape(-1, type_size)  # a plain view: memmap views cost per call
    out = np.empty((len(blocks), block_size), np.float32)
    step = max(1, ELEMENTS_PER_TASK // block_size)

    def unpack(start: int) -> None:
        out[start:start + step] = kernel.dequantize_blocks(blocks[start:start + step])

    tasks = [pool.submit(unpack, start) for start in range(0, len(blocks), step)]
    shape = gguf.quants.quant_shape_from_byte_shape(data.shape, qtype)

    def result() -> np.ndarray:
        for task in tasks:
            task.result()
        return out.reshape(shape)

    return result


def dequantize(data: np.ndarray, qtype, threads: int | None = None) -> np.ndarray:
    """``gguf.dequantize(data, qtype)``, bit for bit, on ``threads`` threads."""
    with ThreadPoolExecutor(threads or available_cpus()) as pool:
        return dequantize_async(data, qtype, pool)()


def available_cpus() -> int:
    """The CPUs this process may run on (a batch job's allocation, not the whole machine)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _owned(array: np.ndarray) -> np.ndarray:
    """A contiguous array torch may keep. transformers copies every tensor; only the read-only views of
    the file need it: each processed tensor comes from its own unpacked array, so none share memory."""
    return np.ascontiguousarray(array) if array.flags.writeable else np.copy(array)


def first_layers(config, layers: int | None):
    """``config`` cut to its first ``layers`` decoder layers (unchanged when None or when it has no more),
    recording the cut as ``dequantised_layers`` (it is saved in config.json with the model)."""
    total = config.num_hidden_layers
    if layers is None or layers >= total:
        return config
    if layers < 1:
        raise ValueError(f"layers must be at least 1, got {layers}")
    config.num_hidden_layers = layers
    if getattr(config, "layer_types", None):  # models that mix full and sliding-window layers
        config.layer_types = config.layer_types[:layers]
    config.dequantised_layers = {"first": layers, "of": total}
    return config


def gguf_state_dict(gguf_path: str | Path, skeleton, threads: int | None = None) -> dict[str, torch.Tensor]:
    """The GGUF's tensors as transformers' GGUF loader gives them, float32.

    Same names (transformers' map from the parameters of ``skeleton``, a model of the file's config),
    same per-architecture processing (its ``TensorProcessor``, given that config); only the reading
    (:class:`FastGGUFReader`) and the unpacking (in parallel) are ours.  The tensors of decoder layers
    that ``skeleton`` does not have (:func:`first_layers`) are never unpacked.
    """
    from transformers import modeling_gguf_pytorch_utils as legacy

    reader = FastGGUFReader(os.fspath(gguf_path))
    architecture = legacy.read_field(reader, "general.architecture")[0]
    config = skeleton.config.to_dict()
    processor = legacy.TENSOR_PROCESSORS.get(architecture, legacy.TensorProcessor)(config=config)
    names = legacy.get_gguf_hf_weights_map(skeleton, processor)

    tensors: dict[str, torch.Tensor] = {}
    parsed = {"config": config, "tensors": tensors}  # where the MoE processors file the experts they merge
    with ThreadPoolExecutor(threads or available_cpus()) as pool:
        try:
            # Queue every tensor first, so the pool keeps unpacking while this thread post-processes.
            layers = skeleton.config.num_hidden_layers
            wanted = [tensor for tensor in reader.tensors
                      if not (block := GGUF_LAYER.match(tensor.name)) or int(block.group(1)) < layers]
            pending = [(tensor.name, dequantize_async(tensor.data, tensor.tensor_type, pool)) for tensor in wanted]
            for name, weights in pending:
                result = processor.process(weights=weights(), name=name, tensor_key_mapping=names, parsed_parameters=parsed)
                if result.name in names:
                    tensors[names[result.name]] = torch.from_numpy(_owned(result.weights))
        except BaseException:
            pool.shutdown(cancel_futures=True)  # do not unpack the rest of the file first
            raise
    return tensors


def cache_gguf_model_fast(gguf_path: str | Path, output_dir: str | Path, threads: int | None = None,
                          with_tokenizer: bool = True, layers: int | None = None, digests: bool = False) -> dict:
    """Dequantise a GGUF model to float32 and save it, with its tokenizer, as a Hugging Face folder.

    With ``layers``, only the first ``layers`` decoder layers (and the embedding, final norm and LM
    head) are unpacked and saved: a model of that depth, for runs that read no deeper
    (:func:`first_layers`); its layers equal the full model's bit for bit.

    The same files, bit for bit, and the same summary as :func:`reference_cache_gguf_model`
    (transformers' own path): the config and the tokenizer come from transformers' GGUF readers, once
    each; the weights are read once by :class:`FastGGUFReader` and unpacked on ``threads`` threads
    (default: all CPUs available), then loaded and saved by transformers. Reading the tokenizer out of
    the file is as slow as reading the config: ``with_tokenizer=False`` leaves it to another process.
    With ``digests``, the folder records its files' digests, which every load of it checks
    (:func:`behind_rope.data.fetch.check_folder_digests`).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    with fast_gguf_reading():  # transformers' config, tokenizer and tensor-name code, with the fast reader
        config = first_layers(gguf_config(gguf_path), layers)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                  config=config) if with_tokenizer else None
        with torch.device("meta"):  # for the parameter names only: no memory, no random init
            skeleton = AutoModelForCausalLM.from_config(config)
        state_dict = gguf_state_dict(gguf_path, skeleton, threads)
    # transformers' own loading (tying, checks), from the state dict instead of the file; the
    # concrete class, as AutoModelForCausalLM would pick, since the Auto class wants a path.
    model = type(skeleton).from_pretrained(None, config=config, state_dict=state_dict, dtype=torch.float32)
    with atomic_dir(output_dir) as tmp:
        model.save_pretrained(str(tmp))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
        if digests:
            write_folder_digests(tmp)
    summary = {"architecture": config.model_type, "layers": config.num_hidden_layers}
    cut = getattr(config, "dequantised_layers", None)
    return summary | ({"layers_in_file": cut["of"]} if cut else {})


def cache_gguf_model(gguf_path: str | Path, output_dir: str | Path, threads: int | None = None,
                     layers: int | None = None) -> dict:
    """Dequantise a GGUF model to float32 and save it as a Hugging Face folder (its tokenizer is saved
    by its own step, :func:`behind_rope.data.fetch.save_tokenizer_from_gguf`, side by side with this one).

    The files are those of transformers' own GGUF path, bit for bit (tests/test_dequantize.py), read
    faster and unpacked on ``threads`` threads; with ``layers``, only the first ``layers`` decoder layers.
    The folder records its files' digests, checked by every load of it.
    """
    return cache_gguf_model_fast(gguf_path, output_dir, threads, with_tokenizer=False, layers=layers, digests=True)


def reference_cache_gguf_model(gguf_path: str | Path, output_dir: str | Path) -> dict:
    """transformers' own GGUF path: ``cache_gguf_model`` as it was before the fast path,
    kept as the reference that tests/test_dequantize.py and benchmarks/dequantize.py hold the fast path to."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    folder, name = str(gguf_path.parent), gguf_path.name
    config = gguf_config(gguf_path)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # The weights are dequantised now: drop the GGUF quantizer, which refuses to serialise.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    with atomic_dir(output_dir) as tmp:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
    return {"architecture": config.model_type, "layers": config.num_hidden_layers}


def gguf_config(gguf_path: Path):
    """The model config a GGUF file describes (transformers' reader), of an architecture the capture is tested on."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    except (ValueError, KeyError) as error:
        raise ModelSourceError(f"transformers cannot read the GGUF file {gguf_path} ({error}); "
                               "check that its architecture is one transformers loads from GGUF.") from None
    check_architecture(config, gguf_path.parent.name)
    return config
