"""Pure plots of curves: a training run's loss and held-out accuracy, several runs' accuracy,
and exact match against the input length.

Like every ``plot_*`` of the site, each takes results and returns a
``matplotlib.figure.Figure``; the palette is [`plotting`][attnprimer.site.figures.plotting]'s.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE

__all__ = ["plot_accuracy_curves", "plot_length_generalisation", "plot_lengths", "plot_training",
           "smoothed"]


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
        >>> from attnprimer.training.train import TrainConfig, train
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
