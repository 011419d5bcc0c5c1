"""Figures and tables of the chapter "Train short, test long".

The decoder-only Transformer of [`attnprimer.position_schemes`][attnprimer.position_schemes],
once per position scheme, trained on copy and on reverse with inputs of 1 to ``TRAIN_MAX``
letters and tested on every length up to ``2 * TRAIN_MAX``
([`attnprimer.site.experiments.length_generalisation`][attnprimer.site.experiments.length_generalisation]),
three seeds each (rotary eight).
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.positional import rotary_angles
from attnprimer.site.catalogue import (
    LENGTH_OPERATIONS,
    LENGTH_SCHEMES,
    NOPE_LONGER_STEPS,
    ROTARY_SEEDS,
    SEEDS,
    site_seeds,
)
from attnprimer.site.experiments.length_generalisation import (
    cached_first_errors,
    cached_source_attention,
    exact_match,
)
from attnprimer.site.figures.plotting import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    draw_attention,
    weight_colorbar,
)
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.tasks import CopyReverseTask
from attnprimer.training.train import TrainedModel

__all__ = ["LENGTHS", "NAMES", "ROTARY_LATE", "TRAIN_MAX", "beyond", "exact", "relative_entries",
           "rotary_pair_angles", "seeds"]

TRAIN_MAX = CopyReverseTask().max_len  # N: the longest training input
LENGTHS = list(range(1, 2 * TRAIN_MAX + 1))  # tested: 1..2N
SAMPLES = 1000  # held-out inputs per length
NAMES = {"none": "NoPE", "sinusoidal": "absolute (sinusoidal)",
         "relative": "relative bias (T5-style)", "alibi": "ALiBi", "rotary": "rotary"}
SHORT_NAMES = {"none": "NoPE", "sinusoidal": "sinusoidal", "relative": "relative bias",
               "alibi": "ALiBi", "rotary": "rotary"}
COLOURS = {"none": "black", "sinusoidal": GREY, "relative": GREEN, "alibi": ORANGE,
           "rotary": BLUE}
PAPER_RANK = {"none": "1", "relative": "2", "alibi": "3–5", "rotary": "3–5",
              "sinusoidal": "3–5"}  # Kazemnejad et al. (2023): NoPE, then T5, then the rest
FAIL_LENGTH = TRAIN_MAX + 2  # where the chapter shows where outputs first go wrong
ATTENTION_LENGTH = 2 * TRAIN_MAX  # the heatmaps' input
SEEDS_NOTE = (f"the mean of seeds {', '.join(map(str, SEEDS[:-1]))} and {SEEDS[-1]} (rotary: "
              f"{len(ROTARY_SEEDS)} seeds, {ROTARY_SEEDS[0]} to {ROTARY_SEEDS[-1]})")
ROTARY_OFFSETS = (1, 7)  # reverse: the first step's offset and the one where rotary slips


def seeds(operation: str, scheme: str, **settings) -> list[TrainedModel]:
    """Every seed of the model of ``operation`` and ``scheme``, trained."""
    return [model.trained() for model in site_seeds("copy-reverse", operation=operation,
                                                    pos_enc=scheme, **settings)]


def exact(operation: str, scheme: str, **settings) -> np.ndarray:
    """Exact match of every seed at every length of ``LENGTHS``: (seeds, lengths)."""
    return np.array([[exact_match(shares) for shares in
                      cached_first_errors(trained, LENGTHS, SAMPLES).values()]
                     for trained in seeds(operation, scheme, **settings)])


def beyond(runs: np.ndarray) -> np.ndarray:
    """Each seed's mean exact match over the lengths beyond training, N + 1..2N: (seeds,)."""
    return runs[:, TRAIN_MAX:].mean(axis=1)


def _band(axes, x, runs: np.ndarray, colour: str, label: str) -> None:
    axes.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=colour, alpha=0.18, lw=0)
    axes.plot(x, runs.mean(axis=0), color=colour, marker="o", ms=3, label=label)


def _trained_span(axes) -> None:
    axes.axvspan(0.5, TRAIN_MAX + 0.5, color=GREY, alpha=0.12, lw=0)
    axes.text(TRAIN_MAX / 2 + 0.5, 0.03, "training lengths", ha="center", fontsize=8,
              color=GREY)


@recipe("exact", "exact match against input length, per position scheme, copy and reverse")
def exact_figure() -> Figure:
    figure = Figure(figsize=(8, 3.6), layout="constrained")
    panels = figure.subplots(1, 2, sharey=True)
    for axes, operation in zip(panels, LENGTH_OPERATIONS, strict=True):
        _trained_span(axes)
        for scheme in LENGTH_SCHEMES:
            _band(axes, LENGTHS, exact(operation, scheme), COLOURS[scheme], NAMES[scheme])
        axes.set_title(operation, fontsize=10)
        axes.set_xlabel("input length (letters)")
        axes.set_xticks(LENGTHS[1::2])
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("exact match (held-out)")
    panels[1].legend(fontsize=7, loc="upper right")
    return figure


