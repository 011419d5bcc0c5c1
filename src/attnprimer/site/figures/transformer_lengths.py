"""Figures and tables of "Beyond the training lengths" in the chapter "The Transformer".

Why the two Transformers fail on inputs longer than any in training, tested by moving the
positions they are given
([`attnprimer.site.experiments.transformer_positions`][attnprimer.site.experiments.transformer_positions]):
*shift* the positions of inputs they reverse (6 to 10 letters) by ``k``, on one side or both,
and *squeeze* the positions of longer inputs (11 to 20 letters) into the trained range, on one
side or both. The three seeds of each model, as in
[`attnprimer.site.figures.transformer`][attnprimer.site.figures.transformer].
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from attnprimer.site.catalogue import reversal_seeds
from attnprimer.site.experiments.transformer_positions import (
    cached_extra_letters,
    cached_position_scores,
)
from attnprimer.site.figures.plotting import BLUE, GREY, ORANGE, PURPLE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.site.figures.transformer import DECODER_ONLY, ENCODER_DECODER

__all__ = ["MOVES", "SHIFTS", "SHIFT_LENGTHS", "SIDES", "SQUEEZE_LENGTHS", "moved", "shifted"]

SHIFT_LENGTHS = list(range(6, 11))  # inputs every seed reverses
SHIFTS = [0, 1, 2, 4, 8]  # how far the positions are moved
SQUEEZE_LENGTHS = [11, 12, 13, 14, 16, 20]  # longer than any in training
SAMPLES = 500  # held-out inputs per length

SIDES = {  # what "source" and "target" are, for each model
    ENCODER_DECODER: ("the encoder's", "the decoder's"),
    DECODER_ONLY: ("the input letters'", "the separator's and outputs'"),
}
MOVES = {  # which side moves: (source, target) for a move called "m"
    "source": lambda move: (move, "natural"),
    "target": lambda move: ("natural", move),
    "both": lambda move: (move, move),
}
COLOURS = {"source": BLUE, "target": ORANGE, "both": PURPLE, "neither": GREY}


def moved(name: str, side: str, move: str, lengths: list[int]) -> dict[str, np.ndarray]:
    """Scores of every seed of ``name`` with ``side``'s positions moved: (seeds, lengths) each."""
    source, target = MOVES[side](move)
    runs = [cached_position_scores(trained, lengths, source, target, SAMPLES)
            for trained in reversal_seeds(name)]
    return {score: np.array([run[score] for run in runs]) for score in runs[0]}


def shifted(name: str, side: str) -> dict[str, np.ndarray]:
    """Scores over the lengths 6-10 (their mean) with ``side`` shifted by each of ``SHIFTS``:
    (seeds, shifts) each; a shift of 0 is the model as it is."""
    by_shift = [moved(name, "both" if k == 0 else side, f"shift {k}", SHIFT_LENGTHS)
                for k in SHIFTS]
    return {score: np.stack([scores[score].mean(axis=1) for scores in by_shift], axis=1)
            for score in by_shift[0]}


def _side_label(name: str, side: str) -> str:
    source, target = SIDES[name]
    return {"source": f"{source} positions", "target": f"{target} positions",
            "both": "both", "neither": "neither (as trained)"}[side]


def _band(axes, x, runs: np.ndarray, colour: str, label: str, **style) -> None:
    """Mean of the seeds (rows of ``runs``) as a line, their range shaded."""
    axes.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=colour, alpha=0.2, lw=0)
    axes.plot(x, runs.mean(axis=0), color=colour, marker="o", ms=3, label=label, **style)


@recipe("shift", "letters right when the positions of inputs of 6-10 letters are shifted by k",
        chapter="transformer")
def shift() -> Figure:
    figure = Figure(figsize=(8, 3.4), layout="constrained")
    panels = figure.subplots(1, 2, sharey=True)
    for axes, name in zip(panels, SIDES, strict=True):
        for side in MOVES:
            _band(axes, SHIFTS, shifted(name, side)["letters"], COLOURS[side],
                  f"shifted: {_side_label(name, side)}")
        axes.axhline(1 / 8, color=GREY, ls=":", lw=0.8)
        axes.set_title(name, fontsize=10)
        axes.set_xlabel("shift k (positions added to every position moved)")
        axes.set_xticks(SHIFTS)
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, loc="upper right")
    panels[0].set_ylabel("letters right, teacher-forced")
    panels[0].text(SHIFTS[-1], 1 / 8 + 0.01, "chance", fontsize=8, color=GREY, ha="right",
                   va="bottom")
    return figure


