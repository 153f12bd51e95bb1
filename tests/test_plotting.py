"""The guard in figures.plotting.save against data drawn outside its panel."""

import numpy as np
import pytest

from behind_rope.figures.plotting import plt, points_outside_panels, save


def test_a_point_beyond_the_panels_limits_is_named_and_the_figure_is_not_written(tmp_path):
    fig, (left, right) = plt.subplots(1, 2)
    left.plot([1, 2, 3], [0.5, 1.0, 1.5], label="inside")
    right.plot([1, 2, 3], [0.5, 57.0, 1.5], "o", label="heads")
    right.set_title("Qwen")
    right.set_ylim(0, 50)  # limits that stop short of the data, as a tick-rounded range once did
    problems = points_outside_panels(fig)
    assert len(problems) == 1 and "panel 2 ('Qwen')" in problems[0] and "'heads': 1 of 3 points outside" in problems[0]
    with pytest.raises(ValueError, match="would hide data drawn outside its panels"):
        save(fig, [str(tmp_path / "figure.png")])
    assert not (tmp_path / "figure.png").exists()


def test_autoscaled_panels_on_linear_log_and_symlog_axes_pass_and_are_written(tmp_path):
    fig, axes = plt.subplots(1, 3)
    for ax, scale in zip(axes, ("linear", "log", "symlog"), strict=True):
        ax.errorbar([1, 2, 3], [0.2, 5.0, 60.0], yerr=[0.1, 1.0, 10.0], fmt="o")
        ax.scatter([1, 3], [0.3, 40.0])
        ax.set_yscale(scale)
        ax.autoscale_view()
    assert points_outside_panels(fig) == []
    save(fig, [str(tmp_path / "figure.png")])
    assert (tmp_path / "figure.png").stat().st_size > 0


def test_what_is_meant_to_reach_beyond_the_panel_is_not_counted():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1.0, 2.0])
    ax.set_ylim(0.5, 2.5)
    ax.plot([1], [0.5 - 1.0], "v", clip_on=False)  # drawn on purpose below the edge
    ax.axhline(10.0)  # a reference line: its x is in axes coordinates
    ax.errorbar([1.5], [2.0], yerr=[5.0], fmt="o")  # its caps lie beyond the panel, its point inside
    ax.text(1.5, 100.0, "note")
    assert points_outside_panels(fig) == []
    plt.close(fig)


def test_a_value_a_log_axis_cannot_draw_is_outside_and_nan_is_not_data():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3, 4], [0.1, 1.0, 0.0, np.nan], "o")
    ax.set_yscale("log")
    ax.set_ylim(0.01, 10)
    problems = points_outside_panels(fig)
    assert len(problems) == 1 and "1 of 3 points" in problems[0] and "(3, 0)" in problems[0]
    plt.close(fig)


def test_a_marker_on_the_edge_of_a_symlog_panel_with_the_linear_scales_limits_is_caught():
    """figS_log_z_growth before 04c77d7: limits from the linear scale left a head of slope 57 on the top edge."""
    def panel(rescale: bool):
        fig, ax = plt.subplots(figsize=(3.6, 3.3))
        ax.errorbar([1.9, 2.0, 2.1], [-6.2, 0.3, 57.0], yerr=[0.1] * 3, fmt="o", markersize=3, lw=0)
        ax.axhline(0)  # settles the limits on the linear scale, which the change of scale then keeps
        ax.set_yscale("symlog", linthresh=1, linscale=2)
        if rescale:
            ax.autoscale_view()
        fig.tight_layout()
        problems = points_outside_panels(fig)
        plt.close(fig)
        return problems

    problems = panel(rescale=False)
    assert len(problems) == 1 and "curve 1: 1 of 3 points" in problems[0]
    assert panel(rescale=True) == []


def test_heatmap_grids_name_each_panels_quantity_and_number_positions_from_their_first():
    from behind_rope.figures.plotting import NORMALISED, RAW, layer_grid, panel_grid

    scores = np.arange(2 * 4 * 4, dtype=float).reshape(2, 4, 4)
    fig = layer_grid([("raw", scores, (0.0, 1.0)), ("normalised", scores, (0.0, 1.0), NORMALISED)])
    bars = [ax for ax in fig.axes if ax.get_ylabel() in (RAW, NORMALISED)]  # the colour bars' axes
    assert [ax.get_ylabel() for ax in bars] == [RAW, RAW, NORMALISED, NORMALISED]
    assert fig.axes[0].get_images()[0].get_extent() == [0.5, 4.5, 4.5, 0.5]  # positions 1 .. 4
    plt.close(fig)
    # An LLM's panels count from key 0, whatever block means reduce the drawn matrix to.
    fig = panel_grid([("a layer", np.ones((8, 8)), (0.0, 1.0), NORMALISED)], columns=1, max_pixels=4, first=0)
    assert fig.axes[0].get_images()[0].get_extent() == [-0.5, 7.5, 7.5, -0.5]
    plt.close(fig)
