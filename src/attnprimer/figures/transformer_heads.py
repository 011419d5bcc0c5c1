"""Figures and tables of "What the heads do", a section of the chapter "The Transformer".

Every head of the two Transformers on one input, as a grid; over held-out inputs, where each
head looks ([`head_patterns`][attnprimer.experiments.transformer_heads.head_patterns]) and
what switching it off costs ([`head_ablation`][attnprimer.experiments.transformer_heads.head_ablation]).
[`plot_heads`][attnprimer.figures.transformer_heads.plot_heads] is also what
``attnprimer test reversal-transformer --plot FILE`` draws.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.experiments.transformer_heads import (cached_head_ablation,
                                                      cached_head_patterns, copy_groups)
from attnprimer.figures.plotting import draw_attention
from attnprimer.figures.registry import recipe
from attnprimer.figures.tables import markdown_table, mean_range
from attnprimer.figures.transformer import DECODER_ONLY, ENCODER_DECODER, seeds
from attnprimer.report import head_labels
from attnprimer.site_models import (REVERSAL_EXAMPLE, TRANSFORMER_STEPS, TRANSFORMERS,
                                    site_seeds)
from attnprimer.train import TrainedModel, predict_one
from attnprimer.transformer import DecoderOnly

__all__ = ["example_attention", "plot_heads"]

AXES = {"encoder self": ("input letter", "input letter read"),
        "decoder self": ("output step writes", "step read"),
        "cross": ("output step writes", "input letter read")}
"""What the rows and the columns of each kind of attention are (the decoder-only model's
positions: the token each holds)."""
DECODER_ONLY_AXES = ("token", "token read")


def plot_heads(attention: dict[str, torch.Tensor],
               labels: dict[str, tuple[list[str], list[str]]], *,
               decoder_only: bool = False, width: float = 7.2) -> Figure:
    """Every head's weights (L, S) on one input: a row per attention layer, a column per head.

    ``attention`` is named as the models name it (``"cross 1.2"``), ``labels`` gives the rows'
    and the columns' labels by kind (``"cross"``), as
    [`head_labels`][attnprimer.report.head_labels] makes them. One colour scale, [0, 1].

    Examples:
        >>> weights = {f"cross 1.{head}": torch.eye(2) for head in (1, 2)}
        >>> figure = plot_heads(weights, {"cross": (["B", "A"], ["A", "B"])})
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['head 1', 'head 2']
    """
    order = {kind: index for index, kind in enumerate(AXES)}  # encoder, decoder self, cross
    layers = sorted(dict.fromkeys(name.rpartition(".")[0] for name in attention),
                    key=lambda layer: (order[layer.rpartition(" ")[0]], layer))
    heads = max(int(name.rpartition(".")[2]) for name in attention)
    rows_per_layer = max(len(labels[layer.rpartition(" ")[0]][0]) for layer in layers)
    height = len(layers) * max(0.11 * rows_per_layer + 0.5, 1.4) + 0.4  # inches
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = np.atleast_2d(figure.subplots(len(layers), heads, squeeze=False))
    image = None
    for row, layer in enumerate(layers):
        kind = layer.rpartition(" ")[0]
        query_labels, key_labels = labels[kind]
        ylabel, xlabel = DECODER_ONLY_AXES if decoder_only else AXES[kind]
        for column in range(heads):
            axes = grid[row, column]
            image = draw_attention(axes, attention[f"{layer}.{column + 1}"], query_labels,
                                   key_labels, annotate=False)
            axes.tick_params(labelsize=6 if len(key_labels) > 12 else 7, length=2, pad=1)
            axes.set_aspect("auto")
            axes.set_xlabel(xlabel, fontsize=7, labelpad=1)
            if column == 0:
                axes.set_ylabel(f"{layer}\n{ylabel}", fontsize=8)
            else:
                axes.tick_params(labelleft=False)
            if row == 0:
                axes.set_title(f"head {column + 1}", fontsize=9)
    colorbar = figure.colorbar(image, ax=list(grid.flat), fraction=0.04, pad=0.02, shrink=0.6)
    colorbar.set_label("attention weight")
    return figure


def example_attention(trained: TrainedModel, text: str = REVERSAL_EXAMPLE):
    """The weights of every head on one input, greedy, with their labels."""
    task = trained.task
    tokens = task.encode(text)[: len(text)]  # the letters, no padding: (n,)
    prediction, attention = predict_one(trained.model, tokens)
    decoder_only = isinstance(trained.model, DecoderOnly)
    return attention, head_labels(task, tokens, prediction, decoder_only), decoder_only


def first_seed(name: str) -> TrainedModel:
    """Seed 0 of a Transformer of the catalogue, without loading the others."""
    settings = TRANSFORMERS[name]
    return site_seeds("reversal-transformer", **settings,
                      steps=TRANSFORMER_STEPS[settings["architecture"]])[0].trained()


def _example_grid(name: str) -> Figure:
    attention, labels, decoder_only = example_attention(first_seed(name))
    return plot_heads(attention, labels, decoder_only=decoder_only)


@recipe("heads", "every head of the encoder-decoder on one input, seed 0", chapter="transformer")
def heads() -> Figure:
    return _example_grid(ENCODER_DECODER)


@recipe("heads_decoder_only", "every head of the decoder-only model on one input, seed 0",
        chapter="transformer")
def heads_decoder_only() -> Figure:
    return _example_grid(DECODER_ONLY)