@recipe("ranking", "our ranking of the five schemes beside Kazemnejad et al. (2023)'s")
def ranking() -> str:
    rows = []
    for scheme in LENGTH_SCHEMES:
        for operation in LENGTH_OPERATIONS:
            runs = exact(operation, scheme)
            rows.append([NAMES[scheme] if operation == LENGTH_OPERATIONS[0] else "",
                         PAPER_RANK[scheme] if operation == LENGTH_OPERATIONS[0] else "",
                         operation, mean_range(runs[:, TRAIN_MAX - 1]),
                         mean_range(beyond(runs))])
    return markdown_table(
        ["scheme", "paper's rank", "task", f"{TRAIN_MAX} letters, %",
         f"{TRAIN_MAX + 1}–{2 * TRAIN_MAX} letters, %"], rows,
        caption=f"Exact match on {SAMPLES:,} held-out inputs per length: at the longest "
                f"training length ({TRAIN_MAX} letters), and averaged over the lengths "
                f"{TRAIN_MAX + 1} to {2 * TRAIN_MAX}, which no model saw: {SEEDS_NOTE} and, in "
                f"brackets, the lowest and the highest seed. The paper's rank "
                f"is its overall finding across its tasks (NoPE first, T5's bias second, the "
                f"other three behind), not a number it reports for these two tasks at this "
                f"scale.")


@recipe("first_wrong", "where outputs first go wrong on inputs two letters longer than any "
        "in training")
def first_wrong() -> Figure:
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    panels = figure.subplots(1, 2, sharey=True)
    steps = np.arange(1, FAIL_LENGTH + 2)  # output steps written: 1..T, the end included
    for axes, operation in zip(panels, LENGTH_OPERATIONS, strict=True):
        for scheme in LENGTH_SCHEMES:
            shares = np.array([cached_first_errors(trained, LENGTHS, SAMPLES)[FAIL_LENGTH]
                               for trained in seeds(operation, scheme)])  # (seeds, T + 1)
            # Right so far after t steps: 1 - the share whose first mistake is among them
            right = 1 - np.cumsum(shares[:, :-1], axis=1)  # (seeds, T)
            _band(axes, steps, right, COLOURS[scheme], NAMES[scheme])
        axes.set_title(f"{operation}, {FAIL_LENGTH} letters", fontsize=10)
        axes.set_xlabel("output steps written (the last is the end token)")
        axes.set_xticks(steps)
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("inputs with every step so far right")
    # below the panels: inside, it would cover the curves' first steps
    figure.legend(handles=panels[0].get_lines(), fontsize=8, loc="outside lower center",
                  ncols=len(LENGTH_SCHEMES))
    return figure


def _best_head(trained: TrainedModel) -> str:
    """The head that puts the most weight on the letter to write, at the longest training
    length."""
    on_source = cached_source_attention(trained, TRAIN_MAX)["on_source"]
    return max(on_source, key=on_source.get)


@recipe("attention", "each scheme's most copying head on one input of 8 letters and one of "
        f"{ATTENTION_LENGTH} (reverse, seed 0)")
def attention_figure() -> Figure:
    figure = Figure(figsize=(8, 4.4), layout="constrained")
    panels = figure.subplots(2, len(LENGTH_SCHEMES))
    for column, scheme in enumerate(LENGTH_SCHEMES):
        trained = seeds("reverse", scheme)[0]
        head = _best_head(trained)
        for row, length in enumerate((TRAIN_MAX, ATTENTION_LENGTH)):
            axes = panels[row, column]
            on_source = cached_source_attention(trained, length)["on_source"][head]
            weights = torch.tensor(cached_source_attention(trained, length, samples=1)
                                   ["example"][head])  # (n, n)
            image = draw_attention(axes, weights, [""] * length, [""] * length,
                                   annotate=False)
            axes.set_xticks([])
            axes.set_yticks([])
            axes.plot(np.arange(length)[::-1], np.arange(length), ls="none", marker="s",
                      ms=22 / length ** 0.5, mfc="none", mec=PURPLE, mew=0.8)
            axes.set_xlabel(f"{length} letters: {on_source:.2f}", fontsize=8)
        name = head.removeprefix("decoder self ")
        panels[0, column].set_title(f"{SHORT_NAMES[scheme]}\nhead {name}", fontsize=9)
    for row in range(2):
        panels[row, 0].set_ylabel("output step (down)\nover input letters", fontsize=8)
    weight_colorbar(figure, image, list(panels.flat))
    return figure


@recipe("nope_longer", "NoPE on reverse trained twice as long")
def nope_longer() -> str:
    rows = []
    for steps in (CopyReverseTask.train_defaults["steps"], NOPE_LONGER_STEPS):
        runs = exact("reverse", "none", steps=steps)
        rows.append([f"{steps:,}", mean_range(runs[:, TRAIN_MAX - 1]),
                     mean_range(runs[:, TRAIN_MAX]), mean_range(beyond(runs))])
    return markdown_table(
        ["training steps", f"{TRAIN_MAX} letters, %", f"{TRAIN_MAX + 1} letters, %",
         f"{TRAIN_MAX + 1}–{2 * TRAIN_MAX}, %"], rows,
        caption=f"NoPE on reverse, exact match on {SAMPLES:,} held-out inputs per length. The "
                f"same recipe with twice the steps (the warm-up and the cosine stretch with "
                f"them). Mean of seeds 0, 1 and 2, range in brackets.")


