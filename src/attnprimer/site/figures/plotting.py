"""Pure plot helpers shared by the chapters' figure modules, and reproducible saving.

Every ``plot_*`` function takes tensors or results and returns a
``matplotlib.figure.Figure``. None of them trains, saves or shows anything, and they use
matplotlib's object API only (no pyplot), so they work under any backend, in a notebook or
in the docs build. [`save_figure`][attnprimer.site.figures.plotting.save_figure] writes a figure
byte for byte the same way every time.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch
from matplotlib import rc_context
from matplotlib.figure import Figure

from attnprimer.tasks.base import BLANK, Task
from attnprimer.training.files import write_atomically

__all__ = [
    "BLOCK_COLOURS",
    "BLUE",
    "GREEN",
    "GREY",
    "HEATMAP",
    "INK",
    "ORANGE",
    "PURPLE",
    "draw_attention",
    "plot_attention",
    "plot_attention_grid",
    "plot_difference_profile",
    "plot_task_attention",
    "save_figure",
    "weight_colorbar",
]

# Colours: one per series, colour-blind safe (Okabe-Ito).
BLUE, ORANGE, GREEN, GREY = "#0072B2", "#E69F00", "#009E73", "#777777"
PURPLE = "#CC79A7"
INK = "black"  # the neutral colour of text, lines and box edges (matplotlib's own default)
HEATMAP = "Blues"
BLOCK_COLOURS = ("#FFFFFF", "#9CC9E6", BLUE)
"""Blocks of tiled attention: white skipped, light computed and masked, dark computed whole
(the order of [`KINDS`][attnprimer.site.experiments.attention_at_scale.KINDS])."""

# Everything that makes an SVG differ between two identical runs, pinned.
_STYLE = {
    "svg.hashsalt": "attnprimer",
    "svg.fonttype": "path",
    "font.size": 10,
    "axes.titlesize": 11,
    "figure.dpi": 100,
}


def plot_attention(
    weights: torch.Tensor,
    query_labels: list[str],
    key_labels: list[str],
    *,
    title: str | None = None,
    xlabel: str = "key (input step)",
    ylabel: str = "query (output step)",
    annotate: bool = True,
) -> Figure:
    """Heatmap of attention weights (L, S) on a fixed [0, 1] colour scale.

    Rows are queries, columns keys; every row sums to 1.

    Examples:
        >>> figure = plot_attention(torch.full((2, 3), 1 / 3), ["q0", "q1"], ["a", "b", "c"])
        >>> figure.axes[0].get_xlabel()
        'key (input step)'
    """
    weights = _check_weights(weights, query_labels, key_labels)
    rows, cols = weights.shape
    figure = Figure(figsize=(1.2 + 0.55 * cols + 1.2, 1.0 + 0.5 * rows + 0.6), layout="constrained")
    axes = figure.add_subplot()
    image = draw_attention(axes, weights, query_labels, key_labels, annotate=annotate)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    weight_colorbar(figure, image, axes)
    return figure


def draw_attention(axes, weights: torch.Tensor, query_labels: list[str], key_labels: list[str],
                   *, annotate: bool = True):
    """Draw weights (L, S) into ``axes`` on the [0, 1] scale; returns the image (for a colorbar)."""
    weights = _check_weights(weights, query_labels, key_labels)
    rows, cols = weights.shape
    image = axes.imshow(weights.numpy(), cmap=HEATMAP, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(cols), key_labels)
    axes.set_yticks(range(rows), query_labels)
    if annotate:
        for row in range(rows):
            for col in range(cols):
                value = float(weights[row, col])
                axes.text(col, row, f"{value:.2f}".lstrip("0"), ha="center", va="center",
                          fontsize=8, color="white" if value > 0.55 else "black")
    return image


def _check_weights(weights, query_labels, key_labels) -> torch.Tensor:
    weights = torch.as_tensor(weights).detach().float()
    if weights.dim() != 2 or weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"weights must be (L, S) = ({len(query_labels)}, {len(key_labels)}) to match the "
            f"labels, got {tuple(weights.shape)}"
        )
    return weights


def weight_colorbar(figure: Figure, image, axes) -> None:
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    colorbar.set_label("attention weight")


def plot_task_attention(
    task: Task,
    tokens: torch.Tensor,
    prediction: torch.Tensor,
    weights: torch.Tensor,
    self_weights: torch.Tensor | None = None,
) -> Figure:
    """A task model's encoder-decoder attention (T, S) with tokens and predictions as labels.

    With ``self_weights`` (T, T), the self-attention over the output steps is
    drawn to the right, on the same colour scale.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> task = CountingTask(max_len=4)
        >>> figure = plot_task_attention(task, task.encode("AB C"), torch.tensor([1, 1, 1]),
        ...                              torch.full((3, 4), 0.25))
        >>> [label.get_text() for label in figure.axes[0].get_yticklabels()]
        ['A = 1', 'B = 1', 'C = 1']
    """
    key_labels = [f"{'_' if char == BLANK else char}\n{step}"
                  for step, char in enumerate(task.alphabet[int(token)] for token in tokens)]
    query_labels = task.step_labels(prediction)
    if self_weights is None:
        return plot_attention(
            weights, query_labels, key_labels,
            xlabel="input token and step (_ = blank)", ylabel="output step: prediction",
        )
    steps = len(query_labels)
    figure = Figure(figsize=(1.6 + 0.55 * (len(key_labels) + steps) + 2.2, 1.6 + 0.5 * steps),
                    layout="constrained")
    left, right = figure.subplots(
        1, 2, sharey=True, gridspec_kw={"width_ratios": [len(key_labels), steps]}
    )
    draw_attention(left, weights, query_labels, key_labels)
    left.set_xlabel("input token and step (_ = blank)")
    left.set_ylabel("output step: prediction")
    left.set_title("encoder-decoder attention")
    step_labels = [f"{label}\n{step}" for step, label in enumerate(task.output_labels())]
    image = draw_attention(right, self_weights, query_labels, step_labels)
    right.tick_params(labelleft=False)
    right.set_xlabel("output step read")
    right.set_title("self-attention")
    weight_colorbar(figure, image, [left, right])
    return figure


def plot_attention_grid(
    matrices: dict[str, torch.Tensor], step_labels: list[str], *, columns: int = 3
) -> Figure:
    """Several (T, T) self-attention matrices side by side on one [0, 1] colour scale.

    Examples:
        >>> figure = plot_attention_grid({"a": torch.eye(2), "b": torch.eye(2)}, ["x", "y"])
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['a', 'b']
    """
    rows = math.ceil(len(matrices) / columns)
    size = len(step_labels)
    figure = Figure(figsize=(0.9 + columns * (0.55 * size + 1.0), 0.6 + rows * (0.5 * size + 1.0)),
                    layout="constrained")
    grid = np.atleast_2d(figure.subplots(rows, columns, squeeze=False))
    image = None
    for index, axes in enumerate(grid.flat):
        if index >= len(matrices):
            axes.set_visible(False)
            continue
        title, weights = list(matrices.items())[index]
        image = draw_attention(axes, weights, step_labels, step_labels)
        axes.set_title(title, fontsize=9)
        axes.set_ylabel("output step")
        axes.set_xlabel("output step read")
    weight_colorbar(figure, image, list(grid.flat))
    return figure


def save_figure(figure: Figure, path: str | os.PathLike, *, background: str = "white") -> Path:
    """Save ``figure`` reproducibly (no timestamps, fixed SVG ids); the format follows the suffix.

    The file is written atomically: an interrupted save leaves the old file, or none.
    ``background`` fills the figure's area (the dark twin of a figure passes the dark page's).

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> make = lambda: plot_attention(torch.eye(2), ["a", "b"], ["c", "d"])
        >>> first = save_figure(make(), folder / "a.svg").read_bytes()
        >>> first == save_figure(make(), folder / "b.svg").read_bytes()
        True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Date": None} if path.suffix in {".svg", ".pdf"} else {}
    with rc_context(_STYLE):
        write_atomically(path, lambda file: figure.savefig(
            file, format=path.suffix.lstrip(".") or None, metadata=metadata, facecolor=background),
            mode=0o644)
    return path


