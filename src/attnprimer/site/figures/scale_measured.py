"""The measured part of the chapter "Attention at scale": what a forward and backward pass
costs, materialised, tiled and fused, against the length, and a sliding window with skipped
blocks ([`cached_measurement`][attnprimer.site.experiments.attention_at_scale.cached_measurement]),
and what PyTorch's fused call holds under each kind of mask.

Every timing table gives the shortest and the median of the timed calls, and the machine they
ran on: its CPU model, its cores and its load average before and after the measurement. The
memory tables give their resolution, measured: the spread of the peaks of repeated calls. No
trained model is involved; the recipes are filed under the chapter ``attention-at-scale``.
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure

from attnprimer.site.bench.machine import describe
from attnprimer.site.bench.training_attention_cost import LENGTHS, LOCAL_LENGTHS, SETTINGS
from attnprimer.site.experiments.attention_at_scale import (
    cached_measurement,
    cached_sdpa_points,
    cached_training_cost,
    of,
    slope,
)
from attnprimer.site.figures.mechanisms import plot_attention_cost
from attnprimer.site.figures.plotting import BLUE, GREEN, ORANGE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table

__all__ = ["memory_resolution", "targets_rows"]

CHAPTER = "attention-at-scale"
FULL = ("materialised", "tiled", "fused")
LOCAL = ("tiled, local", "fused, local mask")
LABELS = {"materialised": "attnprimer SDPA (weights kept)", "tiled": "tiled (plain PyTorch)",
          "fused": "torch fused SDPA",
          "tiled, local": f"tiled, causal window {SETTINGS['window']}, blocks skipped",
          "fused, local mask": "torch fused SDPA, same window as a dense mask"}
COLOURS = {"materialised": ORANGE, "tiled": BLUE, "fused": GREEN, "tiled, local": BLUE,
           "fused, local mask": GREEN}


def memory_resolution() -> float:
    """The largest spread, in MiB, between the peaks of repeated calls of one point: how
    finely the memory figures can be read."""
    spreads = [point.peak_spread_bytes for point in cached_training_cost()
               if point.peak_spread_bytes is not None]
    return max(spreads, default=0) / 2**20


def _resolution_text() -> str:
    return (f"the {SETTINGS['memory_repeats']} calls of each point agree to within "
            f"{memory_resolution():.1f} MiB; the peak counts whole pages of resident memory, "
            f"not bytes, so read it to about {max(1, round(memory_resolution()))} MiB")


def _machine() -> str:
    """The short line every timing table carries: calls, machine, load."""
    measured = cached_measurement()
    return (f"Time: the shortest / the median of {measured.repeats} calls, in ms; memory: peak "
            f"extra MiB, read to about {max(1, round(memory_resolution()))} MiB. Measured at "
            f"build on {describe(measured.before, measured.after)}")


def _settings() -> str:
    measured = cached_measurement()
    return (f"B = {SETTINGS['batch']}, H = {SETTINGS['heads']} heads of Dh = "
            f"{SETTINGS['head_dim']}, float32, forward and backward (gradients of Q, K and V), "
            f"{SETTINGS['threads']} torch thread, on {describe(measured.before, measured.after)}; "
            f"time: the shortest / the median of {measured.repeats} calls; memory: the peak extra "
            f"resident memory of one call in a fresh process, the median of "
            f"{SETTINGS['memory_repeats']} calls ({_resolution_text()}); torch {torch.__version__}")


def _cost_figure(names: tuple[str, ...]) -> Figure:
    """The cost module's log-log plot (the shortest times), tiled in blue and fused in green on
    both figures, with room above the lines for the legend."""
    points = [point._replace(implementation=LABELS[point.implementation])
              for point in cached_training_cost() if point.implementation in names]
    figure = plot_attention_cost(points, [COLOURS[name] for name in names])
    for axes in figure.axes:
        bottom, top = axes.get_ylim()
        axes.set_ylim(bottom, top * (top / bottom) ** 0.6)  # log axes: 60 % more decades
    return figure


@recipe("training_cost", "time and peak memory of a forward and backward pass against L",
        alone=True, chapter=CHAPTER)
def training_cost() -> Figure:
    return _cost_figure(FULL)


@recipe("local_cost", "a sliding window with skipped blocks against a dense mask, against L",
        alone=True, chapter=CHAPTER)
def local_cost() -> Figure:
    return _cost_figure(LOCAL)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f}" if seconds >= 0.1 else f"{seconds * 1e3:.1f}"


def _times(point) -> str:
    """The shortest and the median time, in ms."""
    return "—" if point is None else f"{_ms(point.seconds)} / {_ms(point.median_seconds)}"


def _mib(point) -> str:
    return "n/a" if point is None or point.peak_bytes is None else \
        f"{point.peak_bytes / 2**20:,.1f}"


@recipe("cost_table", "the measured times and peaks of the three implementations",
        alone=True, chapter=CHAPTER)
def cost_table() -> str:
    points = cached_training_cost()
    by = {(p.implementation, p.length): p for p in points}
    rows = []
    for length in LENGTHS:
        chosen = [by.get((name, length)) for name in FULL]
        tiled, fused = by[("tiled", length)], by[("fused", length)]
        rows.append([f"{length:,}", *(_times(p) for p in chosen),
                     f"{tiled.seconds / fused.seconds:.2f}", *(_mib(p) for p in chosen)])
    names = ["weights kept", "tiled", "fused"]
    return markdown_table(
        ["L", *(f"ms: {name}" for name in names), "tiled / fused",
         *(f"MiB: {name}" for name in names)], rows, align="r" * 8,
        caption=f"{_machine()}. The settings: in the fold below.")


@recipe("local_table", "a sliding window: tiled with skipped blocks against a dense mask",
        alone=True, chapter=CHAPTER)
def local_table() -> str:
    by = {(p.implementation, p.length): p for p in cached_training_cost()}
    rows = []
    for length in LOCAL_LENGTHS:
        cells = [f"{length:,}"]
        for name in LOCAL:
            point = by.get((name, length))
            cells += [_times(point), "—" if point is None else _mib(point)]
        rows.append(cells)
    header = ["L", *(f"{short}: {what}" for short in ("tiled, window", "fused, dense mask")
                     for what in ("ms", "MiB"))]
    return markdown_table(
        header, rows, align="r" * len(header),
        caption=f"A causal window reaching {SETTINGS['window']} keys back, the dense mask "
                f"built before the call. {_machine()}.")


def targets_rows() -> list[list[str]]:
    """The chapter's targets, as measured: [what, target, measured, met]."""
    points = cached_training_cost()
    by = {(p.implementation, p.length): p for p in points}
    long = [n for n in LENGTHS if n >= 2048]
    memory = slope(points, "tiled", "peak_bytes", [n for n in LENGTHS if n >= 1024])
    ratios = [by[("tiled", n)].seconds / by[("fused", n)].seconds for n in long]
    local = slope(points, "tiled, local", "seconds")
    return [
        [f"tiled peak memory, slope on log-log, L = 1,024 to {LENGTHS[-1]:,}", "≤ 1.1",
         f"{memory:.2f}", "yes" if memory <= 1.1 else "no"],
        [f"tiled / fused time (shortest), L = {long[0]:,} to {long[-1]:,}", "≤ 1.5",
         ", ".join(f"{ratio:.2f}" for ratio in ratios),
         "yes" if max(ratios) <= 1.5 else "no" if min(ratios) > 1.5 else "in part"],
        [(f"tiled with window {SETTINGS['window']}: time slope, L = {LOCAL_LENGTHS[0]:,} to "
          f"{LOCAL_LENGTHS[-1]:,}"), "0.8 to 1.2 (linear)",
         f"{local:.2f}", "yes" if 0.8 <= local <= 1.2 else "no"],
    ]


