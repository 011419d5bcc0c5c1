"""What attention costs: time and peak memory against the sequence length, measured.

Self-attention compares every position with every other one, so a sequence of
L positions has L x L scores.
[`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention]
builds that matrix (it returns the weights, because the pages plot them);
PyTorch's fused ``torch.nn.functional.scaled_dot_product_attention`` computes
the same context block by block and never holds all of it at once. Both do
O(L^2) work; only the first needs O(L^2) memory.

What the fused call does depends on the backend PyTorch dispatches it to and
on how it is masked.
[`measure_sdpa_variants`][attnprimer.site.bench.attention_cost.measure_sdpa_variants]
records, per variant of the call in
[`SDPA_VARIANTS`][attnprimer.site.bench.attention_cost.SDPA_VARIANTS], the
kernel that ran (read with ``torch.profiler``) and the peak memory: on a CPU
build of torch 2.x the default is a flash kernel, the forced math backend
builds the whole L x S matrix, and a dense boolean mask is itself L x S (and
is converted to an additive float mask of that size) while ``is_causal=True``
needs no mask tensor at all.

[`measure_attention_cost`][attnprimer.site.bench.attention_cost.measure_attention_cost] times both
on this machine's CPU and measures the extra resident memory each call needs at its peak.
[`measure_in_fresh_process`][attnprimer.site.bench.attention_cost.measure_in_fresh_process] does it
in a new Python process with a memory allocator set up to return every large block to the system at
once, so that the peaks are exact; ``python -m attnprimer.site.bench.attention_cost`` prints that
measurement as a table (``nox -s bench``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import torch
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

from attnprimer.dot_product import scaled_dot_product_attention

__all__ = [
    "IMPLEMENTATIONS",
    "SDPA_VARIANTS",
    "CostPoint",
    "SdpaPoint",
    "exact_allocator",
    "measure_attention_cost",
    "measure_in_fresh_process",
    "measure_sdpa_in_fresh_process",
    "measure_sdpa_variants",
    "peak_memory",
    "run_fresh",
    "sdpa_kernel_name",
]


def _ours(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return scaled_dot_product_attention(query, key, value)[0]


IMPLEMENTATIONS: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "attnprimer (weights kept)": _ours,
    "torch fused SDPA": F.scaled_dot_product_attention,
}
"""The implementations compared, by label: each maps (query, key, value) to the context."""


def _causal_by_flag(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(query, key, value, is_causal=True)


def _causal_by_dense_mask(query: torch.Tensor, key: torch.Tensor,
                          value: torch.Tensor) -> torch.Tensor:
    ones = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool)  # (L, S)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=torch.tril(ones))


def _math_backend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(query, key, value)


SDPA_VARIANTS: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "default, no mask": F.scaled_dot_product_attention,
    "is_causal=True": _causal_by_flag,
    "dense bool causal mask": _causal_by_dense_mask,
    "math backend, no mask": _math_backend,
}
"""Ways to call ``F.scaled_dot_product_attention``, by label. The dense mask is built inside the
call (as a model that builds its mask per forward pass would), so its own L x S bytes count."""


class CostPoint(NamedTuple):
    """One measurement.

    Attributes:
        implementation: a key of
            [`IMPLEMENTATIONS`][attnprimer.site.bench.attention_cost.IMPLEMENTATIONS].
        length: L = S, the sequence length.
        seconds: wall time of one call, the shortest of the repeats.
        peak_bytes: extra resident memory at the call's peak, or None where it cannot be measured.
    """

    implementation: str
    length: int
    seconds: float
    peak_bytes: int | None


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_bytes(key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    if match is None:
        raise OSError(f"no {key} in {_STATUS}")
    return int(match.group(1)) * 1024


def peak_memory(function: Callable[[], object]) -> int | None:
    """Run ``function`` once; return the resident memory its peak added, in bytes.

    Linux keeps a high-water mark of each process's resident memory (VmHWM)
    that can be reset (``/proc/self/clear_refs``), so the peak of one call is
    that mark afterwards minus the resident memory before. Elsewhere this
    returns None. Memory the allocator already holds is reused without
    raising the mark, so small calls can read 0.

    Examples:
        >>> extra = peak_memory(lambda: torch.ones(64, 1024, 1024).sum())   # 256 MiB
        >>> extra is None or extra > 200 * 2**20
        True
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        _CLEAR_REFS.write_text("5")  # reset the high-water mark to the current resident size
        before = _status_bytes("VmRSS")
        function()
        return max(0, _status_bytes("VmHWM") - before)
    except OSError:
        return None