def rotary_pair_angles(offsets=ROTARY_OFFSETS) -> list[tuple[float, list[float]]]:
    """Each dimension pair of a rotary head of the chapter's model: its speed (radians per
    position) and the angle, wrapped into [0, 2π), by which it turns a key ``offset`` back."""
    task = CopyReverseTask()
    head_dim = task.dim // task.heads
    angles = rotary_angles(max(offsets) + 1, head_dim, dtype=torch.float64)  # (L, Dh/2)
    speeds = angles[1].tolist()  # position 1: the speeds themselves
    return [(speed, [float(angles[offset, pair]) % (2 * np.pi) for offset in offsets])
            for pair, speed in enumerate(speeds)]


@recipe("rotary_pairs", "the angles of offsets 1 and 7 on each dimension pair of a rotary head")
def rotary_pairs() -> str:
    near, far = ROTARY_OFFSETS
    rows = []
    for speed, (first, second) in rotary_pair_angles():
        gap = abs(first - second)
        rows.append([f"{speed:g}", f"{first:.3f}", f"{second:.3f}",
                     f"{min(gap, 2 * np.pi - gap):.3f}"])
    task = CopyReverseTask()
    return markdown_table(
        ["speed", f"offset {near}", f"offset {far}", "apart"], rows,
        caption=f"A rotary head of this model has $D_h = {task.dim // task.heads}$ dimensions, "
                f"so {task.dim // task.heads // 2} pairs, each turned at its own speed, in "
                f"radians per position. The angles are in radians, taken after whole turns; "
                f"\"apart\" is the shorter way round the circle between the two offsets.")


def relative_entries() -> dict[str, int]:
    """The relative bias's table in the trained models: every entry, the entries the causal
    mask lets into a score (offsets 0 and below), and the fewest entries training moved from
    the zero they start at, over every model of the scheme."""
    tables = [[parameter for name, parameter in trained.model.named_parameters()
               if name.endswith("relative.table")]
              for operation in LENGTH_OPERATIONS for trained in seeds(operation, "relative")]
    max_offset = (tables[0][0].shape[1] - 1) // 2
    used = sum(table[:, :max_offset + 1].numel() for table in tables[0])  # offsets -N..0
    moved = min(sum(int((table != 0).sum()) for table in model) for model in tables)
    return {"entries": sum(table.numel() for table in tables[0]), "used": used,
            "moved": moved, "max_moved": max(sum(int((table != 0).sum()) for table in model)
                                             for model in tables), "max_offset": max_offset}


@recipe("relative_entries", "how many numbers the relative bias learns, and how many it uses")
def relative_entries_text() -> str:
    counts = relative_entries()
    task = CopyReverseTask()
    return (f"The relative bias learns {counts['entries']} numbers: {task.heads} heads times "
            f"{task.layers} layers times the {2 * counts['max_offset'] + 1} offsets from "
            f"−{counts['max_offset']} to {counts['max_offset']}. The causal mask hides every "
            f"later key, so only the offsets from −{counts['max_offset']} to 0 ever enter a "
            f"score: {counts['used']} numbers. The others never receive a gradient; in every "
            f"trained model they are still the zero they started at.")


ROTARY_LATE = 14  # a length some rotary seeds copy more of than of 10 to 12 letters


@recipe("rotary_seeds", "rotary seed by seed: exact match beyond the training lengths")
def rotary_seeds() -> str:
    copy, reverse = exact("copy", "rotary"), exact("reverse", "rotary")
    nine, late = LENGTHS.index(TRAIN_MAX + 1), LENGTHS.index(ROTARY_LATE)
    rows = [[str(seed), f"{100 * c[nine]:.1f}", f"{100 * c[late]:.1f}",
             f"{100 * c[TRAIN_MAX:].mean():.1f}", f"{100 * r[nine]:.1f}",
             f"{100 * r[TRAIN_MAX:].mean():.1f}"]
            for seed, c, r in zip(ROTARY_SEEDS, copy, reverse, strict=True)]
    span = f"{TRAIN_MAX + 1}–{2 * TRAIN_MAX}"
    return markdown_table(
        ["seed", f"copy, {TRAIN_MAX + 1} letters, %", f"copy, {ROTARY_LATE} letters, %",
         f"copy, {span}, %", f"reverse, {TRAIN_MAX + 1} letters, %", f"reverse, {span}, %"],
        rows, caption=f"Rotary, each of its {len(ROTARY_SEEDS)} seeds: exact match on {SAMPLES:,} "
                      f"held-out inputs per length, at {TRAIN_MAX + 1} and {ROTARY_LATE} letters "
                      f"and averaged over {span}.")
