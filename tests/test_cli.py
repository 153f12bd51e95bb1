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
