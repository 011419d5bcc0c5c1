"""Pure plot helpers shared by the chapters' figure modules, and reproducible saving.

Every ``plot_*`` function takes tensors or results and returns a
``matplotlib.figure.Figure``. None of them trains, saves or shows anything, and they use
matplotlib's object API only (no pyplot), so they work under any backend, in a notebook or
in the docs build. [`save_figure`][attnprimer.figures.plotting.save_figure] writes a figure
byte for byte the same way every time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnprimer.files import write_atomically
from attnprimer.tasks.base import BLANK, Task

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
    "plot_accuracy_curves",
    "plot_attention",
    "plot_attention_grid",
    "plot_difference_profile",
    "plot_length_generalisation",
    "plot_lengths",
    "plot_task_attention",
    "plot_training",
    "save_figure",
    "smoothed",
    "weight_colorbar",
]

# Colours: one per series, colour-blind safe (Okabe-Ito).
BLUE, ORANGE, GREEN, GREY = "#0072B2", "#E69F00", "#009E73", "#777777"
PURPLE = "#CC79A7"
INK = "black"  # the neutral colour of text, lines and box edges (matplotlib's own default)
HEATMAP = "Blues"
BLOCK_COLOURS = ("#FFFFFF", "#9CC9E6", BLUE)
"""Blocks of tiled attention: white skipped, light computed and masked, dark computed whole
(the order of [`KINDS`][attnprimer.experiments.attention_at_scale.KINDS])."""

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


def smoothed(values: Iterable[float], window: int = 10) -> np.ndarray:
    """The mean of each ``window`` consecutive values (a curve ``window - 1`` shorter).

    Examples:
        >>> smoothed([1.0, 3.0, 5.0, 7.0], window=2).tolist()
        [2.0, 4.0, 6.0]
    """
    return np.convolve(np.asarray(values, dtype=float), np.ones(window) / window, mode="valid")


def plot_training(history: dict[str, list[float]], title: str | None = None) -> Figure:
    """Training loss (every step, smoothed) and held-out exact match against the step.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.train import TrainConfig, train
        >>> history = train(CountingTask(hidden=8), TrainConfig(steps=10)).history
        >>> [axes.get_ylabel() for axes in plot_training(history).axes]
        ['cross-entropy loss', 'held-out exact match']
    """
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    left, right = figure.subplots(1, 2)
    steps = np.asarray(history["step"])
    loss = np.asarray(history["loss"])
    window = max(1, len(loss) // 100)
    smooth = smoothed(loss, window)
    left.plot(steps, loss, color=BLUE, alpha=0.25, lw=0.6, label="per step")
    left.plot(steps[window - 1:], smooth, color=BLUE, lw=1.4, label=f"mean of {window} steps")
    left.set_yscale("log")
    left.set_xlabel("training step")
    left.set_ylabel("cross-entropy loss")
    left.legend(fontsize=8)
    right.plot(history["held_out_step"], history["held_out_exact_match"], color=GREEN, marker=".")
    right.set_ylim(0, 1.02)
    right.set_xlabel("training step")
    right.set_ylabel("held-out exact match")
    if title:
        figure.suptitle(title)
    return figure


def plot_accuracy_curves(histories: dict[str, list[dict[str, list[float]]]]) -> Figure:
    """Held-out exact match against the training step: mean and range over seeds, per variant.

    Left, the accuracy itself; right, the error (1 - exact match) on a log
    scale, where the last fraction of a percent is visible.

    Args:
        histories: variant label -> the training histories of its seeds.

    Examples:
        >>> history = {"held_out_step": [100, 200], "held_out_exact_match": [0.5, 0.9]}
        >>> figure = plot_accuracy_curves({"a": [history, history]})
        >>> [axes.get_ylabel() for axes in figure.axes]
        ['held-out exact match', 'held-out error (1 - exact match)']
    """
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    colours = [GREY, BLUE, ORANGE, GREEN]
    for colour, (label, runs) in zip(colours, histories.items(), strict=False):
        steps = np.asarray(runs[0]["held_out_step"])
        accuracy = np.asarray([run["held_out_exact_match"] for run in runs])  # (seeds, points)
        error = np.clip(1 - accuracy, 1e-4, None)  # 1e-4: one miss in 10,000, the floor
        name = f"{label} ({len(runs)} seeds)"
        for axes, values in ((left, accuracy), (right, error)):
            axes.fill_between(steps, values.min(0), values.max(0), color=colour, alpha=0.2, lw=0)
            axes.plot(steps, values.mean(0), color=colour, lw=1.5, label=name)
    left.set_ylim(0, 1.01)
    left.set_ylabel("held-out exact match")
    right.set_yscale("log")
    right.set_ylabel("held-out error (1 - exact match)")
    for axes in (left, right):
        axes.set_xlabel("training step")
        axes.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")
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


def plot_length_generalisation(
    curves: dict[str, tuple[list[int], list[float]]], trained_length: int
) -> Figure:
    """Exact match against the input length, for models trained at one length.

    Args:
        curves: label -> (lengths, exact match at each).
        trained_length: the length the models were trained on, marked.

    Examples:
        >>> figure = plot_length_generalisation({"a": ([5, 10], [0.2, 1.0])}, trained_length=10)
        >>> figure.axes[0].get_xlabel()
        'input length (letters to count over)'
    """
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    axes = figure.add_subplot()
    colours = (GREY, BLUE, ORANGE, GREEN, "#CC79A7", "#56B4E9")
    for colour, (label, (lengths, scores)) in zip(colours, curves.items(), strict=False):
        axes.plot(lengths, scores, color=colour, marker="o", ms=4, label=label)
    axes.axvline(trained_length, color=GREY, ls="--", lw=0.8)
    axes.text(trained_length + 0.2, 0.02, "trained here", fontsize=8, color=GREY)
    axes.set_ylim(0, 1.02)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("input length (letters to count over)")
    axes.set_ylabel("held-out exact match")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
    return figure


def plot_lengths(curves: dict[str, list[list[float]]], lengths: Iterable[int],
                 trained: tuple[int, int], note: str) -> Figure:
    """Exact match against the input length: mean and range over seeds, per group of models.

    Args:
        curves: label -> one list of scores per seed, one score per length.
        lengths: the lengths the scores were measured at.
        trained: the (first, last) training length, shaded and labelled with ``note``.

    Examples:
        >>> figure = plot_lengths({"x": [[0.5, 1.0], [0.4, 1.0]]}, [5, 10], (10, 10), "here")
        >>> figure.axes[0].get_xlabel()
        'input length'
    """
    lengths = list(lengths)
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    axes = figure.add_subplot()
    first, last = trained
    axes.axvspan(first - 0.4, last + 0.4, color=GREY, alpha=0.15, lw=0)
    axes.text(first, 0.03, note, fontsize=8, color=GREY)
    colours = (GREY, BLUE, ORANGE, GREEN, "#CC79A7")
    for colour, (label, runs) in zip(colours, curves.items(), strict=False):
        scores = np.asarray(runs)  # (seeds, lengths)
        axes.fill_between(lengths, scores.min(0), scores.max(0), color=colour, alpha=0.2, lw=0)
        axes.plot(lengths, scores.mean(0), color=colour, marker="o", ms=3,
                  label=f"{label} ({len(runs)} seeds)")
    axes.set_xlabel("input length")
    axes.set_ylabel("held-out exact match")
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
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
            [`difference_step_profile`][attnprimer.analysis.difference_step_profile]
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
