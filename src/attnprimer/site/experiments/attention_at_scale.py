"""The experiments of the chapter "Attention at scale": what tiled attention costs, and why.

* [`cached_training_cost`][attnprimer.site.experiments.attention_at_scale.cached_training_cost]:
  [`measure_training_cost_in_fresh_process`][attnprimer.site.bench.training_attention_cost.measure_training_cost_in_fresh_process]
  through [`cached_result`][attnprimer.training.model_cache.cached_result], measured once per
  version of the code on the machine that builds the page, and read back by the page's figures and
  tables and by its claims tests;
* [`slope`][attnprimer.site.experiments.attention_at_scale.slope]: the log-log slope of a cost
  against the length, the exponent ``k`` of a cost ``~ L^k``;
* [`block_counts`][attnprimer.site.experiments.attention_at_scale.block_counts]: the blocks a tiled
  pass computes under each mask, and the blocks it would compute without skipping.

No trained model is involved. Nothing here imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from attnprimer.block_mask import BlockMask
from attnprimer.site.bench.attention_cost import (
    CostPoint,
    SdpaPoint,
    measure_sdpa_in_fresh_process,
)
from attnprimer.site.bench.training_attention_cost import (
    Measurement,
    TimedPoint,
    measure_training_cost_in_fresh_process,
)
from attnprimer.training.model_cache import cached_result

__all__ = ["KINDS", "block_counts", "block_kinds", "cached_measurement", "cached_sdpa_points",
           "cached_training_cost", "of", "slope"]

KINDS = ("skipped", "masked", "whole")
"""What a tiled pass does with a block: skips it, computes it and masks it, computes it whole."""


def _measured() -> dict:
    """The measurement, JSON-ready: what the cache keeps."""
    measured = measure_training_cost_in_fresh_process()
    return {"points": [list(point) for point in measured.points], "before": measured.before,
            "after": measured.after, "repeats": measured.repeats}


def cached_measurement() -> Measurement:
    """The chapter's measurement of forward and backward passes (times, peak memory, and the
    machine before and after), computed once per version of the measuring code (and what it
    imports) and kept in the cache."""
    data = cached_result(_measured, None)
    return Measurement([TimedPoint(*point) for point in data["points"]], data["before"],
                       data["after"], data["repeats"])


def cached_training_cost() -> list[TimedPoint]:
    """The points of
    [`cached_measurement`][attnprimer.site.experiments.attention_at_scale.cached_measurement]."""
    return cached_measurement().points


def of(points: Iterable[CostPoint], implementation: str) -> list[CostPoint]:
    """The points of one implementation, by increasing length.

    Examples:
        >>> of([CostPoint("a", 8, 1.0, 1), CostPoint("b", 8, 1.0, 1), CostPoint("a", 4, 1.0, 1)],
        ...    "a")
        [CostPoint(implementation='a', length=4, seconds=1.0, peak_bytes=1),
         CostPoint(implementation='a', length=8, seconds=1.0, peak_bytes=1)]
    """
    return sorted((point for point in points if point.implementation == implementation),
                  key=lambda point: point.length)


def slope(points: Iterable[CostPoint], implementation: str, what: str,
          lengths: Iterable[int] | None = None) -> float:
    """Least-squares slope of log(cost) against log(L): ``k`` for a cost growing like ``L^k``.

    Args:
        points: measurements.
        implementation: whose.
        what: ``"seconds"`` or ``"peak_bytes"``.
        lengths: the lengths to fit (default: all measured).

    Examples:
        >>> points = [CostPoint("a", n, n * n * 1e-6, 100 * n) for n in (256, 512, 1024)]
        >>> round(slope(points, "a", "seconds"), 3), round(slope(points, "a", "peak_bytes"), 3)
        (2.0, 1.0)
    """
    chosen = [point for point in of(points, implementation)
              if lengths is None or point.length in set(lengths)]
    if len(chosen) < 2:
        raise ValueError(f"need two lengths of {implementation!r} to fit a slope, got "
                         f"{[point.length for point in chosen]}")
    x = np.log([point.length for point in chosen])
    y = np.log([float(getattr(point, what)) for point in chosen])
    return float(np.polyfit(x, y, 1)[0])


def block_kinds(length: int, block_size: int, mask: BlockMask) -> list[list[str]]:
    """What a tiled pass does with each (query block, key block) pair: ``"skipped"``,
    ``"masked"`` (computed, then masked) or ``"whole"`` (computed, no mask); rows are query
    blocks.

    Examples:
        >>> block_kinds(4, 2, BlockMask(causal=True))
        [['masked', 'skipped'], ['whole', 'masked']]
    """
    starts = range(0, length, block_size)
    kinds = []
    for q0 in starts:
        q1 = min(q0 + block_size, length)
        row = []
        for k0 in starts:
            k1 = min(k0 + block_size, length)
            row.append("skipped" if mask.skips(q0, q1, k0, k1) else
                       "masked" if mask.needs_mask(q0, q1, k0, k1) else "whole")
        kinds.append(row)
    return kinds


def block_counts(length: int, block_size: int,
                 masks: dict[str, BlockMask]) -> dict[str, dict[str, int]]:
    """Per mask, how many (query block, key block) pairs a tiled pass skips, computes with a
    mask, and computes whole, of the ``ceil(L / block)^2`` pairs.

    Examples:
        >>> block_counts(8, 2, {"causal": BlockMask(causal=True)})
        {'causal': {'skipped': 6, 'masked': 4, 'whole': 6}}
    """
    counts = {}
    for name, mask in masks.items():
        kinds = [kind for row in block_kinds(length, block_size, mask) for kind in row]
        counts[name] = {kind: kinds.count(kind) for kind in KINDS}
    return counts


def cached_sdpa_points() -> list[SdpaPoint]:
    """[`measure_sdpa_in_fresh_process`][attnprimer.site.bench.attention_cost.measure_sdpa_in_fresh_process]
    at its default lengths, measured once per version of the measuring code (and what it imports)
    and kept in the cache: the page's table and its test read the same kernels and peaks. Memory and
    kernel names only, no times, so what else the machine runs does not change them."""
    return cached_result(measure_sdpa_in_fresh_process, None,
                         encode=lambda points: [list(point) for point in points],
                         decode=lambda data: [SdpaPoint(*point) for point in data])
