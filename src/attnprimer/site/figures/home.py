"""Figures of the home page (``docs/index.md``): the idea at a glance, and the chapter map.

The home page is addressed as the chapter ``home``: its artifacts are ``home/<name>.svg``.
One figure from a trained model (the counting model's attention on the primer's example),
and one small figure per chapter, drawn from what that chapter already computed (cached
models and results; nothing here trains or measures anything new). The small figures are
drawn for a column a third of the page wide: few ticks, short labels, no colorbars.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patheffects import withStroke

from attnprimer.block_mask import BlockMask
from attnprimer.positional import sinusoidal_encoding
from attnprimer.site.catalogue import (
    COUNTING_EXAMPLE,
    DIFFERENCE_EXAMPLE,
    REVERSAL_DECODERS,
    REVERSAL_EXAMPLE,
    TRANSFORMER_STEPS,
    TRANSFORMERS,
    site_model,
    site_seeds,
)
from attnprimer.site.experiments.attention_at_scale import KINDS, block_kinds
from attnprimer.site.experiments.attention_over_images import read
from attnprimer.site.experiments.induction_heads import cached_curves, induction_models
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.experiments.qkv import kernel_regression_toy
from attnprimer.site.experiments.rnn_recap import decoder_curves
from attnprimer.site.figures.attention_over_images import example_canvas
from attnprimer.site.figures.length_generalisation import COLOURS, LENGTHS, NAMES, TRAIN_MAX, exact
from attnprimer.site.figures.plotting import (
    BLOCK_COLOURS,
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    draw_attention,
    weight_colorbar,
)
from attnprimer.site.figures.recipes import recipe
from attnprimer.tasks import BLANK
from attnprimer.training.train import predict_one

__all__ = ["length_map", "small_figure"]


def small_figure() -> tuple[Figure, Axes]:
    """A figure for the chapter map (3.2 x 2.4 inches, one plotting area), and its axes."""
    figure = Figure(figsize=(3.2, 2.4), layout="constrained")
    return figure, figure.add_subplot()


@recipe("counting", "the trained counting model's attention on the primer's example")
def counting() -> Figure:
    trained = site_model("counting", seed=0).trained()
    tokens = trained.task.encode(COUNTING_EXAMPLE)
    prediction, attention = predict_one(trained.model, tokens)
    keys = ["_" if char == BLANK else char for char in COUNTING_EXAMPLE]
    figure = Figure(figsize=(6.2, 2.5), layout="constrained")  # narrower than the chapter's
    axes = figure.add_subplot()
    image = draw_attention(axes, attention["encoder-decoder"], trained.task.step_labels(prediction),
                           keys)
    axes.set_xlabel("input letter (_ = blank)")
    axes.set_ylabel("query: count")
    weight_colorbar(figure, image, axes)
    return figure


def length_map(lengths: list[int], runs: dict[str, tuple[np.ndarray, str]], *,
               longest: int | None = None, xlabel: str = "letters to reverse") -> Figure:
    """Exact match against length, each model's seeds (seeds, lengths) as mean and range, in its
    colour; the dashed line is the longest training input (the reversal models' unless
    ``longest``)."""
    if longest is None:
        longest = site_model("reversal", **REVERSAL_DECODERS["vanilla"]).task.max_len
    figure, axes = small_figure()
    for label, (scores, colour) in runs.items():
        axes.fill_between(lengths, scores.min(0), scores.max(0), color=colour, alpha=0.25, lw=0)
        axes.plot(lengths, scores.mean(0), color=colour, lw=1.6, label=label)
    axes.axvline(longest, color=GREY, ls="--", lw=0.8)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("exact match")
    axes.legend(fontsize=6 if len(runs) > 3 else 8, loc="lower left")
    return figure


@recipe("map_rnn_recap", "chapter map: exact match against length, vanilla vs attention decoder")
def map_rnn_recap() -> Figure:
    curves = decoder_curves()
    return length_map(curves.lengths, {"vanilla": (curves.array("vanilla"), GREY),
                                       "attention": (curves.array("attention (additive)"), ORANGE)})


@recipe("map_bahdanau", "chapter map: the additive attention model's alignment on the example")
def map_bahdanau() -> Figure:
    trained = site_model("reversal", **REVERSAL_DECODERS["attention (additive)"]).trained()
    prediction, attention = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    output = trained.task.decode_output(prediction).rstrip(".")
    weights = attention["encoder-decoder"][: len(output), : len(REVERSAL_EXAMPLE)]
    figure, axes = small_figure()
    draw_attention(axes, weights, list(output), list(REVERSAL_EXAMPLE), annotate=False)
    axes.tick_params(labelsize=8, length=0)
    axes.set_xlabel("input letter")
    axes.set_ylabel("output letter")
    return figure


@recipe("map_qkv", "chapter map: attention pooling as kernel regression, one width")
def map_qkv() -> Figure:
    toy = kernel_regression_toy(widths=(0.2,), samples=40, points=120)
    figure, axes = small_figure()
    axes.scatter(toy.x.numpy(), toy.y.numpy(), s=8, color=GREY, label="keys, values")
    axes.plot(toy.grid.numpy(), toy.estimates[0].numpy(), color=BLUE, lw=1.8,
              label="attention output")
    axes.set_xlabel("query")
    axes.set_ylabel("value")
    axes.legend(fontsize=8, loc="upper left")
    return figure


@recipe("map_self_attention", "chapter map: the difference model's output steps reading each other")
def map_self_attention() -> Figure:
    trained = site_model("difference", self_att=True).trained()
    _, attention = predict_one(trained.model, trained.task.encode(DIFFERENCE_EXAMPLE))
    labels = trained.task.output_labels()
    figure, axes = small_figure()
    draw_attention(axes, attention["self"], labels, labels)
    axes.tick_params(labelsize=8, length=0)
    axes.set_xlabel("output step read")
    axes.set_ylabel("output step")
    return figure


@recipe("map_positional_encoding", "chapter map: the sinusoidal encoding, position by dimension")
def map_positional_encoding() -> Figure:
    encoding = sinusoidal_encoding(48, 48)  # (L, D)
    figure, axes = small_figure()
    axes.imshow(encoding.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    axes.set_xlabel("dimension")
    axes.set_ylabel("position")
    return figure



@recipe("map_transformer", "chapter map: exact match against length, attention RNN vs Transformer")
def map_transformer() -> Figure:
    settings = TRANSFORMERS["Transformer (encoder-decoder)"]
    models = {
        "attention RNN": (site_seeds("reversal", **REVERSAL_DECODERS["attention (additive)"]),
                          ORANGE),
        "Transformer": (site_seeds("reversal-transformer", **settings,
                                   steps=TRANSFORMER_STEPS[settings["architecture"]]), GREEN),
    }
    lengths = list(range(1, 21))
    # The chapter's 1,000 held-out inputs per length: its cached scores, shared.
    return length_map(lengths, {
        label: (np.array([cached_accuracy_by_length(model.trained(), lengths, 1000)
                          for model in seeds]), colour)  # (seeds, lengths)
        for label, (seeds, colour) in models.items()})


@recipe("map_length_generalisation", "chapter map: exact match on copy against length, per "
        "position scheme")
def map_length_generalisation() -> Figure:
    schemes = ("sinusoidal", "rotary", "none", "alibi", "relative")
    return length_map(LENGTHS, {NAMES[scheme].removesuffix(" (sinusoidal)"):
                                (exact("copy", scheme), COLOURS[scheme]) for scheme in schemes},
                      longest=TRAIN_MAX, xlabel="letters to copy")


@recipe("map_attention_at_scale", "chapter map: the blocks tiled attention computes under a "
        "causal sliding window")
def map_attention_at_scale() -> Figure:
    kinds = block_kinds(4096, 256, BlockMask(causal=True, window=256))  # 16 x 16 blocks
    figure, axes = small_figure()
    axes.imshow(np.array([[KINDS.index(kind) for kind in row] for row in kinds]),
                cmap=ListedColormap(BLOCK_COLOURS), vmin=0, vmax=2)
    axes.set_xticks(np.arange(17) - 0.5, minor=True)
    axes.set_yticks(np.arange(17) - 0.5, minor=True)
    axes.grid(which="minor", color=GREY, lw=0.4)
    axes.tick_params(which="both", length=0, labelsize=8)
    axes.set_xlabel("key block")
    axes.set_ylabel("query block")
    return figure


@recipe("map_attention_over_images", "chapter map: where the patch reader looks at each step of a "
        "held-out canvas")
def map_attention_over_images() -> Figure:
    trained = site_model("digit-reading", seed=0).trained()
    image, _ = example_canvas(trained)
    _, weights = read(trained, image[None])  # (1, T, N)
    task = trained.task
    rows, cols = task.height // task.patch, task.width // task.patch
    digits = weights[0, :-1]  # the digit steps' maps, not the end's: (T - 1, N)
    figure, axes = small_figure()
    extent = (-0.5, task.width - 0.5, task.height - 0.5, -0.5)
    axes.imshow(image.numpy(), cmap="Greys", vmin=0, vmax=1, extent=extent)
    axes.imshow(digits.amax(0).reshape(rows, cols).numpy(), cmap="Blues", alpha=0.7,
                extent=extent, interpolation="nearest")
    for step, row in enumerate(digits):
        grid = row.reshape(rows, cols)
        y = float((grid.sum(1) * torch.arange(rows)).sum()) * task.patch + task.patch / 2
        x = float((grid.sum(0) * torch.arange(cols)).sum()) * task.patch + task.patch / 2
        axes.text(x, y, str(step), ha="center", va="center", fontsize=10, color="black",
                  fontweight="bold", path_effects=[withStroke(linewidth=2.5, foreground="white")])
    axes.set_xticks([0, task.width - 1])
    axes.set_yticks([0, task.height - 1])
    axes.tick_params(labelsize=8)
    axes.set_xlabel("column (pixels)")
    axes.set_ylabel("row")
    return figure


@recipe("map_induction_heads", "chapter map: the loss on a repeated segment over training, "
        "with its sudden drop")
def map_induction_heads() -> Figure:
    figure, axes = small_figure()
    for seed, trained in enumerate(induction_models(2)):
        result = cached_curves(trained)
        axes.plot(result.steps, result.first_loss, color=BLUE, lw=1,
                  label="first occurrence" if seed == 0 else None)
        axes.plot(result.steps, result.repeat_loss, color=ORANGE, lw=1,
                  label="repeat" if seed == 0 else None)
    axes.set_ylim(0, 3.6)
    axes.set_xlabel("training step")
    axes.set_ylabel("loss per letter")
    axes.tick_params(labelsize=8)
    axes.legend(fontsize=7, loc="lower left")
    return figure
