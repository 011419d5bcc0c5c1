"""Figures and tables of the chapter "The Transformer" (``docs/chapters/transformer.md``).

The two Transformers of the catalogue (``TRANSFORMERS``: encoder-decoder and decoder-only, three
seeds each) beside the RNN encoder-decoders of the Bahdanau chapter, on the same task and held-out
sequences: teacher forcing in one pass, exact match against the input length, what training cost,
and where the Transformers fail beyond their training lengths
([`attnprimer.site.experiments.transformer`][attnprimer.site.experiments.transformer]). The block
diagram is drawn in
[`attnprimer.site.figures.attention_diagrams`][attnprimer.site.figures.attention_diagrams].
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnprimer.site.catalogue import (
    TRANSFORMERS,
    reversal_seeds,
)
from attnprimer.site.experiments.bahdanau import first_step_reaching
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.experiments.transformer import cached_copies_by_position
from attnprimer.site.figures.curves import plot_length_generalisation, plot_lengths
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE, PURPLE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import by_seed, markdown_table, mean_range
from attnprimer.site.figures.transformer_heads import copy_test_table, example_grid, head_table
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["MODELS"]

RNNS = ("vanilla", "peeky", "attention (additive)")
MODELS = (*RNNS, *TRANSFORMERS)
"""The models this page compares, by the names of the catalogue."""
COLOURS = dict(zip(MODELS, (GREY, BLUE, ORANGE, GREEN, PURPLE), strict=True))
ENCODER_DECODER, DECODER_ONLY = TRANSFORMERS
INSIDE, BEYOND = list(range(1, 11)), list(range(11, 21))  # the training lengths, the next ten
SAMPLES = 1000  # held-out inputs per length: the Bahdanau chapter's, so its scores are shared


def _scores(name: str) -> np.ndarray:
    """Exact match (seeds, lengths 1-20), greedy decoding."""
    return np.array([cached_accuracy_by_length(trained, INSIDE + BEYOND, SAMPLES)
                     for trained in reversal_seeds(name)])


@torch.no_grad()
def _step_by_step(trained: TrainedModel, samples: int = 500) -> tuple[int, float, float]:
    """Teacher-forced logits of every step in one pass, against one pass per step."""
    task, model = trained.task, trained.model
    batch = task.sample(samples, held_out_generator(0))
    together = model(batch.inputs, batch.targets).logits  # (B, T, C), one pass
    steps = batch.targets.shape[1]
    # Step t alone: fed only targets[:, :t] (after the start), its last logits: (B, C)
    alone = torch.stack([model(batch.inputs, batch.targets[:, : step + 1]).logits[:, step]
                         for step in range(steps)], dim=1)  # (B, T, C), T passes
    accuracy = (together.argmax(-1) == batch.targets)[batch.targets != 0].float().mean()
    return steps, float((together - alone).abs().max()), float(accuracy)


@recipe("parallel", "teacher forcing: every step in one pass equals one pass per step")
def parallel() -> str:
    lines = []
    for name in TRANSFORMERS:
        steps, difference, accuracy = _step_by_step(reversal_seeds(name)[0])
        lines += [f"{name}, seed 0, 500 held-out inputs, T = {steps} output steps",
                  "  one pass, all steps:       1 forward pass",
                  f"  step t alone, t = 0..{steps - 1}:  {steps} forward passes",
                  f"  largest logit difference:  {difference:.1e}",
                  f"  letters and ends right:    {100 * accuracy:.2f} %"]
    return "```text\n" + "\n".join(lines) + "\n```\n"


@recipe("length", "exact match against input length: three RNNs and two Transformers")
def length() -> Figure:
    lengths = INSIDE + BEYOND
    scores = {name: _scores(name) for name in MODELS}  # (seeds, lengths) per model
    figure = plot_length_generalisation(
        {name: (lengths, runs.mean(axis=0)) for name, runs in scores.items()},
        trained_length=INSIDE[-1])
    axes = figure.axes[0]
    for line, (name, runs) in zip(axes.get_lines(), scores.items(), strict=False):
        line.set_color(COLOURS[name])
        axes.fill_between(lengths, runs.min(axis=0), runs.max(axis=0), color=COLOURS[name],
                          alpha=0.2, lw=0)
    axes.legend(fontsize=8, loc="upper right")
    axes.set_xlabel("input length (letters to reverse)")
    axes.set_ylabel("held-out exact match (mean of 3 seeds)")
    axes.texts[0].set_text("longest in training")
    return figure


@recipe("accuracy", "exact match of the five models, inside and beyond the training lengths")
def accuracy() -> str:
    rows = []
    for name in MODELS:
        runs = _scores(name)
        rows.append([name, mean_range(runs[:, : len(INSIDE)].mean(axis=1)),
                     mean_range(runs[:, len(INSIDE) - 1]), mean_range(runs[:, len(INSIDE)]),
                     mean_range(runs[:, len(INSIDE):].mean(axis=1))])
    return markdown_table(
        ["model", "lengths 1–10 (trained), %", "length 10, %", "length 11, %",
         "lengths 11–20, %"], rows,
        caption=f"Exact match (every letter and the end token right, greedy decoding), "
                f"{SAMPLES:,} held-out inputs per length, averaged over the lengths of the "
                f"column: the mean of seeds 0, 1 and 2 and, in brackets, the lowest and the "
                f"highest seed. The same inputs for every model.")


@recipe("cost", "parameters, training steps, and when each model first reached 99 % exact match")
def cost() -> str:
    rows = []
    for name in MODELS:
        runs = reversal_seeds(name)
        reached = [first_step_reaching(trained.history, 0.99) for trained in runs]
        seconds = [trained.train_seconds * step / trained.config.steps if step else None
                   for trained, step in zip(runs, reached, strict=True)]
        rows.append([name, f"{sum(p.numel() for p in runs[0].model.parameters()):,}",
                     f"{runs[0].config.steps:,}",
                     by_seed(f"{step:,}" if step else "never" for step in reached),
                     by_seed(f"{second:.0f}" if second else "–" for second in seconds)])
    first = reversal_seeds(ENCODER_DECODER)[0]
    return markdown_table(
        ["model", "parameters", "training steps", "first at 99&nbsp;%, step",
         "first at 99&nbsp;%, seconds"], rows,
        caption=f"Every model trained with Adam, batches of {first.config.batch_size}, lengths "
                f"1–10, the learning rate decaying along a cosine; the RNNs at a peak of "
                f"{reversal_seeds('vanilla')[0].config.lr}, the Transformers at {first.config.lr}. "
                f"\"First at 99&nbsp;%\": the first step at which exact match on the training "
                f"monitor (1,000 held-out inputs of lengths 1–10, greedy, scored every 100 "
                f"steps) was 99&nbsp;% or more, for seeds 0 / 1 / 2; \"never\" if it did not "
                f"get there. Seconds: the CPU time of that model's whole training run on the "
                f"build machine (one thread, monitoring included), times the share of its steps "
                f"taken by then; a measurement, which another machine or another run will not "
                f"repeat exactly.")


@recipe("copies", "teacher-forced letter accuracy by the input position copied, 11-20 letters")
def copies() -> Figure:
    names = ("attention (additive)", *TRANSFORMERS)
    results = {name: [cached_copies_by_position(trained, BEYOND)
                      for trained in reversal_seeds(name)]
               for name in names}
    positions = list(range(BEYOND[-1]))
    figure = plot_lengths({name: [run["position"] for run in runs]
                           for name, runs in results.items()},
                          positions, (0, INSIDE[-1] - 1), "positions that hold letters in training")
    axes = figure.axes[0]
    for line, band, name in zip(axes.get_lines(), axes.collections, names, strict=True):
        line.set_color(COLOURS[name])
        band.set_color(COLOURS[name])
    axes.axhline(1 / 8, color=GREY, ls=":", lw=0.8)
    axes.text(INSIDE[-1] - 0.7, 1 / 8 + 0.01, "chance: 1 in 8", fontsize=8, color=GREY,
              ha="right", va="bottom")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=8, loc="upper right")
    axes.set_xlabel("input position of the letter to copy (0 = first letter)")
    axes.set_ylabel("letters right, teacher-forced")
    return figure


LATE = 9  # from this input position on, the decoder-only model is below chance


def letter_step_accuracy(trained: TrainedModel) -> float:
    """Teacher-forced accuracy, from input position ``LATE`` on (inputs of 11-20 letters), over
    only the steps at which the model wrote a letter rather than the end token."""
    result = cached_copies_by_position(trained, BEYOND)
    right, ended, seen = (np.array(result[key][LATE:]) for key in ("position", "ended", "seen"))
    return float((right * seen).sum() / ((1 - ended) * seen).sum())


@recipe("letter_steps", "the decoder-only model's accuracy on the late steps where it wrote a "
        "letter")
def letter_steps() -> str:
    shares = [letter_step_accuracy(trained) for trained in reversal_seeds(DECODER_ONLY)]
    return (f"From position {LATE} on, on the steps where it writes a letter rather than the end "
            f"token, the decoder-only model is right {min(shares):.0%}&nbsp;to "
            f"{max(shares):.0%} of the time, by seed: about chance, one in eight."
            ).replace("%", "&nbsp;%")

# --- What the heads do: the drawing and the tables are in figures.transformer_heads ----------


@recipe("heads", "every head of the encoder-decoder on one input, seed 0")
def heads() -> Figure:
    return example_grid(ENCODER_DECODER)


@recipe("heads_decoder_only", "every head of the decoder-only model on one input, seed 0")
def heads_decoder_only() -> Figure:
    return example_grid(DECODER_ONLY)


@recipe("heads_table", "every head of the encoder-decoder: where it looks, what it costs")
def heads_table() -> str:
    return head_table(ENCODER_DECODER)


@recipe("heads_table_decoder_only", "every head of the decoder-only model: where it looks, "
        "what it costs")
def heads_table_decoder_only() -> str:
    return head_table(DECODER_ONLY)


@recipe("heads_copy_test", "exact match with the copying heads off, and with the others off")
def heads_copy_test() -> str:
    return copy_test_table()