def plot_difference_profile(
    profiles: list[tuple[list[int], torch.Tensor]], step_labels: list[str]
) -> Figure:
    """Where the difference step's self-attention goes, against count(A) - count(B).

    Args:
        profiles: one ``(differences, rows)`` per seed, as returned by
            [`difference_step_profile`][attnprimer.site.experiments.difference_model.difference_step_profile]
            (the self-attention chapter).
        step_labels: names of the output steps, e.g. ``["A", "B", "C", "|A-B|"]``.

    Examples:
        >>> rows = torch.tensor([[0.1, 0.6, 0.0, 0.3], [0.6, 0.1, 0.0, 0.3]])
        >>> figure = plot_difference_profile([([-1, 1], rows)], ["A", "B", "C", "|A-B|"])
        >>> figure.axes[0].get_xlabel()
        'count(A) - count(B)'
    """
    figure = Figure(figsize=(7, 3.8), layout="constrained")
    axes = figure.add_subplot()
    colours = [ORANGE, BLUE, GREY, GREEN]
    styles = ["-", "--", ":"]
    for seed, (differences, rows) in enumerate(profiles):
        for step, (label, colour) in enumerate(zip(step_labels, colours, strict=True)):
            name = "itself" if step == len(step_labels) - 1 else f"step {label}"
            axes.plot(differences, rows[:, step].numpy(), color=colour, marker=".",
                      ls=styles[seed % len(styles)], label=name if seed == 0 else None)
    axes.axvline(0, color=GREY, lw=0.6)
    axes.set_ylim(0, 1)
    axes.set_xlabel("count(A) - count(B)")
    axes.set_ylabel("weight the difference step puts on...")
    axes.legend(fontsize=8, loc="upper center", ncols=len(step_labels))
    if len(profiles) > 1:
        seeds = ", ".join(str(seed) for seed in range(len(profiles)))
        axes.set_title(f"mean over held-out sequences; solid, dashed, dotted: seeds {seeds}",
                       fontsize=9)
    return figure
