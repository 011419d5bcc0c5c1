"""Pure plots of position encodings on synthetic data: no trained model in them.

The sinusoidal encoding and the similarity of two positions against their offset, the score
of one query-key pair under rotary and added encodings, and what ALiBi and a learned relative
bias add to the scores. The positional-encoding chapter shows all three
([`figures.positional_encoding`][attnprimer.site.figures.positional_encoding]).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.positional import (
    RelativePositionBias,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    sinusoidal_encoding,
)
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE

__all__ = ["plot_rotary_scores", "plot_score_biases", "plot_sinusoidal"]


def plot_sinusoidal(length: int = 64, dim: int = 64, starts: Iterable[int] = (0, 10, 30)) -> Figure:
    """The sinusoidal encoding as a heatmap, and the dot product of two positions against their
    offset.

    Examples:
        >>> figure = plot_sinusoidal(length=16, dim=8, starts=(0, 4))
        >>> [axes.get_xlabel() for axes in figure.axes[:2]]
        ['dimension', 'offset k']
    """
    starts = list(starts)
    encoding = sinusoidal_encoding(length, dim)  # (L, D)
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
    image = left.imshow(encoding.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    left.set_xlabel("dimension")
    left.set_ylabel("position")
    left.set_title(f"sinusoidal encoding (L = {length}, D = {dim})")
    figure.colorbar(image, ax=left, label="value")
    reach = length - max(starts)
    styles = [("-", 3.0), ("--", 1.8), (":", 1.8), ("-.", 1.2)]
    colours = (BLUE, ORANGE, GREEN, GREY)
    for colour, (style, width), start in zip(colours, styles, starts, strict=False):
        offsets = np.arange(-start, reach)
        products = (encoding[start] * encoding[start + offsets]).sum(-1).numpy()
        right.plot(offsets, products, color=colour, ls=style, lw=width,
                   label=f"from position {start}")
    right.set_xlabel("offset k")
    right.set_ylabel("p(i) · p(i + k)")
    right.set_title("similarity depends on the offset only")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    return figure


def plot_rotary_scores(dim: int = 16, length: int = 12, seed: int = 0) -> Figure:
    """The score of one query and one key placed at every pair of positions: rotary, added."""
    generator = torch.Generator().manual_seed(seed)
    query, key = torch.randn(2, dim, generator=generator)
    rotated_queries = apply_rotary(query.expand(length, dim))  # (L, D): the query at every m
    rotated_keys = apply_rotary(key.expand(length, dim))  # (L, D): the key at every n
    encoding = sinusoidal_encoding(length, dim)
    panels = {
        "rotary: (R_m q) · (R_n k)": rotated_queries @ rotated_keys.T,
        "added: (q + p_m) · (k + p_n)": (query + encoding) @ (key + encoding).T,
    }
    figure = Figure(figsize=(9, 3.9), layout="constrained")
    for axes, (title, scores) in zip(figure.subplots(1, 2), panels.items(), strict=True):
        limit = float(scores.abs().max())
        image = axes.imshow(scores.numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit)
        axes.set_title(title, fontsize=10)
        axes.set_xlabel("key position n")
        axes.set_ylabel("query position m")
        figure.colorbar(image, ax=axes, label="score q · k", fraction=0.05)
    return figure


def plot_score_biases(heads: int = 8, length: int = 12) -> Figure:
    """What ALiBi and a learned relative bias add to the scores: (L, S) tables of one head."""
    relative = RelativePositionBias(1, max_offset=3)
    with torch.no_grad():  # a table that prefers the key one step to the left, clipped at ±3
        relative.table[0] = torch.tensor([-3.0, -1.5, 2.0, 0.0, -0.5, -1.0, -2.0])
    slope = f"1/{1 / float(alibi_slopes(heads)[0]):.0f}"
    panels = {f"ALiBi, head 1 of {heads} (slope {slope})": alibi_bias(heads, length)[0],
              "ALiBi, causal, same head": alibi_bias(heads, length, causal=True)[0],
              "relative bias (a table per offset, ±3)": relative(length)[0].detach()}
    figure = Figure(figsize=(11, 3.6), layout="constrained")
    for axes, (title, bias) in zip(figure.subplots(1, 3), panels.items(), strict=True):
        image = axes.imshow(bias.numpy(), cmap="RdBu_r", vmin=-6, vmax=6)
        axes.set_title(title, fontsize=9)
        axes.set_xlabel("key position n")
        axes.set_ylabel("query position m")
    figure.colorbar(image, ax=figure.axes, label="added to the score", fraction=0.03)
    return figure