@recipe("shift_one", "exact match, letters and ends when positions are shifted by one",
        chapter="transformer")
def shift_one() -> str:
    rows = []
    for name in SIDES:
        for side in ("neither", *MOVES):
            scores = (moved(name, "both", "shift 0", SHIFT_LENGTHS) if side == "neither"
                      else moved(name, side, "shift 1", SHIFT_LENGTHS))
            rows.append([name, _side_label(name, side),
                         *(mean_range(scores[score].mean(axis=1))
                           for score in ("exact", "letters", "end"))])
    return markdown_table(
        ["model", "positions moved by one", "exact match, %", "letters right, %",
         "end right, %"], rows,
        caption=f"Inputs of 6 to 10 letters, {SAMPLES} held-out inputs per length, one "
                f"teacher-forced pass with the positions of one side (or both) moved one on: "
                f"exact match (every letter and the end right: what greedy decoding gets "
                f"right), the share of letters and of end steps right. The mean over the "
                f"lengths for seeds 0, 1 and 2: their mean and, in brackets, the lowest and the "
                f"highest seed.")


@recipe("squeeze", "inputs of 11-20 letters with their positions squeezed into 0-9",
        chapter="transformer")
def squeeze() -> Figure:
    figure = Figure(figsize=(8, 5.6), layout="constrained")
    panels = figure.subplots(2, 2, sharex=True, sharey=True)
    for column, name in enumerate(SIDES):
        for side in ("neither", *MOVES):
            scores = (moved(name, "both", "natural", SQUEEZE_LENGTHS) if side == "neither"
                      else moved(name, side, "squeeze", SQUEEZE_LENGTHS))
            label = ("as trained" if side == "neither"
                     else f"squeezed: {_side_label(name, side)}")
            for row, score in enumerate(("exact", "letters")):
                _band(panels[row, column], SQUEEZE_LENGTHS, scores[score], COLOURS[side], label)
        panels[0, column].set_title(name, fontsize=10)
        panels[1, column].set_xlabel("input length (letters)")
        panels[0, column].legend(fontsize=7, loc="upper right")
    for axes in panels.flat:
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
    panels[0, 0].set_ylabel("exact match")
    panels[1, 0].set_ylabel("letters right, teacher-forced")
    return figure


OVERRUN_LENGTH, OVERRUN_SHIFTS = 6, [0, 1, 2]


def _mean_range(values: np.ndarray) -> str:
    """Counts, one per seed: the mean, then the range in brackets unless they all agree."""
    mean, low, high = (f"{value:.1f}" for value in (values.mean(), values.min(), values.max()))
    return mean if low == high else f"{mean}&#8239;({low}–&#8288;{high})"


@recipe("overrun", "greedy decoding with the encoder's positions shifted: letters written on",
        chapter="transformer")
def overrun() -> str:
    runs = np.array([cached_extra_letters(trained, OVERRUN_LENGTH, OVERRUN_SHIFTS, SAMPLES)
                     for trained in reversal_seeds(ENCODER_DECODER)])  # (seeds, shifts)
    rows = [[f"{k}", _mean_range(column)] for k, column in zip(OVERRUN_SHIFTS, runs.T, strict=True)]
    return markdown_table(
        ["encoder's positions shifted by", "letters written past the last one"], rows,
        caption=f"The encoder-decoder Transformer, greedy decoding, {SAMPLES} held-out inputs "
                f"of {OVERRUN_LENGTH} letters with the encoder's positions shifted by k (the "
                f"decoder's as trained): how many letters it writes before its end token, minus "
                f"the {OVERRUN_LENGTH} it should, with room for 8 more. The mean of seeds 0, 1 "
                f"and 2 and, in brackets, the lowest and the highest seed.")