def measure_attention_cost(
    lengths: Iterable[int] = (128, 256, 512, 1024, 2048, 4096),
    *,
    heads: int = 4,
    head_dim: int = 64,
    repeats: int = 3,
    seed: int = 0,
) -> list[CostPoint]:
    """Time and peak memory of self-attention at each length, for every implementation.

    Inputs are one sequence (B = 1) of ``heads`` heads of size ``head_dim``,
    float32, without gradients. Each (implementation, length) pair is run once
    to warm up, then ``repeats`` times; the shortest time (other work on the
    machine can only slow a call down) and the median peak are kept. Threads:
    torch's default for this machine.

    Examples:
        >>> points = measure_attention_cost(lengths=(64, 128), repeats=1)
        >>> [(point.implementation, point.length) for point in points][:2]
        [('attnprimer (weights kept)', 64), ('attnprimer (weights kept)', 128)]
        >>> all(point.seconds > 0 for point in points)
        True
    """
    generator = torch.Generator().manual_seed(seed)
    points = []
    for name, implementation in IMPLEMENTATIONS.items():
        for length in lengths:
            query, key, value = (
                torch.randn(1, heads, length, head_dim, generator=generator) for _ in range(3)
            )  # (B, H, L, Dh) each

            def call() -> torch.Tensor:
                return implementation(query, key, value)  # noqa: B023 (called right away)

            with torch.no_grad():
                call()  # warm-up: first-call allocations and dispatch
                times, peaks = [], []
                for _ in range(repeats):
                    peaks.append(peak_memory(call))
                    started = time.perf_counter()
                    call()
                    times.append(time.perf_counter() - started)
            peak = None if None in peaks else int(statistics.median(peaks))
            points.append(CostPoint(name, length, min(times), peak))
    return points


class SdpaPoint(NamedTuple):
    """One variant of the fused call at one length.

    Attributes:
        variant: a key of [`SDPA_VARIANTS`][attnprimer.site.bench.attention_cost.SDPA_VARIANTS].
        length: L = S.
        kernel: the ATen kernel the call dispatched to, as ``torch.profiler`` names it.
        peak_bytes: extra resident memory at the call's peak, or None where it cannot be measured.
    """

    variant: str
    length: int
    kernel: str
    peak_bytes: int | None


def sdpa_kernel_name(function: Callable[[], object]) -> str:
    """The ``aten::_scaled_dot_product_*`` kernel(s) ``function`` ran, found with
    ``torch.profiler``.

    Examples:
        >>> q = torch.randn(1, 1, 8, 4)
        >>> sdpa_kernel_name(lambda: _math_backend(q, q, q))
        'aten::_scaled_dot_product_attention_math'
    """
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        function()
    names = [event.key for event in profiler.key_averages()
             if event.key.startswith("aten::_scaled_dot_product")]
    return ", ".join(sorted(names)) or "none"


def measure_sdpa_variants(
    lengths: Iterable[int] = (512, 1024, 2048),
    *,
    heads: int = 4,
    head_dim: int = 64,
    seed: int = 0,
) -> list[SdpaPoint]:
    """The kernel and the peak memory of every variant of the fused call, at each length.

    Inputs as in
    [`measure_attention_cost`][attnprimer.site.bench.attention_cost.measure_attention_cost] (one
    sequence, float32, forward only, no gradients); one warm-up call, one call measured for
    memory, one profiled. No times: this measures what is held, not how fast.

    Examples:
        >>> points = measure_sdpa_variants(lengths=(64,))
        >>> [point.variant for point in points] == list(SDPA_VARIANTS)
        True
    """
    generator = torch.Generator().manual_seed(seed)
    points = []
    for length in lengths:
        query, key, value = (
            torch.randn(1, heads, length, head_dim, generator=generator) for _ in range(3)
        )  # (B, H, L, Dh) each
        for name, variant in SDPA_VARIANTS.items():

            def call() -> torch.Tensor:
                return variant(query, key, value)  # noqa: B023 (called right away)

            with torch.no_grad():
                call()  # warm-up
                peak = peak_memory(call)
                kernel = sdpa_kernel_name(call)
            points.append(SdpaPoint(name, length, kernel, peak))
    return points


