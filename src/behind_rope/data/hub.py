"""Hugging Face models and dataset files pinned to a commit, downloaded once into a local folder (paper scale).

The rules that call this run on the submit host, where the other downloads run, because compute
nodes often cannot reach the hub; the later steps then read the folder from the shared file system.
A config may leave a revision out: the first download then resolves the branch's current commit, fetches
that commit, and records it beside the folder (:func:`write_record`), so that every later step reads
one commit and the log says which to pin.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from behind_rope import atomic
from behind_rope.atomic import atomic_dir
from behind_rope.data.fetch import FetchError, sha256_of

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


def resolve_revision(repo: str, revision: str | None, repo_type: str = "model") -> str:
    """The commit to download: ``revision`` when the config pins one, else the commit the hub's main branch is at now."""
    if revision is not None:
        return revision
    import httpx2
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        return HfApi().repo_info(repo, repo_type=repo_type).sha
    except RepositoryNotFoundError:
        raise FetchError(f"The hub has no {repo_type} {repo}; check its name in the config.") from None
    except (OSError, httpx2.HTTPError) as error:
        said = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise FetchError(f"Cannot resolve the current commit of {repo} ({said}); the config pins no revision, so this "
                         f"step needs the hub{OFFLINE_HINT if offline() else ''}, or pin one with `revision:`.") from None


def _snapshot(repo: str, revision: str, output: Path, repo_type: str, patterns: list[str],
              skipped: list[str] | None) -> tuple[Path, list[str]]:
    """Download ``patterns`` of ``repo`` at ``revision`` into the partial folder of ``output``; returns it and the
    names of the files it holds."""
    import httpx2
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    partial = partial_folder(output, revision)
    # A model is the library's default kind of repository: it is not named, as before datasets were fetched too.
    kind = {} if repo_type == "model" else {"repo_type": repo_type}
    try:
        snapshot_download(repo_id=repo, revision=revision, local_dir=partial, allow_patterns=patterns,
                          ignore_patterns=skipped, **kind)
    except (RepositoryNotFoundError, RevisionNotFoundError) as error:
        raise FetchError(f"The hub has no {repo} at revision {revision} ({type(error).__name__}); check the pin, and "
                         "for a gated model accept its licence and log in (`hf auth login`, or HF_TOKEN).") from None
    except (OSError, httpx2.HTTPError) as error:  # the hub's own errors are OSErrors; a dropped connection is not
        said = (str(error).strip().splitlines() or [type(error).__name__])[0]
        resume = f" A rerun resumes from {partial}." if partial.is_dir() else ""
        raise FetchError(f"Downloading {repo} at {revision} failed ({said}); this step needs the hub (it runs on the "
                         f"submit host{OFFLINE_HINT if offline() else ''}), or set the model's `local:` to a downloaded "
                         f"folder.{resume}") from None
    shutil.rmtree(partial / ".cache", ignore_errors=True)  # the download's own bookkeeping
    return partial, sorted(str(path.relative_to(partial)) for path in partial.rglob("*") if path.is_file())


def download_hub_model(hub: str, revision: str, output: str | Path) -> list[str]:
    """Download the files of ``hub`` at the pinned commit ``revision`` into the folder ``output``; returns their names.

    Only a complete snapshot (a config, and every weight file its index names) is renamed to ``output``.
    """
    output = Path(output)
    partial, names = _snapshot(hub, revision, output, "model", HUB_FILES, HUB_SKIPPED)
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


def download_hub_dataset(repo: str, revision: str, files: list[str], output: str | Path) -> list[str]:
    """Download the named ``files`` of the dataset ``repo`` at commit ``revision`` into the folder ``output``.

    A sample of a large dataset is a few of its files (say, one shard of FineWeb-Edu's sample/10BT), named
    one by one: a pattern could take in more files at a later commit.  Only a download holding every one
    is renamed to ``output``.
    """
    output = Path(output)
    partial, names = _snapshot(repo, revision, output, "dataset", list(files), None)
    missing = sorted(set(files) - set(names))
    if missing:
        raise FetchError(f"The dataset {repo} at {revision} has no {', '.join(missing)}; check `files:` in the config "
                         "against the dataset's file list at that commit.")
    with atomic_dir(output) as folder:
        partial.replace(folder)
    return sorted(files)


def write_record(path: str | Path, repo: str, repo_type: str, pinned: str | None, revision: str, folder: str | Path,
                 names: list[str]) -> dict:
    """Write what was downloaded beside the folder: the repository, the commit (and whether the config pinned it),
    and each file's name, size and sha256."""
    folder = Path(folder)
    record = {"repo": repo, "repo_type": repo_type, "revision": revision, "pinned_in_config": pinned is not None,
              "files": [{"name": name, "bytes": (folder / name).stat().st_size, "sha256": sha256_of(folder / name)}
                        for name in names]}
    atomic.write_json(path, record)
    return record


def read_parquet_texts(folder: str | Path, files: list[str], limit: int, column: str = "text") -> dict[str, str]:
    """The first ``limit`` non-empty documents of the parquet ``files`` (in their order) in ``folder``, each named
    ``<file>:<row>``.  Only ``column`` is read, a batch at a time, so a shard of gigabytes is never held whole."""
    try:
        import pyarrow
        import pyarrow.parquet as parquet
    except ImportError:
        raise FetchError("Reading a parquet dataset needs pyarrow, which envs/requirements.txt pins; "
                         "reinstall the environment (envs/setup.sh).") from None
    texts = {}
    for name in files:
        path = Path(folder) / name
        if not path.is_file():
            raise FetchError(f"{path} is missing; rerun the dataset's fetch rule.")
        try:
            table = parquet.ParquetFile(path)
            if column not in table.schema_arrow.names:
                raise FetchError(f"{path} has no column {column!r} (it has {', '.join(table.schema_arrow.names)}).")
            row = 0
            for batch in table.iter_batches(batch_size=4096, columns=[column]):
                for text in batch.column(0).to_pylist():
                    if text and text.strip():
                        texts[f"{name}:{row}"] = text
                        if len(texts) == limit:
                            return texts
                    row += 1
        except (OSError, pyarrow.ArrowException) as error:
            raise FetchError(f"{path} is not a readable parquet file ({error}); delete it and rerun.") from None
    return texts
