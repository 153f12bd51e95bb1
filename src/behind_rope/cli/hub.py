"""The step of workflow/rules/data.smk that downloads a pinned hub model (paper scale)."""

from __future__ import annotations

from behind_rope.cli.common import OUTPUT, SETTINGS, step


@step("fetch-model", "download a Hugging Face model at its pinned commit into a local folder (on the submit host)",
      SETTINGS, OUTPUT)
def fetch_model(args) -> None:
    from behind_rope.data.hub import download_hub_model

    s = args.settings
    names = download_hub_model(s["hub"], s["revision"], args.output)
    print(f"{s['hub']} at {s['revision']}: {len(names)} files -> {args.output}")
