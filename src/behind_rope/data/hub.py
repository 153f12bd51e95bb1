"""A Hugging Face model pinned to a commit, downloaded once into a local folder (paper scale).

The rule that calls this runs on the submit host, where the other downloads run, because compute
nodes often cannot reach the hub; the score runs then read the folder from the shared file system.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from behind_rope.atomic import atomic_dir
from behind_rope.data.fetch import FetchError

# What a model folder needs: its config, weights in safetensors and tokenizer files at the top level;
# not, say, Llama's original/ checkpoint (16 GB of .pth) or other formats of the same weights.
HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
HUB_SKIPPED = ["*/*"]
OFFLINE_HINT = ", and HF_HUB_OFFLINE is set, as run.sh sets it: unset it, or set HF_HUB_OFFLINE=0"


def offline() -> bool:
    """Whether HF_HUB_OFFLINE keeps the hub out of reach (run.sh sets it for the default scale's runs)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def partial_folder(output: Path, revision: str) -> Path:
    """Where the download of ``revision`` goes until it is complete: kept when it fails, so that a rerun resumes
    it, and named by the revision, so that a part download of another pin is never taken for this one."""
    return output.with_name(f".{output.name}.{revision}.partial")


def missing_shards(folder: Path) -> list[str]:
    """The weight files that the folder's safetensors index names and the folder lacks."""
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return []
    return sorted({name for name in json.loads(index.read_text())["weight_map"].values() if not (folder / name).is_file()})


def download_hub_model(hub: str, revision: str, output: str | Path) -> list[str]:
    """Download the files of ``hub`` at the pinned commit ``revision`` into the folder ``output``; returns their names.

    Only a complete snapshot (a config, and every weight file its index names) is renamed to ``output``.
    """
    import httpx2
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    output = Path(output)
    partial = partial_folder(output, revision)
    try:
        snapshot_download(repo_id=hub, revision=revision, local_dir=partial, allow_patterns=HUB_FILES,
                          ignore_patterns=HUB_SKIPPED)
    except (RepositoryNotFoundError, RevisionNotFoundError) as error:
        raise FetchError(f"The hub has no {hub} at revision {revision} ({type(error).__name__}); check the pin, and "
                         "for a gated model accept its licence and log in (`hf auth login`, or HF_TOKEN).") from None
    except (OSError, httpx2.HTTPError) as error:  # the hub's own errors are OSErrors; a dropped connection is not
        said = (str(error).strip().splitlines() or [type(error).__name__])[0]
        resume = f" A rerun resumes from {partial}." if partial.is_dir() else ""
        raise FetchError(f"Downloading {hub} at {revision} failed ({said}); this step needs the hub (it runs on the "
                         f"submit host{OFFLINE_HINT if offline() else ''}), or set the model's `local:` to a downloaded "
                         f"folder.{resume}") from None
    shutil.rmtree(partial / ".cache", ignore_errors=True)  # the download's own bookkeeping
    names = sorted(str(path.relative_to(partial)) for path in partial.rglob("*") if path.is_file())
    if "config.json" not in names or not any(name.endswith(".safetensors") for name in names):
        raise FetchError(f"{hub} at {revision} has no config.json or no safetensors weights "
                         f"({', '.join(names) or 'no files'}); the workflow loads Hugging Face folders in safetensors.")
    # Offline, the hub library hands back whatever the folder holds, with a warning only.
    missing = missing_shards(partial)
    if missing:
        raise FetchError(f"The download of {hub} at {revision} in {partial} lacks {', '.join(missing)}, "
                         "which its index names; rerun with the hub in reach to complete it.")
    with atomic_dir(output) as folder:  # an older folder is set aside, not half deleted
        partial.replace(folder)  # onto the empty folder atomic_dir made
    return names