def measure_sdpa_in_fresh_process(lengths: Iterable[int] = (512, 1024, 2048)) -> list[SdpaPoint]:
    """[`measure_sdpa_variants`][attnprimer.site.bench.attention_cost.measure_sdpa_variants]
    in a new Python process,
    with the allocator of
    [`measure_in_fresh_process`][attnprimer.site.bench.attention_cost.measure_in_fresh_process]."""
    return [SdpaPoint(*point) for point in run_fresh(["--sdpa", "--lengths", *map(str, lengths)])]


def measure_in_fresh_process(
    lengths: Iterable[int] = (128, 256, 512, 1024, 2048, 4096), *, repeats: int = 3
) -> list[CostPoint]:
    """[`measure_attention_cost`][attnprimer.site.bench.attention_cost.measure_attention_cost]
    in a new Python process.

    The new process asks the C allocator (glibc's ``mallopt``) to serve every
    block of 64 KiB or more straight from the system and to give it back on
    release. Otherwise freed blocks are kept for reuse, and a call that
    reuses them reads as needing no memory at all. The process also starts
    with nothing freed yet from earlier work.

    Examples:
        >>> points = measure_in_fresh_process(lengths=(256,), repeats=1)
        >>> [point.length for point in points]
        [256, 256]
    """
    arguments = ["--repeats", str(repeats), "--lengths", *map(str, lengths)]
    return [CostPoint(*point) for point in run_fresh(arguments)]


def run_fresh(arguments: list[str],
              module: str = "attnprimer.site.bench.attention_cost") -> list[list]:
    """Run ``python -m <module> --json <arguments>`` in a new process; return what it printed.

    The module's command line calls
    [`exact_allocator`][attnprimer.site.bench.attention_cost.exact_allocator]
    before it measures, and prints its points as one JSON list.
    """
    command = [sys.executable, "-m", module, "--json", *arguments]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


def exact_allocator(threshold: int = 64 * 1024) -> None:
    """Make glibc map every block of ``threshold`` bytes or more on its own and unmap it when
    freed, and give the heap's free top back at once: the resident memory then follows what
    is allocated. A lower threshold is more exact and slower (a system call per block)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, threshold)
    libc.mallopt(m_trim_threshold, 0)


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attnprimer.site.bench.attention_cost",
        description="Time and peak memory of self-attention against the sequence length.",
    )
    parser.add_argument("--lengths", type=int, nargs="+",
                        default=[128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the points as JSON")
    parser.add_argument("--sdpa", action="store_true",
                        help="the kernel and peak memory of each way of calling the fused SDPA")
    args = parser.parse_args(argv)
    exact_allocator()
    if args.sdpa:
        points = measure_sdpa_variants(args.lengths)
        header = f"{'variant':<26}{'L':>6}{'peak (MiB)':>12}  kernel"
        lines = [f"{point.variant:<26}{point.length:>6}{_mib(point.peak_bytes):>12}  "
                 f"{point.kernel}" for point in points]
    else:
        points = measure_attention_cost(args.lengths, repeats=args.repeats)
        header = f"{'implementation':<28}{'L':>6}{'time (ms)':>12}{'peak (MiB)':>12}"
        lines = [f"{point.implementation:<28}{point.length:>6}{point.seconds * 1e3:>12.2f}"
                 f"{_mib(point.peak_bytes):>12}" for point in points]
    if args.json:
        print(json.dumps([list(point) for point in points]))
        return 0
    print(f"B=1, H=4, Dh=64, float32, forward only, {torch.get_num_threads()} threads")
    print("\n".join([header, *lines]))
    return 0


def _mib(peak_bytes: int | None) -> str:
    return "n/a" if peak_bytes is None else f"{peak_bytes / 2**20:.2f}"

if __name__ == "__main__":
    raise SystemExit(_main())
