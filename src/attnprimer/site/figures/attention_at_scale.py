"""Figures and tables of the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

The online softmax walked block by block on a small example, and the blocks a tiled pass
computes or skips under each mask. The measured cost is in
[`scale_measured`][attnprimer.site.figures.scale_measured]. No trained model is involved.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from attnprimer.block_mask import BlockMask
from attnprimer.online_softmax import online_steps
from attnprimer.site.experiments.attention_at_scale import KINDS, block_counts, block_kinds
from attnprimer.site.figures.plotting import BLOCK_COLOURS, BLUE, GREY, INK, ORANGE
from attnprimer.site.figures.recipes import recipe

__all__ = ["WALK_SCORES", "WALK_VALUES", "plot_block_kinds", "plot_online_walk"]

WALK_SCORES = (0.5, 1.0, -0.5, 0.2, 2.5, 1.5, 0.0, 2.0, 1.0, 2.2, -1.0, 0.3)
"""The scores of one query against 12 keys, read in blocks of 4 by the walk-through."""
WALK_VALUES = (1.0, 3.0, -2.0, 0.0, 4.0, 2.0, -1.0, 5.0, 1.0, 3.0, 0.0, -2.0)
"""One number per key (Dv = 1), so the running average is a number too."""
WALK_BLOCK = 4


def plot_online_walk(scores: torch.Tensor, values: torch.Tensor, block_size: int) -> Figure:
    """The online softmax of one row, block by block: scores, running maximum, running sum
    (what was kept, rescaled, and what the block added) and running average.

    Args:
        scores: (S,) one query's scores.
        values: (S,) one number per key.
        block_size: keys per block.

    Examples:
        >>> figure = plot_online_walk(torch.tensor([0.0, 1.0, 2.0]), torch.ones(3), 2)
        >>> [axes.get_xlabel() for axes in figure.axes]
        ['key j', 'after block', 'after block', 'after block']
    """
    states = list(online_steps(scores, values[:, None], block_size))
    maxima = [float(state.maximum) for state in states]
    sums = [float(state.normaliser) for state in states]
    averages = [float(state.total) / float(state.normaliser) for state in states]
    kept = [0.0] + [sums[b - 1] * np.exp(maxima[b - 1] - maxima[b])
                    for b in range(1, len(states))]
    added = [total - old for total, old in zip(sums, kept, strict=True)]
    exact_sum = float(torch.exp(scores - scores.max()).sum())
    exact_average = float(torch.softmax(scores, 0) @ values)
    blocks = np.arange(1, len(states) + 1)

    figure = Figure(figsize=(10, 6.2), layout="constrained")
    grid = figure.add_gridspec(2, 3, height_ratios=(1.15, 1))
    top = figure.add_subplot(grid[0, :])
    keys = np.arange(len(scores))
    top.bar(keys, scores.numpy(), color=BLUE, width=0.7, label="score x_j")
    top.set_ylim(min(0.0, float(scores.min())) - 0.3, float(scores.max()) * 1.45 + 0.3)
    for b, begin in enumerate(range(0, len(scores), block_size)):
        end = min(begin + block_size, len(scores))
        if b % 2 == 0:
            top.axvspan(begin - 0.5, end - 0.5, color=GREY, alpha=0.12, lw=0)
        top.hlines(maxima[b], begin - 0.45, end - 0.55, color=ORANGE, lw=2.2,
                   label="running maximum m after the block" if b == 0 else None)
        top.text((begin + end - 1) / 2, top.get_ylim()[1] - 0.1,
                 f"block {b + 1}: m = {maxima[b]:g}", ha="center", va="top", fontsize=9,
                 color=INK)
    top.axhline(0, color=INK, lw=0.6)
    top.set_xticks(keys)
    top.set_xlabel("key j")
    top.set_ylabel("score")
    top.set_title(f"One query, {len(scores)} keys, read {block_size} at a time")
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.88))

    ax_max, ax_sum, ax_avg = (figure.add_subplot(grid[1, i]) for i in range(3))
    ax_max.plot(blocks, maxima, color=ORANGE, marker="o")
    ax_max.axhline(float(scores.max()), color=GREY, ls="--", lw=1, label="whole row")
    ax_max.set_ylabel("running maximum $m$")
    ax_max.set_title("the maximum can only grow")
    ax_sum.bar(blocks, kept, color=GREY, width=0.6,
               label="kept sum × exp(m_old − m_new)")
    ax_sum.bar(blocks, added, bottom=kept, color=BLUE, width=0.6, label="this block's sum")
    ax_sum.axhline(exact_sum, color=INK, ls="--", lw=1, label="whole row")
    for b in range(1, len(states)):
        factor = np.exp(maxima[b - 1] - maxima[b])
        ax_sum.annotate(f"× {factor:.2f}", (blocks[b], kept[b]), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8,
                        color=INK)
    ax_sum.set_ylim(0, exact_sum * 1.5)
    ax_sum.set_ylabel("running sum s")
    ax_sum.set_title("old sum rescaled, block added")
    ax_avg.plot(blocks, averages, color=BLUE, marker="o", label="running average")
    ax_avg.axhline(exact_average, color=INK, ls="--", lw=1, label="softmax(x) · v, whole row")
    ax_avg.set_ylabel("weighted average of v so far")
    ax_avg.set_title("exact after the last block")
    for axes, where in ((ax_max, "lower right"), (ax_sum, "upper left"),
                        (ax_avg, "lower right")):
        axes.set_xticks(blocks)
        axes.set_xlabel("after block")
        axes.legend(fontsize=7.5, loc=where)
        axes.grid(alpha=0.3, axis="y")
    return figure


@recipe("online_walk", "the online softmax of one row walked block by block")
def online_walk() -> Figure:
    scores = torch.tensor(WALK_SCORES, dtype=torch.float64)
    values = torch.tensor(WALK_VALUES, dtype=torch.float64)
    return plot_online_walk(scores, values, WALK_BLOCK)


BLOCK_EXAMPLE = {"length": 2048, "block_size": 256, "window": 256, "key_length": 1300}
BLOCK_MASKS = {
    "no mask": BlockMask(),
    "causal": BlockMask(causal=True),
    f"causal, window {BLOCK_EXAMPLE['window']}": BlockMask(causal=True,
                                                           window=BLOCK_EXAMPLE["window"]),
    f"padding: {BLOCK_EXAMPLE['key_length']} real keys": BlockMask(
        key_lengths=torch.tensor([BLOCK_EXAMPLE["key_length"]])),
}
BLOCK_MAP = ListedColormap(BLOCK_COLOURS)


def plot_block_kinds(length: int, block_size: int, masks: dict[str, BlockMask]) -> Figure:
    """For each mask, which (query block, key block) pairs a tiled pass skips, computes with a
    mask, or computes whole.

    Examples:
        >>> figure = plot_block_kinds(8, 4, {"causal": BlockMask(causal=True)})
        >>> figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()
        ('key block', 'query block')
    """
    starts = range(0, length, block_size)
    counts = block_counts(length, block_size, masks)
    figure = Figure(figsize=(2.6 * len(masks) + 0.4, 3.3), layout="constrained")
    for axes, (name, mask) in zip(figure.subplots(1, len(masks), squeeze=False)[0],
                                  masks.items(), strict=True):
        kinds = np.array([[KINDS.index(kind) for kind in row]
                          for row in block_kinds(length, block_size, mask)])
        axes.imshow(kinds, cmap=BLOCK_MAP, vmin=0, vmax=2)
        axes.set_xticks(range(len(starts)))
        axes.set_yticks(range(len(starts)))
        axes.set_xticks(np.arange(len(starts) + 1) - 0.5, minor=True)
        axes.set_yticks(np.arange(len(starts) + 1) - 0.5, minor=True)
        axes.grid(which="minor", color=GREY, lw=0.6)
        axes.tick_params(which="minor", length=0)
        axes.set_xlabel("key block")
        axes.set_ylabel("query block")
        tally = counts[name]
        computed = tally["masked"] + tally["whole"]
        axes.set_title(f"{name}\n{computed} of {len(starts) ** 2} computed", fontsize=9.5)
    figure.legend(handles=[Patch(facecolor=colour, edgecolor=GREY, label=kind)
                           for kind, colour in zip(KINDS, BLOCK_COLOURS, strict=True)],
                  loc="outside lower center", ncols=3, fontsize=8.5)
    return figure


@recipe("blocks", "the blocks a tiled pass computes, masks, or skips, under four masks")
def blocks() -> Figure:
    return plot_block_kinds(BLOCK_EXAMPLE["length"], BLOCK_EXAMPLE["block_size"], BLOCK_MASKS)
