"""Shared drawing code for the figure scripts: score heatmaps in the paper's style."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import seaborn as sns  # noqa: E402

from behind_rope.atomic import atomic_path, npz_metadata, read_npz  # noqa: E402
from behind_rope.maths.blocks import DRAWN_GRID, block_mean  # noqa: E402

CMAP = sns.color_palette("rocket", as_cmap=True).with_extremes(bad="white")  # masked (NaN) entries stay blank
RAW = "mean pre-softmax score"
NORMALISED = "score minus its diagonal's mean"  # maths.metrics.diagonal_normalise: the non-relative part


def heatmap(ax, scores: np.ndarray, vmin: float, vmax: float, title: str = "", cmap=CMAP, colorbar=True,
            seq_len: int | None = None, label: str = RAW, first: int = 1):
    """One score matrix, queries on rows and keys on columns, the first position numbered ``first`` (1, as
    the paper's simulations count; 0 for an LLM, whose key 0 is BOS or the first token); ``label`` names the
    colour bar's quantity.

    ``seq_len`` labels the axes when ``scores`` is a block-mean reduction of a longer sequence.
    """
    seq_len = seq_len or scores.shape[-1]
    low, high = first - 0.5, seq_len + first - 0.5
    image = ax.imshow(scores, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", extent=(low, high, high, low))
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("Key position", fontsize=8)
    ax.set_ylabel("Query position", fontsize=8)
    ax.tick_params(labelsize=7)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        bar.ax.tick_params(labelsize=7)
        bar.set_label(label, fontsize=7)
        # Vector, not Matplotlib's rasterised default: in a PDF each rasterised colorbar costs a bitmap
        # the size of the whole figure, seconds per file in the appendix's grids of 60 panels.
        bar.solids.set_rasterized(False)
        bar.solids.set_edgecolor("face")  # no hairline seams between the colour steps
    return image


def quantile_limits(matrices, low: float = 0.01, high: float = 0.99) -> tuple[float, float]:
    """Colour limits at the 1% and 99% quantiles of the finite values."""
    values = np.concatenate([np.asarray(m)[np.isfinite(m)] for m in matrices])
    return float(np.quantile(values, low)), float(np.quantile(values, high))


def layer_grid(rows: list[tuple], layer_label=lambda k: f"Layer {k + 1}"):
    """A grid with one row per (label, (layers, S, S) scores, colour limits[, colour bar's quantity]) and one
    column per layer.

    The limits are one (vmin, vmax) for the whole row, or a list with one per layer; the quantity is
    :data:`RAW` unless the row names another (:data:`NORMALISED`).
    """
    n_layers = max(row[1].shape[0] for row in rows)
    fig, axes = plt.subplots(len(rows), n_layers, figsize=(3.0 * n_layers, 2.8 * len(rows)), squeeze=False)
    for r, (label, scores, limits, *quantity) in enumerate(rows):
        for k in range(n_layers):
            vmin, vmax = limits[k] if isinstance(limits, list) else limits
            heatmap(axes[r, k], scores[k], vmin, vmax, f"{label}\n{layer_label(k)}", label=quantity[0] if quantity else RAW)
    fig.tight_layout()
    return fig


def panel_grid(panels: list[tuple], columns: int, max_pixels: int = DRAWN_GRID, first: int = 1):
    """Panels (title, S x S matrix, (vmin, vmax)[, colour bar's quantity, :data:`RAW` unless named]) wrapped
    into rows of ``columns``; ``first`` numbers the first position (:func:`heatmap`)."""
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.0 * columns, 2.8 * rows), squeeze=False)
    for ax, (title, matrix, (vmin, vmax), *quantity) in zip(axes.flat, panels, strict=False):  # the last row may have spare axes
        heatmap(ax, block_mean(matrix, max_pixels), vmin, vmax, title, seq_len=matrix.shape[-1],
                label=quantity[0] if quantity else RAW, first=first)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def layer_title(layer: int, layer_type: str) -> str:
    """``Layer 3`` or ``Layer 3 (sliding window)``: sliding-window layers are marked."""
    return f"Layer {layer}" + (" (sliding window)" if layer_type == "sliding_attention" else "")


def below_diagonal(matrix: np.ndarray) -> np.ndarray:
    """The strict lower triangle: colour limits taken there let the large self-scores saturate."""
    return matrix[np.tri(matrix.shape[-1], k=-1, dtype=bool)]


def style_panel(ax, title: str, xlabel: str, ylabel: str = "", legend: bool = True) -> None:
    """A panel's title, axis labels and legend, in the sizes every figure uses."""
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    if legend:
        ax.legend(fontsize=6)


def layer_axis(ax, layers, axis: str = "x", most: int = 12) -> None:
    """Integer ticks at the layers drawn (every k-th when there are more than ``most``), the axis spanning them
    by half a layer on each side whatever the data (what is drawn at a layer stays within 0.5 of it).

    Matplotlib's ``MaxNLocator(integer=True)`` falls back to fractional ticks when fewer than two integers are in
    view: a panel with one layer, or with no values at all.
    """
    layers = sorted({int(layer) for layer in layers})
    if not layers:
        return
    ticks = layers[:: math.ceil(len(layers) / most)]
    if axis == "x":
        ax.set_xticks(ticks)
        ax.set_xlim(layers[0] - 0.5, layers[-1] + 0.5)
    else:  # rows of an image: its extent already spans the layers
        ax.set_yticks(ticks)


def value(number, transform=float) -> float:
    """A value read from JSON, where NaN was written as null (masked or undefined), ready to plot."""
    return float("nan") if number is None else transform(number)


def metadata(data) -> dict:
    """The metadata every score file carries (for a simulation: its variant, size and seed)."""
    return npz_metadata(data)


def alpha_rows(paths, limits=(0.0, 1.0)):
    """Grid rows for simulation files that differ only in alpha: ("α = ...", mean scores, limits)."""
    rows = []
    for path in paths:
        data = read_npz(path)
        rows.append((f"α = {metadata(data)['variant']['alpha']}", data["mean_scores"], limits))
    return rows


def standalone(name: str):
    """What Snakemake passes the script of figure ``name``, for running it by hand or as a notebook.

    Run from the project root, the script reads the files in results/ that the figure table names at
    the default scale, or at the configs in ``$BEHIND_ROPE_CONFIGFILE`` (e.g. config/smoke.yaml).  A
    script that draws several figures draws the one named on its command line, if any
    (``python workflow/scripts/fig2_simulation.py figS_alpha_sweep``).
    """
    import os
    import sys
    from types import SimpleNamespace

    from behind_rope import config
    from behind_rope.figures import table as figures

    overlays = os.environ.get("BEHIND_ROPE_CONFIGFILE", "").split()
    table = figures.load(config.load(*overlays, root=Path.cwd()))[1]
    named = [arg for arg in sys.argv[1:] if arg in table]  # a notebook kernel's own arguments name no figure
    figure = table[named[0] if named else name]
    return SimpleNamespace(input=list(figure.inputs), output=figure.files, params=SimpleNamespace(**figure.params),
                           log=[], rule=name)


def _clipped_data(ax):
    """(label, points, marker diameter in points) of each line and scatter of ``ax`` placed in data
    coordinates and clipped to the panel; error-bar caps left out (their reach is the bar's, not a point's)."""
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer

    caps = {id(cap) for container in ax.containers if isinstance(container, ErrorbarContainer) for cap in container[1]}
    for line in ax.get_lines():
        if line.get_visible() and line.get_clip_on() and id(line) not in caps and line.get_transform() == ax.transData:
            marker = line.get_marker() not in (None, "", " ", "None", "none")
            yield line.get_label(), line.get_xydata(), line.get_markersize() if marker else 0.0
    for collection in ax.collections:
        if (isinstance(collection, PathCollection) and collection.get_visible() and collection.get_clip_on()
                and collection.get_offset_transform() == ax.transData):  # a scatter: its sizes are areas, in points²
            yield collection.get_label(), collection.get_offsets(), float(np.sqrt(np.max(collection.get_sizes(),
                                                                                         initial=0.0)))


def points_outside_panels(fig) -> list[str]:
    """Where ``fig`` draws data that its panel clips, wholly or in part: one sentence per curve or scatter
    with such points, none when every point and its marker are in view.

    Checked: the points of lines and scatters placed in data coordinates and clipped to their panel, each
    with its marker (a point on the panel's edge loses half its marker).  Not checked: what is meant to
    reach beyond the panel (drawn with ``clip_on=False``), error-bar caps, reference lines (``axhline``),
    shaded bands, images and text.  On a log axis a value <= 0 cannot be drawn: it counts as outside.
    Call it once the layout is final (after ``tight_layout``): it measures in the figure's pixels.
    """
    pixels_per_point = fig.dpi / 72
    problems = []
    for number, ax in enumerate(fig.axes, start=1):
        if not ax.get_visible():
            continue
        xlim, ylim = ax.get_xlim(), ax.get_ylim()  # reading them settles any pending autoscaling
        ax.apply_aspect()  # an image's panel shrinks to its aspect when drawn
        box = ax.get_window_extent()
        for curve, (label, points, marker_size) in enumerate(_clipped_data(ax), start=1):
            label = f"curve {curve}" if label.startswith("_") else repr(label)  # Matplotlib's own names: "_child3"
            points = np.ma.filled(np.ma.asarray(points, dtype=float), np.nan).reshape(-1, 2)
            points = points[np.isfinite(points).all(axis=1)]
            with np.errstate(divide="ignore", invalid="ignore"):  # a log axis maps values <= 0 to nowhere
                x, y = ax.transData.transform(points).T
            reach = max(marker_size * pixels_per_point / 2 - 0.5, 0.0)  # half a pixel of the marker may go
            clipped = (~np.isfinite(x) | ~np.isfinite(y) | (x - reach < box.x0) | (x + reach > box.x1)
                       | (y - reach < box.y0) | (y + reach > box.y1))
            if clipped.any():
                first = ", ".join(f"{v:g}" for v in points[clipped][0])
                title = ax.get_title().replace("\n", " ") or "untitled"
                problems.append(f"panel {number} ({title!r}), {label}: {clipped.sum()} of "
                                f"{len(points)} points outside or on the edge of x {tuple(map(float, xlim))}, "
                                f"y {tuple(map(float, ylim))}, the first at ({first})")
    return problems


def save(fig, outputs, log=()) -> None:
    """Write the figure to every output path (PDF and PNG), atomically; list them in the log.

    A figure that would clip some of its data (:func:`points_outside_panels`) is not written: the error
    names the panel and the points, so its limits can be widened or the clipping drawn on purpose.
    """
    problems = points_outside_panels(fig)
    if problems:
        plt.close(fig)
        raise ValueError(f"{outputs[0]} would hide data drawn outside its panels:\n  " + "\n  ".join(problems))
    for path in outputs:
        suffix = Path(path).suffix.lstrip(".")
        # No creation date in a PDF: the same figure makes the same file, byte for byte.
        metadata = {"CreationDate": None} if suffix == "pdf" else None
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=suffix, dpi=150, bbox_inches="tight", metadata=metadata)
    plt.close(fig)
    for path in log:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("".join(f"wrote {output}\n" for output in outputs))
