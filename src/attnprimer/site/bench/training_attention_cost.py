"""What training attention costs at long lengths: forward and backward, measured.

The self-attention chapter measured forward passes
([`attnprimer.site.bench.attention_cost`][attnprimer.site.bench.attention_cost]).
Training also runs the backward pass, and an implementation that materialises the weights
keeps them (and their scores) for it.
[`measure_training_cost`][attnprimer.site.bench.training_attention_cost.measure_training_cost]
times one forward and backward pass and measures the memory it adds at its peak, for

* ``materialised``: the package's
  [`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention],
  which keeps the L x L weights, up to ``materialise_up_to`` only;
* ``tiled``: [`tiled_attention`][attnprimer.tiled.tiled_attention], in plain PyTorch;
* ``fused``: ``torch.nn.functional.scaled_dot_product_attention``, PyTorch's fused kernel;

and, for a causal sliding window reaching ``window`` keys back, at lengths of their own:

* ``tiled, local``: tiled attention skipping the blocks outside the window;
* ``fused, local mask``: the fused kernel given the same window as a dense boolean mask,
  up to ``materialise_up_to`` only (the mask is L x L). The mask is built before the call, not
  in it: neither its time nor its own L x L bytes are in the call's numbers.

Each point keeps the shortest and the median time of ``repeats`` timed calls (the shortest is
what the code can do, the median what a busy machine gave it) and the median peak of three
calls measured for memory, with the spread of those three: the resolution of the memory
figures, which count resident pages, not bytes.

The command line, and so the fresh-process measurement, runs on one torch thread
(``SETTINGS["threads"]``; a direct call runs on the caller's threads): the tiled pass is a
Python loop of small operations, and with two threads each of them waits for both, which on a
machine shared with other work made it many times slower, a cost of the loop and the machine,
not of the method. Memory is measured with
[`peak_memory`][attnprimer.site.bench.attention_cost.peak_memory].
[`measure_training_cost_in_fresh_process`][attnprimer.site.bench.training_attention_cost.measure_training_cost_in_fresh_process]
runs it in a new process with the exact allocator of the cost module, and
``python -m attnprimer.site.bench.training_attention_cost`` prints it as a table
(``nox -s bench`` does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import local_mask
from attnprimer.site.bench.attention_cost import exact_allocator, peak_memory, run_fresh
from attnprimer.site.bench.machine import describe, machine
from attnprimer.tiled import tiled_attention

__all__ = ["LENGTHS", "LOCAL_LENGTHS", "SETTINGS", "Measurement", "TimedPoint",
           "measure_training_cost", "measure_training_cost_in_fresh_process"]

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
"""The lengths of the full (unmasked) comparison."""
LOCAL_LENGTHS = (1024, 2048, 4096, 8192, 16384)
"""The lengths of the sliding-window comparison."""
SETTINGS = {"batch": 1, "heads": 2, "head_dim": 64, "block_size": 256, "window": 256,
            "materialise_up_to": 4096, "repeats": 5, "memory_repeats": 3, "threads": 1}
"""The settings the chapter measures with (the defaults of
``python -m attnprimer.site.bench.training_attention_cost``)."""

Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None],
                     torch.Tensor]


class TimedPoint(NamedTuple):
    """One implementation at one length.

    Attributes:
        implementation: its name.
        length: L = S.
        seconds: the shortest of the timed calls.
        peak_bytes: the median extra resident memory at the call's peak, or None where it
            cannot be measured.
        median_seconds: the median of the timed calls.
        peak_spread_bytes: the largest minus the smallest of the peaks measured, or None.
    """

    implementation: str
    length: int
    seconds: float
    peak_bytes: int | None
    median_seconds: float
    peak_spread_bytes: int | None


class Measurement(NamedTuple):
    """The points, with the machine before and after
    ([`machine`][attnprimer.site.bench.machine.machine]) and the number of timed calls."""

    points: list[TimedPoint]
    before: dict[str, object]
    after: dict[str, object]
    repeats: int


def _implementations(block_size: int, window: int) -> dict[str, Attention]:
    return {
        "materialised": lambda q, k, v, _: scaled_dot_product_attention(q, k, v)[0],
        "tiled": lambda q, k, v, _: tiled_attention(q, k, v, block_size=block_size),
        "fused": lambda q, k, v, _: F.scaled_dot_product_attention(q, k, v),
        "tiled, local": lambda q, k, v, _: tiled_attention(q, k, v, causal=True, window=window,
                                                           block_size=block_size),
        "fused, local mask": lambda q, k, v, mask: F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask),
    }


DENSE_MASK = ("fused, local mask",)
"""The implementations given the window as a dense (L, L) mask, built before the call."""


def _forward_backward(attention: Attention, length: int, batch: int, heads: int,
                      head_dim: int, generator: torch.Generator,
                      mask: torch.Tensor | None = None) -> Callable[[], object]:
    query, key, value = (torch.randn(batch, heads, length, head_dim, generator=generator,
                                     requires_grad=True) for _ in range(3))  # (B, H, L, Dh)
    grad_context = torch.randn(batch, heads, length, head_dim, generator=generator)

    def call() -> object:
        context = attention(query, key, value, mask)  # (B, H, L, Dh)
        return torch.autograd.grad(context, (query, key, value), grad_context)

    return call


def measure_training_cost(
    lengths: Iterable[int] = LENGTHS,
    local_lengths: Iterable[int] = LOCAL_LENGTHS,
    *,
    batch: int = SETTINGS["batch"],
    heads: int = SETTINGS["heads"],
    head_dim: int = SETTINGS["head_dim"],
    block_size: int = SETTINGS["block_size"],
    window: int = SETTINGS["window"],
    materialise_up_to: int = SETTINGS["materialise_up_to"],
    repeats: int = SETTINGS["repeats"],
    seed: int = 0,
) -> list[TimedPoint]:
    """Time and peak memory of one forward and backward pass, per implementation and length.

    Random float32 inputs (B, H, L, Dh), gradients of query, key and value. Each
    (implementation, length) pair runs once to warm up if L <= 1024, then ``repeats`` times;
    each run's pass is timed (the time excludes the memory measurement around it) and its peak
    measured; the shortest time (other work on the machine can only slow a call down), the
    median time, the median peak and the spread of the peaks are kept. The materialised pass
    and the dense local mask run up to ``materialise_up_to`` only; the dense mask is built
    before the timed call.

    Examples:
        >>> points = measure_training_cost((64,), (64,), block_size=16, window=16, repeats=1)
        >>> [point.implementation for point in points]
        ['materialised', 'tiled', 'fused', 'tiled, local', 'fused, local mask']
        >>> all(0 < point.seconds <= point.median_seconds for point in points)
        True
    """
    generator = torch.Generator().manual_seed(seed)
    lengths, local_lengths = list(lengths), list(local_lengths)
    runs = {"materialised": [n for n in lengths if n <= materialise_up_to],
            "tiled": lengths, "fused": lengths,
            "tiled, local": local_lengths,
            "fused, local mask": [n for n in local_lengths if n <= materialise_up_to]}
    points = []
    for name, attention in _implementations(block_size, window).items():
        for length in runs[name]:
            mask = local_mask(length, window, causal=True) if name in DENSE_MASK else None
            call = _forward_backward(attention, length, batch, heads, head_dim, generator,
                                     mask)  # the (L, L) mask exists before the call
            if length <= 1024:
                call()  # warm-up: first-call allocations and dispatch
            times, peaks = [], []
            for _ in range(repeats):

                def timed(call=call):
                    started = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - started)  # noqa: B023

                peaks.append(peak_memory(timed))
            peak = spread = None
            if None not in peaks:
                peak, spread = int(statistics.median(peaks)), max(peaks) - min(peaks)
            points.append(TimedPoint(name, length, min(times), peak,
                                     statistics.median(times), spread))
    return points


def measure_training_cost_in_fresh_process(
    lengths: Iterable[int] = LENGTHS, local_lengths: Iterable[int] = LOCAL_LENGTHS,
    repeats: int = SETTINGS["repeats"], memory_repeats: int = SETTINGS["memory_repeats"],
) -> Measurement:
    """[`measure_training_cost`][attnprimer.site.bench.training_attention_cost.measure_training_cost]
    in two new Python processes: one times the calls with the ordinary allocator, the other measures
    their memory (``memory_repeats`` calls each) with the exact allocator of
    [`attnprimer.site.bench.attention_cost`][attnprimer.site.bench.attention_cost]. The machine
    is recorded before and after.

    The exact allocator maps and unmaps every block of 64 KiB or more, which is what makes
    the peaks exact, but it also makes the tiled loop, which allocates a few blocks of scores
    per step, pay for fresh pages at every step: timed under it, the tiled pass took several
    times as long. Hence the two processes.

    Examples:
        >>> measured = measure_training_cost_in_fresh_process((128,), (128,), repeats=1,
        ...                                                   memory_repeats=1)
        >>> sorted({point.length for point in measured.points}), measured.repeats
        ([128], 1)
    """
    before = machine()
    arguments = ["--lengths", *map(str, lengths), "--local-lengths", *map(str, local_lengths)]
    timed = [TimedPoint(*point) for point in run_fresh(
        ["--repeats", str(repeats), *arguments], "attnprimer.site.bench.training_attention_cost")]
    held = {(point[0], point[1]): TimedPoint(*point) for point in run_fresh(
        ["--repeats", str(memory_repeats), "--exact-allocator", *arguments],
        "attnprimer.site.bench.training_attention_cost")}
    points = [point._replace(peak_bytes=held[point[:2]].peak_bytes,
                             peak_spread_bytes=held[point[:2]].peak_spread_bytes)
              for point in timed]
    return Measurement(points, before, machine(), repeats)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnprimer.site.bench.training_attention_cost",
        description="Time and peak memory of attention's forward and backward pass.")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--local-lengths", type=int, nargs="+", default=list(LOCAL_LENGTHS))
    parser.add_argument("--repeats", type=int, default=SETTINGS["repeats"])
    parser.add_argument("--json", action="store_true",
                        help="measure in this process; print the points as JSON")
    parser.add_argument("--exact-allocator", action="store_true",
                        help="with --json: map every block of 64 KiB or more on its own")
    args = parser.parse_args(argv)
    torch.set_num_threads(SETTINGS["threads"])
    if args.json:
        if args.exact_allocator:
            exact_allocator()
        points = measure_training_cost(args.lengths, args.local_lengths, repeats=args.repeats)
        print(json.dumps([list(point) for point in points]))
        return 0
    started = time.perf_counter()
    measured = measure_training_cost_in_fresh_process(args.lengths, args.local_lengths,
                                                      args.repeats)
    print(", ".join(f"{name}={value}" for name, value in SETTINGS.items()
                    if name not in ("repeats", "threads"))
          + f", float32, forward + backward, {SETTINGS['threads']} thread, "
          f"{args.repeats} timed calls")
    print(describe(measured.before, measured.after))
    print(f"{'implementation':<20}{'L':>7}{'min (ms)':>11}{'median (ms)':>13}{'peak (MiB)':>12}")
    for point in measured.points:
        peak = "n/a" if point.peak_bytes is None else f"{point.peak_bytes / 2**20:.1f}"
        print(f"{point.implementation:<20}{point.length:>7}{point.seconds * 1e3:>11.1f}"
              f"{point.median_seconds * 1e3:>13.1f}{peak:>12}")
    print(f"measured in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
