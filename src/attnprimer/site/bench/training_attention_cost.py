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
  up to ``materialise_up_to`` only (the mask is L x L).

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

import torch
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import local_mask
from attnprimer.site.bench.attention_cost import CostPoint, exact_allocator, peak_memory, run_fresh
from attnprimer.tiled import tiled_attention

__all__ = ["LENGTHS", "LOCAL_LENGTHS", "SETTINGS", "measure_training_cost",
           "measure_training_cost_in_fresh_process"]

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
"""The lengths of the full (unmasked) comparison."""
LOCAL_LENGTHS = (1024, 2048, 4096, 8192, 16384)
"""The lengths of the sliding-window comparison."""
SETTINGS = {"batch": 1, "heads": 2, "head_dim": 64, "block_size": 256, "window": 256,
            "materialise_up_to": 4096, "repeats": 2, "threads": 1}
"""The settings the chapter measures with (the defaults of
``python -m attnprimer.site.bench.training_attention_cost``)."""

Attention = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def _implementations(block_size: int, window: int) -> dict[str, Attention]:
    def local_dense(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        length = query.shape[-2]
        mask = local_mask(length, window, causal=True)  # (L, L), built in the call
        return F.scaled_dot_product_attention(query, key, value, attn_mask=mask)

    return {
        "materialised": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "tiled": lambda q, k, v: tiled_attention(q, k, v, block_size=block_size),
        "fused": F.scaled_dot_product_attention,
        "tiled, local": lambda q, k, v: tiled_attention(q, k, v, causal=True, window=window,
                                                        block_size=block_size),
        "fused, local mask": local_dense,
    }


def _forward_backward(attention: Attention, length: int, batch: int, heads: int,
                      head_dim: int, generator: torch.Generator) -> Callable[[], object]:
    query, key, value = (torch.randn(batch, heads, length, head_dim, generator=generator,
                                     requires_grad=True) for _ in range(3))  # (B, H, L, Dh)
    grad_context = torch.randn(batch, heads, length, head_dim, generator=generator)

    def call() -> object:
        context = attention(query, key, value)  # (B, H, L, Dh)
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
) -> list[CostPoint]:
    """Time and peak memory of one forward and backward pass, per implementation and length.

    Random float32 inputs (B, H, L, Dh), gradients of query, key and value. Each
    (implementation, length) pair runs once to warm up if L <= 1024, then ``repeats`` times;
    each run's pass is timed (the time excludes the memory measurement around it) and its peak
    measured; the shortest time (other work on the machine can only slow a call down) and the
    median peak are kept. The materialised pass and the dense local mask run up to
    ``materialise_up_to`` only.

    Examples:
        >>> points = measure_training_cost((64,), (64,), block_size=16, window=16, repeats=1)
        >>> [point.implementation for point in points]
        ['materialised', 'tiled', 'fused', 'tiled, local', 'fused, local mask']
        >>> all(point.seconds > 0 for point in points)
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
            call = _forward_backward(attention, length, batch, heads, head_dim, generator)
            if length <= 1024:
                call()  # warm-up: first-call allocations and dispatch
            times, peaks = [], []
            for _ in range(repeats):

                def timed(call=call):
                    started = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - started)  # noqa: B023

                peaks.append(peak_memory(timed))
            peak = None if None in peaks else int(statistics.median(peaks))
            points.append(CostPoint(name, length, min(times), peak))
    return points


def measure_training_cost_in_fresh_process(
    lengths: Iterable[int] = LENGTHS, local_lengths: Iterable[int] = LOCAL_LENGTHS,
    repeats: int = SETTINGS["repeats"],
) -> list[CostPoint]:
    """[`measure_training_cost`][attnprimer.site.bench.training_attention_cost.measure_training_cost]
    in two new Python processes: one times the calls with the ordinary allocator, the other measures
    their memory (one call each) with the exact allocator of
    [`attnprimer.site.bench.attention_cost`][attnprimer.site.bench.attention_cost].

    The exact allocator maps and unmaps every block of 64 KiB or more, which is what makes
    the peaks exact, but it also makes the tiled loop, which allocates a few blocks of scores
    per step, pay for fresh pages at every step: timed under it, the tiled pass took several
    times as long. Hence the two processes.

    Examples:
        >>> points = measure_training_cost_in_fresh_process((128,), (128,), repeats=1)
        >>> sorted({point.length for point in points})
        [128]
    """
    arguments = ["--lengths", *map(str, lengths), "--local-lengths", *map(str, local_lengths)]
    timed = run_fresh(["--repeats", str(repeats), *arguments],
                      "attnprimer.site.bench.training_attention_cost")
    held = run_fresh(["--repeats", "1", "--exact-allocator", *arguments],
                     "attnprimer.site.bench.training_attention_cost")
    peaks = {(name, length): peak for name, length, _, peak in held}
    return [CostPoint(name, length, seconds, peaks[name, length])
            for name, length, seconds, _ in timed]


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
    points = measure_training_cost_in_fresh_process(args.lengths, args.local_lengths,
                                                    args.repeats)
    print(", ".join(f"{name}={value}" for name, value in SETTINGS.items()
                    if name not in ("repeats", "threads"))
          + f", float32, forward + backward, {SETTINGS['threads']} thread, "
          f"fastest of {args.repeats}")
    print(f"{'implementation':<20}{'L':>7}{'time (ms)':>12}{'peak (MiB)':>12}")
    for point in points:
        peak = "n/a" if point.peak_bytes is None else f"{point.peak_bytes / 2**20:.1f}"
        print(f"{point.implementation:<20}{point.length:>7}{point.seconds * 1e3:>12.1f}"
              f"{peak:>12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