@recipe("targets", "the chapter's targets for tiled attention, as measured", alone=True,
        chapter=CHAPTER)
def targets() -> str:
    points = cached_training_cost()
    last = max(point.length for point in of(points, "materialised"))
    peak = next(p.peak_bytes for p in points if p[:2] == ("materialised", last))
    return markdown_table(
        ["what", "target", "measured", "met"], targets_rows(), align="lrrl",
        caption=f"The settings of every measurement of this page: {_settings()}. Tiled: blocks "
                f"of {SETTINGS['block_size']} queries and keys. The implementation that keeps "
                f"the weights stops at L = {last:,}: at twice that its peak would be about four "
                f"times {peak / 2**20:,.1f} MiB, some {4 * peak / 2**30:.1f} GiB; the fused "
                f"kernel with a dense mask stops there too.")


@recipe("sdpa_table", "what PyTorch's fused SDPA runs and holds, per call", alone=True,
        chapter=CHAPTER)
def sdpa_table() -> str:
    prefix = "aten::_scaled_dot_product_"  # every kernel's name starts so: left out
    by = {(point.variant, point.length): point for point in cached_sdpa_points()}
    lengths = sorted({length for _, length in by})
    rows = [[f"`{variant}`" if "=" in variant else variant,
             f"`{by[variant, lengths[-1]].kernel.removeprefix(prefix)}`",
             *(_mib(by[variant, length]) for length in lengths)]
            for variant in dict.fromkeys(variant for variant, _ in by)]
    return markdown_table(
        ["the call", "kernel that ran", *(f"MiB at L = {n:,}" for n in lengths)],
        rows, align="ll" + "r" * len(lengths),
        caption=f"Peak extra MiB of one forward call, H = 4 heads of Dh = 64; the kernel as "
                f"torch.profiler names it, less `{prefix}`.")
