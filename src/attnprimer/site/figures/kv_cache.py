"""Figures and tables of the key/value cache and of fewer key/value heads, for the chapter
"Attention at scale" (``docs/chapters/attention-at-scale.md``).

* the causal mask of a cached step, aligned bottom-right, beside the top-left one that is
  wrong there (drawn from ``torch.tril``, no model);
* cached greedy decoding against full recomputation on the three trained decoder-only seeds
  of the Transformer chapter
  ([`cached_equality`][attnprimer.site.experiments.kv_cache.cached_equality]);
* tokens per second and memory against the tokens generated, cache on and off, measured on a
  larger untrained model
  ([`cached_decoding_cost`][attnprimer.site.experiments.kv_cache.cached_decoding_cost]),
  and the speed of the trained model itself;
* the cache bytes per token of multi-head, grouped-query and multi-query attention, counted
  from the sizes of the tensors the caches hold.

The recipes are filed under the chapter ``attention-at-scale`` (``recipe(..., chapter=...)``).
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from attnprimer.site.bench.machine import describe
from attnprimer.site.catalogue import reversal_seeds
from attnprimer.site.experiments.kv_cache import (
    LARGER,
    PROMPT,
    DecodingPoint,
    cache_table,
    cached_decoding_cost,
    cached_decoding_run,
    cached_equality,
    cached_site_model_speed,
)
from attnprimer.site.figures.plotting import BLUE, GREY, ORANGE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table
from attnprimer.site.figures.transformer import DECODER_ONLY
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.transformer import DecoderOnly

__all__ = ["plot_cached_masks", "plot_decoding_cost"]

CHAPTER = "attention-at-scale"
MASK_COLOURS = ListedColormap(["white", BLUE, ORANGE])  # masked, may attend, wrongly allowed


def plot_cached_masks(cached: int = 5, new: int = 3) -> Figure:
    """The causal mask of ``new`` queries after ``cached`` positions: one pass over all of
    them, the cached step aligned bottom-right, and the top-left alignment that is wrong here.

    Examples:
        >>> [axes.get_title().split(":")[0] for axes in plot_cached_masks().axes]
        ['one pass over all 8 positions', 'cached step, bottom-right', 'top-left, tril(ones(L, S))']
    """
    total = cached + new
    ones = torch.ones(new, total, dtype=torch.bool)  # (L, S)
    right = torch.tril(ones, diagonal=total - new)  # (L, S), bottom-right
    wrong = torch.tril(ones)  # (L, S), top-left
    full = torch.tril(torch.ones(total, total, dtype=torch.bool))  # (S, S)
    figure = Figure(figsize=(10, 3.6), layout="constrained")
    axes_full, axes_right, axes_wrong = figure.subplots(
        1, 3, gridspec_kw={"width_ratios": [1, 1, 1]})
    panels = (
        (axes_full, full.int(), range(total),
         f"one pass over all {total} positions: (S, S)"),
        (axes_right, right.int(), range(cached, total),
         "cached step, bottom-right:\ntril(ones(L, S), diagonal=S - L)"),
        # 2 where the top-left triangle hides a key the query may read
        (axes_wrong, (wrong.int() + (right & ~wrong).int() * 2),
         range(cached, total),
         "top-left, tril(ones(L, S)): wrong here;\norange: keys it hides from the query"),
    )
    for axes, values, rows, title in panels:
        axes.imshow(values.numpy(), cmap=MASK_COLOURS, vmin=0, vmax=2)
        axes.set_title(title, fontsize=9)
        axes.set_xticks(range(total))
        axes.set_yticks(range(len(rows)), [str(row) for row in rows])
        axes.set_xticks(np.arange(-0.5, total), minor=True)
        axes.set_yticks(np.arange(-0.5, len(rows)), minor=True)
        axes.grid(which="minor", color=GREY, lw=0.5)
        axes.tick_params(which="minor", length=0)
        axes.set_xlabel("key position j")
        axes.set_ylabel("query position i")
    for axes in (axes_right, axes_wrong):
        axes.axvline(cached - 0.5, color="black", lw=1.5)
        axes.set_xlabel(f"key position j (0-{cached - 1} cached, "
                        f"{cached}-{total - 1} new)")
    return figure


def plot_decoding_cost(points: list[DecodingPoint]) -> Figure:
    """Tokens per second (left) and memory (right) against the tokens generated, cache on
    and off.

    Examples:
        >>> points = [DecodingPoint(True, 8, 0.1, 1024, 2048),
        ...           DecodingPoint(True, 16, 0.2, 2048, 4096),
        ...           DecodingPoint(False, 8, 0.2, 0, 4096),
        ...           DecodingPoint(False, 16, 0.8, 0, 8192)]
        >>> [axes.get_ylabel() for axes in plot_decoding_cost(points).axes]
        ['tokens per second', 'memory (MiB)']
    """
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    for cache, colour, name in ((True, BLUE, "with the cache"),
                                (False, ORANGE, "recomputing everything")):
        mine = sorted((point for point in points if point.cache == cache),
                      key=lambda point: point.length)
        lengths = [point.length for point in mine]
        left.plot(lengths, [point.tokens_per_second for point in mine], color=colour,
                  marker="o", label=name)
        peaks = [np.nan if not point.peak_bytes else point.peak_bytes / 2**20
                 for point in mine]
        right.plot(lengths, peaks, color=colour, marker="o", label=f"{name}: peak, measured")
        if cache:
            right.plot(lengths, [point.cache_bytes / 2**20 for point in mine], color=colour,
                       ls="--", marker="x", label="the cache's keys and values")
    # Plain numbers on the log axes, at 1, 2 and 5 times a power of ten
    plain = FuncFormatter(lambda value, _: f"{value:g}" if f"{value:e}"[0] in "125" else "")
    for axes in (left, right):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xticks(lengths, [str(length) for length in lengths])
        axes.yaxis.set_major_formatter(plain)
        axes.yaxis.set_minor_formatter(plain)
        axes.tick_params(axis="y", which="minor", labelsize=7)
        axes.set_xlabel("tokens generated")
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8)
    left.set_ylabel("tokens per second")
    right.set_ylabel("memory (MiB)")
    return figure


@recipe("kv_mask", "the causal mask of a cached step: bottom-right, not top-left",
        chapter=CHAPTER)
def kv_mask() -> Figure:
    return plot_cached_masks()


@recipe("kv_equal", "cached greedy decoding against full recomputation, three trained seeds",
        chapter=CHAPTER)
def kv_equal() -> str:
    lines = []
    for seed, trained in enumerate(reversal_seeds(DECODER_ONLY)):
        result = cached_equality(trained)
        lines += [f"{DECODER_ONLY}, seed {seed}:",
                  (f"  {result['inputs']:,} held-out inputs of 1-20 letters, "
                   f"{result['padded']:,} padded,"),
                  f"  {result['beyond training']:,} longer than any in training",
                  f"  every written token the same:  {'yes' if result['same tokens'] else 'NO'}",
                  f"  largest logit difference:      {result['largest difference']:.1e}"]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.2f}"


@recipe("kv_cost", "tokens per second and memory against tokens generated, cache on and off",
        chapter=CHAPTER, alone=True)
def kv_cost() -> Figure:
    return plot_decoding_cost(cached_decoding_cost(reversal_seeds(DECODER_ONLY)[0]))


@recipe("kv_cost_table", "the measured decoding numbers, cache on and off",
        chapter=CHAPTER, alone=True)
def kv_cost_table() -> str:
    run = cached_decoding_run(reversal_seeds(DECODER_ONLY)[0])
    points = [DecodingPoint(*point) for point in run["points"]]
    by = {(point.cache, point.length): point for point in points}
    rows = []
    for length in sorted({point.length for point in points}):
        on, off = by[True, length], by[False, length]
        rows.append([f"{length:,}",
                     f"{on.tokens_per_second:.0f} / {length / on.median_seconds:.0f}",
                     f"{off.tokens_per_second:.1f} / {length / off.median_seconds:.1f}",
                     f"{on.tokens_per_second / off.tokens_per_second:.1f}×",
                     _mib(on.cache_bytes), _mib(on.peak_bytes), _mib(off.peak_bytes)])
    spread = max((point.peak_spread_bytes or 0 for point in points), default=0)
    dim, heads, layers = LARGER["dim"], LARGER["heads"], LARGER["layers"]
    return markdown_table(
        ["tokens generated", "tokens/s, cache", "tokens/s, none", "speed-up",
         "cache (MiB)", "peak, cache (MiB)", "peak, none (MiB)"], rows,
        caption=f"D = {dim}, H = {heads}, {layers} blocks, a prompt of {PROMPT} tokens. "
                f"Tokens/s from the shortest / the median of {run['repeats']} decodings; peaks "
                f"within {spread / 2**20:.2f} MiB over 3 decodings, read to about 1 MiB. "
                f"Measured at build on {describe(run['before'], run['after'])}.")


@recipe("kv_site_speed", "the trained decoder-only model decoding, cache on and off",
        chapter=CHAPTER, alone=True)
def kv_site_speed() -> str:
    result = cached_site_model_speed(reversal_seeds(DECODER_ONLY)[0])
    on, off = result["seconds with cache"], result["seconds without"]
    tokens = result["tokens"]
    return "```text\n" + "\n".join([
        f"{DECODER_ONLY}, seed 0:",
        f"  100 held-out inputs of 20 letters, {tokens:,} tokens",
        "                   shortest   median",
        (f"  with the cache:  {on * 1e3:7.1f} ms {result['median with cache'] * 1e3:7.1f} ms"
         f"  ({tokens / on:,.0f} tokens/s at the shortest)"),
        (f"  recomputing:     {off * 1e3:7.1f} ms {result['median without'] * 1e3:7.1f} ms"
         f"  ({tokens / off:,.0f} tokens/s at the shortest)"),
        (f"  same tokens: {'yes' if result['same tokens'] else 'NO'}; largest logit "
         f"difference {result['largest difference']:.1e}"),
        f"  (1 thread, {result['repeats']} runs each, measured when this page was built on",
        f"  {describe(result['before'], result['after'])})"]) + "\n```\n"


def _weights_mib() -> float:
    """MiB of the float32 weights of a multi-head ``DecoderOnly`` of the shape ``LARGER``."""
    task = ReversalTransformerTask(architecture="decoder-only")
    model = DecoderOnly(task.num_classes, **LARGER, pre_norm=True)
    return sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20


@recipe("gqa_table", "key/value cache bytes per token: multi-head, grouped-query, multi-query",
        chapter=CHAPTER)
def gqa_table() -> str:
    dim, heads, layers = LARGER["dim"], LARGER["heads"], LARGER["layers"]
    rows = []
    table = cache_table(dim, heads, layers)
    full = table[0][1]
    for groups, per_token in table:
        name = ("multi-head" if groups == heads else
                "multi-query" if groups == 1 else "grouped-query")
        rows.append([name, str(groups), str(heads // groups), f"{per_token:,.0f}",
                     f"{per_token * 4096 / 2**20:.1f}", f"{full / per_token:.0f}×"])
    return markdown_table(
        ["attention", "key/value heads G", "query heads per group", "bytes per token",
         "MiB for 4,096 tokens", "smaller by"], rows,
        caption=f"Counted, not measured: the bytes of the caches' tensors, per token, for "
                f"D = {dim}, H = {heads} heads of Dh = {dim // heads}, {layers} layers, "
                f"float32. The weights of such a model take {_weights_mib():.1f} MiB.")
