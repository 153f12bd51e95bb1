"""Atomic writers: an output is either the old one or the whole new one, and nothing is left beside it."""

import pytest

from behind_rope import atomic


class Interrupted(Exception):
    pass


def test_a_folder_is_replaced_whole_or_not_at_all(tmp_path):
    folder = tmp_path / "checkpoint"
    with atomic.atomic_dir(folder) as tmp:
        (tmp / "state.json").write_text("old")
    with pytest.raises(Interrupted), atomic.atomic_dir(folder) as tmp:
        (tmp / "state.json").write_text("half")
        raise Interrupted
    assert (folder / "state.json").read_text() == "old"
    with atomic.atomic_dir(folder) as tmp:
        (tmp / "state.json").write_text("new")
    assert (folder / "state.json").read_text() == "new"
    assert [path.name for path in tmp_path.iterdir()] == ["checkpoint"]  # no temporary or old folder left


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path):
    path = tmp_path / "claims.json"
    atomic.write_json(path, {"passed": True})
    with pytest.raises(Interrupted), atomic.atomic_path(path) as tmp:
        tmp.write_text('{"passed": fa')
        raise Interrupted
    assert atomic.read_json(path) == {"passed": True}
    atomic.write_json(path, {"passed": False})
    assert atomic.read_json(path) == {"passed": False}
    assert [p.name for p in tmp_path.iterdir()] == ["claims.json"]


def test_the_same_arrays_make_the_same_npz_whenever_they_are_written(tmp_path, monkeypatch):
    import time

    import numpy as np

    from behind_rope.atomic import read_npz, write_npz

    arrays = {"mean_scores": np.arange(12.0).reshape(3, 4), "metadata": np.array('{"model": "m"}'),
              "deviations": np.ones((2, 3), dtype=np.float16)}
    write_npz(tmp_path / "first.npz", **arrays)
    later = time.time() + 86_400  # a day later: a zip member written with the clock would carry another time
    monkeypatch.setattr(time, "time", lambda: later)
    write_npz(tmp_path / "second.npz", **arrays)
    assert (tmp_path / "first.npz").read_bytes() == (tmp_path / "second.npz").read_bytes()
    read = read_npz(tmp_path / "second.npz")
    assert read.keys() == arrays.keys() and all(np.array_equal(read[k], v) for k, v in arrays.items())
