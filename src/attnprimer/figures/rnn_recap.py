"""Figures and tables of the chapter "RNN recap" (``docs/chapters/rnn-recap.md``).

The GRU encoder-decoders of the reversal task (vanilla, peeky, and with attention): exact
match against the input length, inside and beyond the lengths they were trained on.
"""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.figure import Figure

from attnprimer.analysis import accuracy_by_length
from attnprimer.figures.plotting import plot_length_generalisation
from attnprimer.figures.registry import recipe
from attnprimer.figures.tables import markdown_table, percent
from attnprimer.site_models import REVERSAL_DECODERS, site_model
from attnprimer.train import TrainedModel

__all__ = ["reversal_model"]


def reversal_model(decoder: str) -> TrainedModel:
    """The site's trained encoder-decoder called ``decoder`` in
    [`REVERSAL_DECODERS`][attnprimer.site_models.REVERSAL_DECODERS]."""
    return site_model("reversal", **REVERSAL_DECODERS[decoder]).trained()


@functools.cache
def _accuracy_by_length(decoder: str) -> dict[int, float]:
    """Exact match of one reversal model at every length up to twice its longest in training.

    Shared by the length figure and the accuracy table, which would otherwise decode the
    same 20,000 sequences twice per model.
    """
    trained = reversal_model(decoder)
    lengths = list(range(1, 2 * trained.task.max_len + 1))
    return dict(zip(lengths, accuracy_by_length(trained, lengths, samples=1000), strict=True))


@recipe("length", "exact match against input length for the encoder-decoders")
def length() -> Figure:
    curves = {}
    for decoder in REVERSAL_DECODERS:
        scores = _accuracy_by_length(decoder)
        curves[decoder] = (list(scores), list(scores.values()))
    figure = plot_length_generalisation(curves,
                                        trained_length=reversal_model("vanilla").task.max_len)
    axes = figure.axes[0]
    axes.set_xlabel("input length (letters to reverse)")
    axes.texts[0].set_text("longest in training")
    return figure


@recipe("accuracy", "held-out exact match of the encoder-decoders, inside and beyond training")
def accuracy() -> str:
    first = reversal_model("vanilla")
    longest = first.task.max_len
    inside = list(range(first.task.min_len, longest + 1))
    beyond = list(range(longest + 1, 2 * longest + 1))
    rows = []
    for decoder in REVERSAL_DECODERS:
        scores = _accuracy_by_length(decoder)
        rows.append([decoder, percent(np.mean([scores[length] for length in inside])),
                     percent(np.mean([scores[length] for length in beyond])),
                     percent(scores[longest]), percent(scores[2 * longest])])
    config = first.config
    return markdown_table(
        ["model", f"lengths {inside[0]}–{inside[-1]} (trained)",
         f"lengths {beyond[0]}–{beyond[-1]}", f"length {longest}", f"length {2 * longest}"],
        rows,
        caption=f"Exact match (the whole reversed sequence and its end token right), 1,000 "
                f"held-out sequences per length, averaged over the lengths of each column. Every "
                f"model: a GRU encoder of {first.task.hidden} units, trained {config.steps:,} "
                f"steps on lengths {inside[0]}–{inside[-1]}, batches of {config.batch_size}, "
                f"teacher forcing, Adam from lr {config.lr:g} with {config.schedule} decay.")
