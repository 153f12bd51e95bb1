"""Atomic writers: a crash never leaves a half-written output that looks complete."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to ``path``; move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; outputs get the usual permissions
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary folder next to ``path``; it replaces ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    os.chmod(tmp, 0o777 & ~_UMASK)
    try:
        yield tmp
        if path.exists():  # moved aside, not deleted first: a kill while a big folder is deleted leaves the old one
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.old."))
            path.rename(old / path.name)
            tmp.rename(path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _finite_or_null(value):
    """Strict JSON has no NaN: masked matrix entries become null."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(item) for item in value]
    return value


def write_json(path, data) -> None:
    write_text(path, json.dumps(_finite_or_null(data), indent=2, allow_nan=False) + "\n")


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_bytes(path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def read_json(path):
    return json.loads(Path(path).read_text())


# The time every member of a written .npz carries: numpy's own writer stamps the clock, so that two writes of
# the same arrays would differ in their bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def write_npz(path, **arrays) -> None:
    """Arrays to ``path`` as ``np.savez`` writes them (uncompressed), but byte for byte the same whenever the
    arrays are: every member carries :data:`ZIP_TIME`."""
    import zipfile

    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_TIME)
            member.external_attr = 0o600 << 16  # as numpy writes it
            with archive.open(member, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.asanyarray(array), allow_pickle=False)


def write_npy(path, array) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.save(handle, array)


def npz_metadata(arrays) -> dict:
    """The metadata a score file carries as JSON text in its ``metadata`` entry (its run, its token set, its layers)."""
    import json

    return json.loads(str(arrays["metadata"]))


def read_npz(path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {key: data[key] for key in data.files}
