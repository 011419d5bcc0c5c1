"""Figures and tables of the chapter "RNN recap" (``docs/chapters/rnn-recap.md``).

The GRU encoder-decoders of the reversal task that read the input through one vector (vanilla
and peeky): exact match against the input length, inside and beyond the lengths they were
trained on, in three seeds each; and the vanilla decoder trained longer, and with a smaller
state (and so narrower GRUs), to tell the training budget from the network's size. The
attention decoders are measured alongside them, but shown in the Bahdanau chapter, after
attention is explained. The measurements are
[`attnprimer.site.experiments.rnn_recap`][attnprimer.site.experiments.rnn_recap]'s.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnprimer.site.catalogue import REVERSAL_DECODERS, SiteModel, site_model
from attnprimer.site.experiments.rnn_recap import (
    LengthCurves,
    bottleneck_curves,
    bottleneck_models,
    decoder_curves,
    decoder_models,
)
from attnprimer.site.figures.curves import plot_length_generalisation
from attnprimer.site.figures.plotting import BLUE, GREY, ORANGE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.training.train import TrainedModel

__all__ = ["PAGE_DECODERS", "page_curves", "plot_length_curves", "reversal_model"]

PAGE_DECODERS = ("vanilla", "peeky")
"""The decoders this page compares: those that read the input through one vector. The
attention decoders come in the Bahdanau chapter, once attention has been explained."""


def reversal_model(decoder: str) -> TrainedModel:
    """The site's trained encoder-decoder called ``decoder`` in
    [`REVERSAL_DECODERS`][attnprimer.site.catalogue.REVERSAL_DECODERS] (seed 0)."""
    return site_model("reversal", **REVERSAL_DECODERS[decoder]).trained()


def plot_length_curves(curves: LengthCurves, trained_length: int) -> Figure:
    """Exact match against the input length: each model's mean over its seeds, and their range.

    Examples:
        >>> curves = LengthCurves([1, 2], {"a": [[1.0, 0.5], [1.0, 0.7]]})
        >>> figure = plot_length_curves(curves, trained_length=1)
        >>> figure.axes[0].get_xlabel(), figure.axes[0].get_legend().texts[0].get_text()
        ('input length (letters to reverse)', 'a (2 seeds)')
    """
    means = {f"{label} ({len(runs)} seeds)": (curves.lengths, np.mean(runs, axis=0).tolist())
             for label, runs in curves.by_seed.items()}
    figure = plot_length_generalisation(means, trained_length=trained_length)
    axes = figure.axes[0]
    curve_lines = axes.lines[:len(curves.by_seed)]  # one per model, before the guide lines
    for line, runs in zip(curve_lines, curves.by_seed.values(), strict=True):
        axes.fill_between(curves.lengths, np.min(runs, axis=0), np.max(runs, axis=0),
                          color=line.get_color(), alpha=0.2, lw=0)
    axes.set_xlabel("input length (letters to reverse)")
    axes.texts[0].set_text("longest in training")
    return figure


def page_curves() -> LengthCurves:
    """Exact match by input length of the decoders this page compares, in every seed."""
    curves = decoder_curves()
    return LengthCurves(curves.lengths, {label: curves.by_seed[label] for label in PAGE_DECODERS})


@recipe("length", "exact match against input length for the one-vector decoders, three seeds each")
def length() -> Figure:
    return plot_length_curves(page_curves(), reversal_model("vanilla").task.max_len)


JOINED_DASH = "&#8288;–&#8288;"
"""An en dash the browser may not break a line at (word joiners on both sides)."""


def _exact_match_table(curves: LengthCurves, models: dict[str, list[SiteModel]], note: str) -> str:
    first = next(iter(models.values()))[0]
    longest = first.task.max_len
    inside, beyond = range(first.task.min_len, longest + 1), range(longest + 1, 2 * longest + 1)
    rows = [[label, mean_range(curves.over(label, inside)), mean_range(curves.over(label, beyond)),
             mean_range(curves.at(label, longest)), mean_range(curves.at(label, 2 * longest))]
            for label in curves.by_seed]
    seeds = len(next(iter(curves.by_seed.values())))
    return markdown_table(
        ["model", f"lengths {inside[0]}{JOINED_DASH}{inside[-1]} (trained)",
         f"lengths {beyond[0]}{JOINED_DASH}{beyond[-1]}", f"length&nbsp;{longest}",
         f"length&nbsp;{2 * longest}"],
        rows,
        caption=f"Exact match (the whole reversed sequence and its end token right), greedy "
                f"decoding, 1,000 held-out sequences per length, averaged over the lengths of "
                f"each column, in %: the mean over {seeds} seeds, then, in brackets, the lowest "
                f"and the highest seed. {note}")


@recipe("accuracy", "held-out exact match of the one-vector decoders, inside and beyond training")
def accuracy() -> str:
    models = {label: seeds for label, seeds in decoder_models().items() if label in PAGE_DECODERS}
    first = models["vanilla"][0]
    config = first.config
    return _exact_match_table(
        page_curves(), models,
        f"Every model: a GRU encoder and decoder of {first.task.hidden} floats each, trained "
        f"{config.steps:,} steps on lengths {first.task.min_len}–{first.task.max_len}, batches of "
        f"{config.batch_size}, teacher forcing, Adam from lr {config.lr:g} with "
        f"{config.schedule} decay.")


@recipe("bottleneck", "the vanilla decoder: longer training and a smaller state, by length")
def bottleneck() -> Figure:
    models = bottleneck_models()
    curves = bottleneck_curves()
    figure = Figure(figsize=(8, 6.6), layout="constrained")
    left, right = figure.subplots(2, 1)  # top: by length; bottom: during training
    colours = (GREY, BLUE, ORANGE)
    for colour, (label, seeds) in zip(colours, models.items(), strict=False):
        runs = curves.array(label)
        name = f"{label} ({len(seeds)} seeds)"
        left.fill_between(curves.lengths, runs.min(0), runs.max(0), color=colour, alpha=0.2,
                          lw=0)
        left.plot(curves.lengths, runs.mean(0), color=colour, marker="o", ms=3, label=name)
        histories = [model.trained().history for model in seeds]
        steps = histories[0]["held_out_step"]
        held_out = np.asarray([history["held_out_exact_match"] for history in histories])
        right.fill_between(steps, held_out.min(0), held_out.max(0), color=colour, alpha=0.2,
                           lw=0)
        right.plot(steps, held_out.mean(0), color=colour, lw=1.5, label=name)
    longest = next(iter(models.values()))[0].task.max_len
    left.axvline(longest, color=GREY, ls="--", lw=0.8)
    left.text(longest + 0.2, 0.02, "longest in training", fontsize=8, color=GREY)
    left.set_xlabel("input length (letters to reverse)")
    left.set_ylabel("held-out exact match")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.legend(fontsize=8, loc="upper right")
    right.set_xlabel("training step")
    right.set_ylabel("held-out exact match, lengths 1–10")
    right.legend(fontsize=8, loc="lower right")
    for axes in (left, right):
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
    return figure


@recipe("bottleneck_table", "exact match of the vanilla decoder by budget and state size")
def bottleneck_table() -> str:
    models = bottleneck_models()
    return _exact_match_table(
        bottleneck_curves(), models,
        "Every model: the vanilla decoder, trained on lengths 1–10 as in the table above "
        "except for its number of steps (the learning rate decays to zero over them) and the "
        "size of its state, and with it the width of both GRUs.")
