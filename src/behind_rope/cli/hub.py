"""The steps of the hub sources (paper scale): a model or dataset files at a commit, downloaded into a local folder
(workflow/rules/data.smk, on the submit host)."""

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
