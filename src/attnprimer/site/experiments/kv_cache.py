"""What the key/value cache buys: tokens per second and memory, cache on and off, measured.

* [`decoding_cost`][attnprimer.site.experiments.kv_cache.decoding_cost]: one sequence decoded
  greedily for more and more tokens by a ``DecoderOnly`` larger than the site's (untrained: speed
  and memory do not depend on what the weights are), with
  [`greedy_with_cache`][attnprimer.kv_cache.greedy_with_cache] and with
  [`greedy_without_cache`][attnprimer.kv_cache.greedy_without_cache]; time, the bytes the cache
  holds at the end, and the peak resident memory of the whole decoding. It runs in two fresh Python
  processes on one thread: one times the decodings with the ordinary allocator, the other measures
  their memory with the exact allocator of
  [`attnprimer.site.bench.attention_cost`][attnprimer.site.bench.attention_cost] (which makes every
  step's fresh cache tensors pay for new pages, and so would slow the times).
* [`cache_equals_recomputation`][attnprimer.site.experiments.kv_cache.cache_equals_recomputation]:
  on a trained site model and a padded batch of held-out inputs of 1 to 20 letters (the
  training lengths are 1 to 10), the cached decoding against the model's own greedy one.
* [`site_model_speed`][attnprimer.site.experiments.kv_cache.site_model_speed]: the same two
  decodings on a trained site model and a batch of its held-out inputs.
* [`cache_table`][attnprimer.site.experiments.kv_cache.cache_table]: the cache bytes per token of
  multi-head, grouped-query and multi-query attention for one model shape, counted by
  [`cache_bytes_per_token`][attnprimer.grouped_query.cache_bytes_per_token] from the sizes of
  the tensors the caches hold (counted, not measured: no memory is read).

Every timing keeps the shortest and the median of ``REPEATS`` runs, and the timed measurements
record the machine before and after ([`machine`][attnprimer.site.bench.machine.machine]).

The ``cached_*`` functions go through
[`cached_result`][attnprimer.training.model_cache.cached_result], keyed
on the trained decoder-only site model whose vocabulary the larger model takes, so the page and
the claims tests read one measurement. Times are measurements of the machine that ran them;
nothing asserts them. ``python -m attnprimer.site.experiments.kv_cache`` prints the table.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

import torch

from attnprimer.grouped_query import cache_bytes_per_token
from attnprimer.kv_cache import greedy_with_cache, greedy_without_cache
from attnprimer.site.bench.attention_cost import exact_allocator, peak_memory, run_fresh
from attnprimer.site.bench.machine import machine
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator, single_thread
from attnprimer.transformer import DecoderOnly

__all__ = ["LARGER", "REPEATS", "DecodingPoint", "cache_equals_recomputation", "cache_table",
           "cached_decoding_cost", "cached_equality", "cached_site_model_speed", "decoding_cost",
           "measure_decoding", "measure_decoding_in_fresh_processes", "site_model_speed"]

LARGER = {"dim": 256, "heads": 8, "layers": 4}
"""The untrained model of the scaling measurement: D, H and blocks (the site's has 32, 4, 2)."""
LENGTHS = (32, 64, 128, 256)
PROMPT = 16  # input tokens before the separator
REPEATS = 5
"""Timed runs of every decoding: the tables give the shortest and the median."""


class DecodingPoint(NamedTuple):
    """One greedy decoding of ``length`` tokens.

    Attributes:
        cache: with the key/value cache, or recomputing the whole sequence each step.
        length: tokens generated, after a prompt of the input and the separator.
        seconds: wall time of the whole decoding (prefill included), the shortest of the repeats.
        cache_bytes: bytes the cache holds at the end (0 without a cache).
        peak_bytes: extra resident memory at the decoding's peak (the median of the repeats),
            or None where it cannot be measured.
        median_seconds: the median wall time of the repeats.
        peak_spread_bytes: the largest minus the smallest peak of the repeats, or None.
    """

    cache: bool
    length: int
    seconds: float
    cache_bytes: int
    peak_bytes: int | None
    median_seconds: float | None = None
    peak_spread_bytes: int | None = None

    @property
    def tokens_per_second(self) -> float:
        return self.length / self.seconds


@torch.no_grad()
def measure_decoding(num_outputs: int, lengths: Iterable[int] = LENGTHS, *, dim: int,
                     heads: int, layers: int, prompt: int = PROMPT, repeats: int = REPEATS,
                     seed: int = 0) -> list[DecodingPoint]:
    """Greedy decoding of one sequence, cache on and off, at each length, in this process.

    Examples:
        >>> points = measure_decoding(8, [4, 8], dim=16, heads=2, layers=1, repeats=1)
        >>> [(point.cache, point.length) for point in points]
        [(True, 4), (True, 8), (False, 4), (False, 8)]
        >>> points[1].cache_bytes            # 2 x 1 layer x (16 + 1 + 7) positions x 16 x 4
        3072
    """
    lengths = list(lengths)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = DecoderOnly(num_outputs, dim, heads, layers, pre_norm=True,
                            max_positions=prompt + 1 + max(lengths)).eval()
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randint(1, num_outputs, (1, prompt), generator=generator)  # (B, S0)
    points = []
    for cache in (True, False):
        decode = greedy_with_cache if cache else greedy_without_cache
        decode(model, inputs, lengths[0])  # warm-up: first-call allocations and dispatch
        for length in lengths:
            times, peaks, results = [], [], []
            for _ in range(repeats):

                def run(decode=decode, length=length):
                    started = time.perf_counter()
                    results.append(decode(model, inputs, length))  # noqa: B023
                    times.append(time.perf_counter() - started)  # noqa: B023

                peaks.append(peak_memory(run))
            held = results[-1][1].nbytes if cache else 0
            peak = None if None in peaks else sorted(peaks)[len(peaks) // 2]
            spread = None if None in peaks else max(peaks) - min(peaks)
            points.append(DecodingPoint(cache, length, min(times), held, peak,
                                        sorted(times)[len(times) // 2], spread))
    return points


def decoding_cost(trained: TrainedModel, lengths: Iterable[int] = LENGTHS, *, dim: int,
                  heads: int, layers: int, repeats: int = REPEATS) -> dict:
    """The decoding measured in fresh processes
    ([`measure_decoding_in_fresh_processes`][attnprimer.site.experiments.kv_cache.measure_decoding_in_fresh_processes])
    with the vocabulary of ``trained``: its points as lists, the machine before and after, and
    the number of timed runs (JSON)."""
    before = machine()
    points = measure_decoding_in_fresh_processes(trained.task.num_classes, lengths, dim=dim,
                                                 heads=heads, layers=layers, repeats=repeats)
    return {"points": [list(point) for point in points], "before": before, "after": machine(),
            "repeats": repeats}


def measure_decoding_in_fresh_processes(num_outputs: int, lengths: Iterable[int] = LENGTHS, *,
                                        dim: int, heads: int, layers: int,
                                        repeats: int = REPEATS) -> list[DecodingPoint]:
    """[`measure_decoding`][attnprimer.site.experiments.kv_cache.measure_decoding] in two new Python
    processes on one thread: the times from one with the ordinary allocator, the cache bytes and
    peaks (the median of the runs) from one with the exact allocator (``python -m
    attnprimer.site.experiments.kv_cache --json``, then the same with ``--exact-allocator``)."""
    def arguments(runs: int) -> list[str]:
        return ["--classes", str(num_outputs), "--dim", str(dim), "--heads", str(heads),
                "--layers", str(layers), "--repeats", str(runs), "--lengths", *map(str, lengths)]

    module = "attnprimer.site.experiments.kv_cache"
    timed = [DecodingPoint(*point) for point in run_fresh(arguments(repeats), module=module)]
    held = [DecodingPoint(*point) for point in run_fresh(
        [*arguments(repeats), "--exact-allocator"], module=module)]
    return [point._replace(cache_bytes=memory.cache_bytes, peak_bytes=memory.peak_bytes,
                           peak_spread_bytes=memory.peak_spread_bytes)
            for point, memory in zip(timed, held, strict=True)]


def cached_decoding_cost(trained: TrainedModel) -> list[DecodingPoint]:
    """[`decoding_cost`][attnprimer.site.experiments.kv_cache.decoding_cost] of the
    [`LARGER`][attnprimer.site.experiments.kv_cache.LARGER] model, measured once per model and
    code."""
    return [DecodingPoint(*point) for point in cached_decoding_run(trained)["points"]]


def cached_decoding_run(trained: TrainedModel) -> dict:
    """All of [`decoding_cost`][attnprimer.site.experiments.kv_cache.decoding_cost], through the
    result cache: the points (as lists), the machine before and after, the number of runs."""
    return cached_result(decoding_cost, trained, lengths=list(LENGTHS), **LARGER)


@torch.no_grad()
def cache_equals_recomputation(trained: TrainedModel, longest: int = 20,
                               samples: int = 1000) -> dict[str, float]:
    """Cached greedy decoding against the model's own (full recomputation), on one padded
    batch of ``samples`` held-out inputs of 1 to ``longest`` letters each.

    Returns the number of inputs, of padded ones and of ones longer than in training, whether
    every written token is the same, and the largest difference of any logit.
    """
    model = trained.model.eval()
    task = replace(trained.task, min_len=1, max_len=longest)
    inputs = task.sample(samples, held_out_generator(0)).inputs  # (B, longest), padded
    cached, _ = greedy_with_cache(model, inputs)  # (B, T, C)
    full = model(inputs).logits  # (B, T, C)
    letters = (inputs != 0).sum(dim=1)  # (B,)
    return {"inputs": samples, "padded": int((letters < longest).sum()),
            "beyond training": int((letters > trained.task.max_len).sum()),
            "steps": full.shape[1],
            "same tokens": bool(torch.equal(cached.argmax(-1), full.argmax(-1))),
            "largest difference": float((cached - full).abs().max())}


def cached_equality(trained: TrainedModel) -> dict[str, float]:
    """[`cache_equals_recomputation`][attnprimer.site.experiments.kv_cache.cache_equals_recomputation]
    through the result cache: the page and the claims tests read the same numbers."""
    return cached_result(cache_equals_recomputation, trained)


@torch.no_grad()
def site_model_speed(trained: TrainedModel, length: int = 20, samples: int = 100,
                     repeats: int = REPEATS) -> dict[str, float]:
    """Greedy decoding of ``samples`` held-out inputs of ``length`` letters by a trained site
    model, cache on and off: the seconds (the shortest and the median of ``repeats``), the
    largest logit difference, whether the written tokens are the same, and the machine before
    and after."""
    model = trained.model.eval()
    inputs = trained.task.at_length(length).sample(samples, held_out_generator(0)).inputs
    seconds, medians, logits = {}, {}, {}
    before = machine()
    with single_thread():  # what the page says it measured, whatever the caller's threads
        for cache, decode in ((True, greedy_with_cache), (False, greedy_without_cache)):
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                result = decode(model, inputs)
                times.append(time.perf_counter() - started)
            seconds[cache] = min(times)
            medians[cache] = sorted(times)[len(times) // 2]
            logits[cache] = result[0] if cache else result  # (B, T, C)
    return {"seconds with cache": seconds[True], "seconds without": seconds[False],
            "median with cache": medians[True], "median without": medians[False],
            "repeats": repeats, "before": before, "after": machine(),
            "tokens": samples * (length + 1),
            "largest difference": float((logits[True] - logits[False]).abs().max()),
            "same tokens": bool(torch.equal(logits[True].argmax(-1),
                                            logits[False].argmax(-1)))}


def cached_site_model_speed(trained: TrainedModel, length: int = 20) -> dict[str, float]:
    """[`site_model_speed`][attnprimer.site.experiments.kv_cache.site_model_speed] through the
    result cache (one thread)."""
    return cached_result(site_model_speed, trained, length=length)


def cache_table(dim: int = LARGER["dim"], heads: int = LARGER["heads"],
                layers: int = LARGER["layers"]) -> list[tuple[int, float]]:
    """``(G, cache bytes per token)`` for every G dividing H, from H (multi-head) down to 1.

    Examples:
        >>> cache_table(dim=16, heads=4, layers=1)
        [(4, 128.0), (2, 64.0), (1, 32.0)]
    """
    groups = [g for g in range(heads, 0, -1) if heads % g == 0]
    return [(g, cache_bytes_per_token(dim, heads, g, layers)) for g in groups]


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnprimer.site.experiments.kv_cache",
        description="Greedy decoding with and without a key/value cache: time and memory.")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--classes", type=int, default=13)
    parser.add_argument("--dim", type=int, default=LARGER["dim"])
    parser.add_argument("--heads", type=int, default=LARGER["heads"])
    parser.add_argument("--layers", type=int, default=LARGER["layers"])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--json", action="store_true",
                        help="measure in this process; print the points as JSON")
    parser.add_argument("--exact-allocator", action="store_true",
                        help="with --json: map every block of a page (4 KiB) or more on its own")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.json:
        if args.exact_allocator:
            # decoding allocates many small blocks (one position's keys are 1 KiB): map
            # every block of a page or more, or the heap's reuse makes the peaks vary by MiBs
            exact_allocator(threshold=4096)
        points = measure_decoding(args.classes, args.lengths, dim=args.dim, heads=args.heads,
                                  layers=args.layers, repeats=args.repeats)
        print(json.dumps([list(point) for point in points]))
        return 0
    points = measure_decoding_in_fresh_processes(args.classes, args.lengths, dim=args.dim,
                                                 heads=args.heads, layers=args.layers,
                                                 repeats=args.repeats)
    print(f"D={args.dim}, H={args.heads}, {args.layers} blocks, untrained, B=1, prompt "
          f"{PROMPT} + separator, float32, CPU, 1 thread")
    print(f"{'cache':<8}{'tokens':>8}{'seconds':>10}{'tokens/s':>10}{'cache MiB':>11}"
          f"{'peak MiB':>10}")
    for point in points:
        peak = "n/a" if point.peak_bytes is None else f"{point.peak_bytes / 2**20:.2f}"
        print(f"{'on' if point.cache else 'off':<8}{point.length:>8}{point.seconds:>10.3f}"
              f"{point.tokens_per_second:>10.1f}{point.cache_bytes / 2**20:>11.2f}{peak:>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
