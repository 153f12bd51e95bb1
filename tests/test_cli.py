"""The command line, `python -m behind_rope <step>`, around the steps themselves."""

import gc

import behind_rope.__main__ as command_line


def test_a_step_runs_with_the_collector_off_and_what_exists_is_frozen_at_the_end(monkeypatch):
    """Why: importing torch and transformers makes the collector walk some 350,000 objects again and again
    (docs/performance.md); tests/test_train.py and tests/test_extract.py show the loops make no cycles."""
    seen = []
    monkeypatch.setattr(command_line, "main", lambda argv: seen.append(gc.isenabled()))
    try:
        command_line.run_without_collector([])
        assert seen == [False]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_the_position_claims_read_only_the_score_files_their_rule_declares_each_once(tmp_path, monkeypatch):
    import numpy as np
    import pytest

    from behind_rope import atomic
    from behind_rope.cli.claims import ScoreFiles

    path = tmp_path / "scores" / "m" / "first_causal.npz"
    path.parent.mkdir(parents=True)
    np.savez(path, mean_scores=np.zeros((1, 2, 2)))
    reads = []
    read_npz = atomic.read_npz
    monkeypatch.setattr(atomic, "read_npz", lambda p: reads.append(p) or read_npz(p))
    files = ScoreFiles([str(path)])
    assert list(files) == ["m/first_causal"] and reads == []  # nothing is read until a claim asks
    assert files["m/first_causal"] is files["m/first_causal"] and reads == [path]
    with pytest.raises(KeyError, match="does not declare"):
        files["m/long_causal"]
