"""Pure plots of attention mechanisms on synthetic data: no trained model in them.

Masks applied to one set of scores, which outputs a causal mask keeps fixed, and measured
cost against the sequence length. The self-attention chapter shows all three; the chapters
on decoding and on attention at scale draw on the same pictures.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.attention import masked_softmax
from attnprimer.masks import causal_mask, local_mask, padding_mask
from attnprimer.multihead import MultiHeadAttention
from attnprimer.site.bench.attention_cost import CostPoint
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, HEATMAP, ORANGE, weight_colorbar

__all__ = ["plot_attention_cost", "plot_attention_patterns", "plot_causal_demo"]


def plot_attention_patterns(length: int = 8, window: int = 2, padding: int = 3,
                            seed: int = 0) -> Figure:
    """One set of random self-attention scores under soft, hard, padded, causal and local attention.

    Examples:
        >>> [axes.get_title() for axes in plot_attention_patterns().axes[:2]]
        ['soft, global', 'hard (argmax)']
    """
    generator = torch.Generator().manual_seed(seed)
    scores = 1.5 * torch.randn(length, length, generator=generator)  # (L, L)
    soft = masked_softmax(scores)
    hard = torch.nn.functional.one_hot(scores.argmax(-1), length).float()
    pad = padding_mask([length - padding], length)  # (1, S): the last `padding` keys are padding
    panels = {
        "soft, global": soft,
        "hard (argmax)": hard,
        f"padding (last {padding} keys)": masked_softmax(scores, pad),
        "causal": masked_softmax(scores, causal_mask(length)),
        f"local (|i - j| <= {window})": masked_softmax(scores, local_mask(length, window)),
    }
    figure = Figure(figsize=(9, 6.2), layout="constrained")
    grid = figure.subplots(2, 3)
    for index, axes in enumerate(grid.flat):
        if index >= len(panels):
            axes.set_visible(False)
            continue
        title, weights = list(panels.items())[index]
        image = axes.imshow(weights.numpy(), cmap=HEATMAP, vmin=0, vmax=1)
        axes.set_title(title, fontsize=10)
        axes.set_xticks(range(length))
        axes.set_yticks(range(length))
        axes.set_xlabel("key position j")
        axes.set_ylabel("query position i")
    weight_colorbar(figure, image, list(grid.flat))
    return figure


def plot_causal_demo(length: int = 10, changed_from: int = 6, dim: int = 16,
                     seed: int = 0) -> Figure:
    """Change the inputs from one position on; see which outputs of self-attention move.

    A randomly initialised 2-head [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention]
    runs on a sequence and on a copy whose positions ``changed_from`` and
    later are replaced. Bars show how far each position's output moved, with
    and without a causal mask.

    Examples:
        >>> figure = plot_causal_demo()
        >>> figure.axes[0].get_xlabel()
        'position'
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        attention = MultiHeadAttention(dim, num_heads=2)
    x = torch.randn(1, length, dim, generator=generator)  # (B, L, D)
    changed = x.clone()
    changed[:, changed_from:] = torch.randn(1, length - changed_from, dim, generator=generator)
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    axes = figure.add_subplot()
    positions = np.arange(length)
    with torch.no_grad():
        for offset, (label, mask, colour) in enumerate((
            ("no mask", None, ORANGE),
            ("causal mask", causal_mask(length), BLUE),
        )):
            moved = (attention(changed, mask=mask)[0] - attention(x, mask=mask)[0])  # (1, L, D)
            size = moved[0].abs().amax(dim=-1).numpy()  # (L,) largest change per position
            axes.bar(positions + (offset - 0.5) * 0.4, size, width=0.4, color=colour, label=label)
    axes.axvspan(changed_from - 0.5, length - 0.5, color=GREY, alpha=0.12, lw=0)
    axes.text(changed_from - 0.4, axes.get_ylim()[1] * 0.92, "inputs changed here", fontsize=8)
    axes.set_xticks(positions)
    axes.set_xlabel("position")
    axes.set_ylabel("largest change of the output")
    axes.legend(fontsize=8, loc="upper left")
    return figure


def plot_attention_cost(points: Iterable[CostPoint],
                        colours: Sequence[str] = (ORANGE, BLUE, GREEN)) -> Figure:
    """Time and peak memory of attention against the sequence length, log-log.

    On log-log axes a cost proportional to L^k is a straight line of slope k;
    each legend entry gives the slope fitted to the three longest sequences. Grey guides show slopes
    2 (dashed) and 1 (dotted). Points with
    no measurable memory are left out.

    Args:
        points: the measurements, as made by
            [`measure_attention_cost`][attnprimer.site.bench.attention_cost.measure_attention_cost].
        colours: one per implementation, in the order they first appear in ``points``.

    Examples:
        >>> points = [CostPoint("a", 8, 1e-3, 2**20), CostPoint("a", 16, 4e-3, 2**22)]
        >>> figure = plot_attention_cost(points)
        >>> [axes.get_ylabel() for axes in figure.axes]
        ['time per call (ms)', 'peak extra memory (MiB)']
        >>> [text.get_text() for text in figure.axes[0].get_legend().get_texts()][0]
        'a (slope 2.0)'
    """
    points = list(points)
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    names = list(dict.fromkeys(point.implementation for point in points))
    anchors = {}
    for colour, name in zip(colours, names, strict=False):
        mine = sorted((point for point in points if point.implementation == name),
                      key=lambda point: point.length)
        lengths = np.asarray([point.length for point in mine], dtype=float)
        series = {
            left: np.asarray([point.seconds * 1e3 for point in mine]),
            right: np.asarray([np.nan if not point.peak_bytes else point.peak_bytes / 2**20
                               for point in mine]),
        }
        for axes, values in series.items():
            slope = _log_log_slope(lengths[-3:], values[-3:])
            label = name if not np.isfinite(slope) else f"{name} (slope {slope:.1f})"
            axes.plot(lengths, values, color=colour, marker="o", label=label)
            anchors.setdefault(axes, (lengths, values[-1]))
    for axes, (lengths, top) in anchors.items():
        if np.isfinite(top):
            for power, style, label in ((2, "--", "∝ L²"), (1, ":", "∝ L")):
                axes.plot(lengths, top * (lengths / lengths[-1]) ** power, color=GREY, ls=style,
                          lw=0.9, label=label)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("sequence length L")
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8, loc="upper left")
    left.set_ylabel("time per call (ms)")
    right.set_ylabel("peak extra memory (MiB)")
    return figure


def _log_log_slope(lengths: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of log(values) against log(lengths); NaN if any value is missing."""
    if len(values) < 2 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        return float("nan")
    return float(np.polyfit(np.log(lengths), np.log(values), 1)[0])
