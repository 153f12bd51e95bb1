"""The steps of the hub sources (paper scale): a model or dataset files at a commit, downloaded into a local folder
(workflow/rules/data.smk, on the submit host), and a NoPE checkpoint read as a twin with its token sets
(workflow/rules/training.smk and scores.smk)."""

from __future__ import annotations

from behind_rope.cli.common import OUTPUT, SETTINGS, arg, step

RECORD = arg("--record", required=True, help="where to write the commit and the files downloaded (JSON)")


def _report(kind: str, repo: str, pinned: str | None, revision: str, count: int, output: str) -> None:
    print(f"{kind} {repo} at {revision}: {count} files -> {output}")
    if pinned is None:  # said in the log, and kept in the record the later steps read
        print(f"The config pins no revision for {repo}; this run fetched the main branch's commit {revision}: "
              f"pin it with `revision: {revision}` to fetch the same files again.")


@step("fetch-model", "download a Hugging Face model at its pinned commit into a local folder (on the submit host)",
      SETTINGS, OUTPUT, RECORD)
def fetch_model(args) -> None:
    from behind_rope.data.hub import download_hub_model, resolve_revision, write_record

    s = args.settings
    revision = resolve_revision(s["hub"], s.get("revision"))
    names = download_hub_model(s["hub"], revision, args.output)
    write_record(args.record, s["hub"], "model", s.get("revision"), revision, args.output, names)
    _report("Model", s["hub"], s.get("revision"), revision, len(names), args.output)


@step("fetch-dataset", "download some files of a Hugging Face dataset at a commit into a local folder (on the submit host)",
      SETTINGS, OUTPUT, RECORD)
def fetch_dataset(args) -> None:
    from behind_rope.data.hub import download_hub_dataset, resolve_revision, write_record

    s = args.settings
    revision = resolve_revision(s["repo"], s.get("revision"), repo_type="dataset")
    names = download_hub_dataset(s["repo"], revision, s["files"], args.output)
    write_record(args.record, s["repo"], "dataset", s.get("revision"), revision, args.output, names)
    _report("Dataset", s["repo"], s.get("revision"), revision, len(names), args.output)


@step("checkpoint-twin", "read a Llama checkpoint trained without RoPE as a NoPE twin (its config and weights)",
      arg("--model", required=True, help="the checkpoint's Hugging Face folder"),
      arg("--record", help="the fetch's record of the checkpoint (commit and files), if it came from the hub"),
      arg("--output-dir", required=True))
def checkpoint_twin(args) -> None:
    from behind_rope import atomic
    from behind_rope.twins.checkpoint import convert_checkpoint

    record = atomic.read_json(args.record) if args.record else None
    provenance = convert_checkpoint(args.model, args.output_dir, record)
    commit = f" at {record['revision']}" if record else ""
    print(f"{args.model}{commit}: {provenance['tensors']} tensors, {provenance['parameters']:,} parameters, read as a "
          f"NoPE twin -> {args.output_dir}")


@step("checkpoint-inputs", "a NoPE checkpoint's token sets: held-out documents of a dataset sample, and i.i.d. tokens",
      SETTINGS, arg("--corpus", required=True), arg("--model", required=True), arg("--output-dir", required=True))
def checkpoint_inputs(args) -> None:
    import json
    from pathlib import Path

    from behind_rope.twins.checkpoint import checkpoint_input_sets, write_checkpoint_inputs

    vocab_size = json.loads((Path(args.model) / "config.json").read_text())["vocab_size"]
    sets, stats = checkpoint_input_sets(args.corpus, tokenizer_dir=args.model, vocab_size=vocab_size, **args.settings)
    write_checkpoint_inputs(args.output_dir, sets, stats)
    for name, tokens in sets.items():
        print(f"{name}: {tokens.shape[0]} sequences of {tokens.shape[1]} tokens")
    print(f"from {stats['documents_read']} documents of {', '.join(stats['files'])} ({stats['long_enough']} long enough)")
