import numpy as np
import pytest

from behind_rope.claims.panels import PANELS, panel_statistics

S = 20


def lower(matrix):
    return np.where(np.tril(np.ones((S, S), dtype=bool)), matrix, np.nan)


def theory_like(rise=1.0, diagonal=1.0):
    """Scores that rise towards the diagonal, as the paper's panel (f) does (``rise`` < 0 inverts them)."""
    rows, cols = np.indices((S, S))
    return lower(0.3 + rise * 0.01 * cols + np.where(rows == cols, diagonal, 0.0))


def paper_panels():
    """Nine panels that do what Section 4.2 says of each."""
    rows, cols = np.indices((S, S))
    a = lower(np.eye(S) + 0.01)
    b = lower(np.eye(S) + 0.5 + 2.0 * (cols == 0) + 0.01 * np.random.default_rng(1).random((S, S)))
    c = lower(np.diag(1.0 / (1 + np.arange(S))) + 0.2)
    d = lower(np.diag(2.0 / (1 + np.arange(S))) + 0.1 + 0.001 * rows)
    return {"a": a, "b": b, "c": c, "d": d, "e": d + 0.01 * lower(np.ones((S, S))), "f": theory_like(),
            "g": theory_like(rise=-1), "h": theory_like(), "i": theory_like()}


def test_every_statement_holds_on_panels_built_to_satisfy_it():
    stats = panel_statistics(paper_panels())
    assert set(stats) == set(PANELS)
    assert stats["a"]["offdiag_over_diag"] < 0.1
    assert stats["b"]["offdiag_over_diag_rise_from_a"] > 0.2 and stats["b"]["sink_column_z"] > 2
    assert stats["c"]["diagonal_trend_correlation"] < -0.5 and stats["c"]["offdiag_spread_over_diag_spread"] < 0.5
    assert stats["d"]["offdiag_over_diag_fall_from_c"] > 0.05
    assert stats["e"]["correlation_with_d"] > 0.99
    assert stats["f"]["locality"] == stats["h"]["locality"] == stats["i"]["locality"] == 1.0
    assert stats["g"]["locality"] == 0.0


def test_the_statistics_move_when_the_panels_break_the_statements():
    panels = paper_panels()
    rows, cols = np.indices((S, S))
    noise = np.random.default_rng(0).random((S, S))
    broken = {**panels, "a": lower(np.eye(S) + 0.5), "b": lower(np.eye(S) + 0.01 + 0.001 * noise),
              "c": lower(np.eye(S) + 0.2 + 0.05 * rows * cols), "e": lower(noise), "g": theory_like()}
    stats = panel_statistics(broken)
    assert stats["a"]["offdiag_over_diag"] == pytest.approx(0.5 / 1.5, rel=1e-9)
    assert stats["b"]["offdiag_over_diag_rise_from_a"] < 0 and stats["b"]["sink_column_z"] < 2
    assert stats["c"]["diagonal_trend_correlation"] > 0 and stats["c"]["offdiag_spread_over_diag_spread"] > 0.5
    assert stats["e"]["correlation_with_d"] < 0.9
    assert stats["g"]["locality"] == 1.0
