"""The claims of the chapter "Attention at scale" about what it measured and drew.

The measurements are the page's own: [`cached_training_cost`] reads the result the docs build
computed (or computes it, once, about a minute), so the page and these tests look at the very
same numbers. Only claims that hold robustly are tested: memory, which is deterministic to a
few pages, and exact equalities. Times depend on the machine and on what else it runs; the
page states them as measured and these tests never compare two of them. Each test names the
sentence of the chapter it checks.
"""

from __future__ import annotations

import sys

import pytest
import torch
from torch.nn import functional as F

from attnprimer.block_mask import BlockMask
from attnprimer.masks import local_mask
from attnprimer.online_softmax import online_steps
from attnprimer.site.bench import training_attention_cost as bench
from attnprimer.site.bench.attention_cost import sdpa_kernel_name
from attnprimer.site.bench.training_attention_cost import LENGTHS, LOCAL_LENGTHS, SETTINGS
from attnprimer.site.experiments.attention_at_scale import (
    block_counts,
    cached_measurement,
    cached_sdpa_points,
    cached_training_cost,
    of,
    slope,
)
from attnprimer.site.figures.attention_at_scale import (
    BLOCK_EXAMPLE,
    BLOCK_MASKS,
    WALK_BLOCK,
    WALK_SCORES,
    WALK_VALUES,
)
from attnprimer.site.figures.scale_measured import cost_table, local_table, memory_resolution
from attnprimer.tiled import tiled_attention

MiB = 2**20


@pytest.fixture(scope="module")
def points():
    return cached_training_cost()


def _peak(points, name, length):
    (point,) = [p for p in of(points, name) if p.length == length]
    return point.peak_bytes


def test_every_point_the_page_shows_was_measured(points):
    """The tables and figures: each implementation at each of its lengths, memory included."""
    last = SETTINGS["materialise_up_to"]
    expected = {"materialised": [n for n in LENGTHS if n <= last], "tiled": list(LENGTHS),
                "fused": list(LENGTHS), "tiled, local": list(LOCAL_LENGTHS),
                "fused, local mask": [n for n in LOCAL_LENGTHS if n <= last]}
    for name, lengths in expected.items():
        measured = of(points, name)
        assert [point.length for point in measured] == lengths
        assert all(point.seconds > 0 and point.peak_bytes for point in measured)


def test_the_timing_tables_give_five_calls_min_and_median_and_the_machine():
    """'the shortest and the median of five calls'; the captions name the CPU, its cores and
    the load average before and after the measurement."""
    measured = cached_measurement()
    assert measured.repeats >= 5
    assert all(0 < point.seconds <= point.median_seconds for point in measured.points)
    for machine in (measured.before, measured.after):
        assert machine["cpu"] and machine["cores"] >= 1 and "load" in machine
    for table in (cost_table(), local_table()):
        assert measured.before["cpu"] in table and "load average" in table
        assert f"the shortest / the median of {measured.repeats} calls" in table


def test_the_memory_is_read_to_about_one_mib():
    """'the memory is read to about 1 MiB': the three calls of every point agree to within
    about that (less than 1.5 MiB, which the caption rounds to 1)."""
    assert all(point.peak_spread_bytes is not None for point in cached_training_cost())
    assert memory_resolution() < 1.5


def test_the_dense_mask_is_built_before_the_timed_call(monkeypatch):
    """'The dense mask is built before the call': once per length, not once per timed call."""
    built = []

    def counting(*args, **kwargs):
        built.append(args)
        return local_mask(*args, **kwargs)

    monkeypatch.setattr(bench, "local_mask", counting)
    bench.measure_training_cost((), (64, 128), block_size=16, window=16, repeats=3)
    assert len(built) == 2


def test_tiled_peak_memory_grows_at_most_linearly(points):
    """Target: 'tiled peak memory, slope on log-log, L = 1,024 to 8,192: <= 1.1', and 'nothing
    in it grows faster than L ... its measured slope is below 1' (the figure's three longest)."""
    assert slope(points, "tiled", "peak_bytes", [n for n in LENGTHS if n >= 1024]) <= 1.1
    assert slope(points, "tiled", "peak_bytes", LENGTHS[-3:]) < 1.0
    # the figure's alt text: "the tiled pass and the fused kernel grow with slope below 1"
    assert slope(points, "fused", "peak_bytes", LENGTHS[-3:]) < 1.0


def test_keeping_the_weights_costs_quadratic_memory(points):
    """'its peak grows about fourfold per doubling of L'."""
    lengths = [n for n in LENGTHS if 1024 <= n <= SETTINGS["materialise_up_to"]]
    assert 1.8 <= slope(points, "materialised", "peak_bytes", lengths) <= 2.2


def test_keeping_the_weights_holds_about_three_float_matrices_per_head(points):
    """'its measured peak is about three such float matrices per head'."""
    heads = SETTINGS["batch"] * SETTINGS["heads"]
    for point in of(points, "materialised"):
        if point.length >= 1024:
            matrices = point.peak_bytes / (heads * point.length**2 * 4)
            assert 2.5 <= matrices <= 3.5, (point.length, matrices)


def test_the_next_doubling_would_pass_a_gigabyte(points):
    """'it stops at L = 4096: the next doubling would take it well past a gigabyte'."""
    last = SETTINGS["materialise_up_to"]
    assert 4 * _peak(points, "materialised", last) > 2**30


def test_the_fused_kernel_holds_about_as_much_as_the_tiled_pass(points):
    """'The fused kernel holds about as much as the tiled pass', from L = 1,024 on: within a
    factor of 1.5 either way, and both far below the weights kept (a tenth at most)."""
    for length in (n for n in LENGTHS if n >= 1024):
        tiled, fused = _peak(points, "tiled", length), _peak(points, "fused", length)
        assert 1 / 1.5 <= tiled / fused <= 1.5, length
    last = SETTINGS["materialise_up_to"]
    assert _peak(points, "tiled", last) < _peak(points, "materialised", last) / 10


def test_a_dense_window_mask_costs_quadratic_memory_and_skipping_does_not(points):
    """The sliding-window figure: the dense mask's memory grows faster and faster, towards
    slope 2, as the float copy of the mask (slope 2) comes to dominate; below 1.1 for tiled."""
    dense = [n for n in LOCAL_LENGTHS if n <= SETTINGS["materialise_up_to"]]
    assert slope(points, "fused, local mask", "peak_bytes", dense) >= 1.5
    assert slope(points, "fused, local mask", "peak_bytes", dense[-2:]) > \
        slope(points, "fused, local mask", "peak_bytes", dense[:2])
    assert slope(points, "tiled, local", "peak_bytes") <= 1.1
    # the figure's legend fits the three longest: "the tiled pass grows with slope below 1"
    assert slope(points, "tiled, local", "peak_bytes", LOCAL_LENGTHS[-3:]) < 1.0


def test_the_dense_mask_adds_four_bytes_per_entry_its_float_copy(points):
    """'What the call adds to the fused kernel's peak without a mask is four bytes per entry:
    the float copy of the mask' (the mask itself was built before the call), to within the
    memory's resolution at each length both were measured at."""
    for point in of(points, "fused, local mask"):
        if point.length not in LENGTHS or point.length < 1024:
            continue
        added = point.peak_bytes - _peak(points, "fused", point.length)
        assert abs(added - 4 * point.length**2) <= max(0.1 * 4 * point.length**2, MiB), point


def test_the_tiled_causal_mask_is_aligned_top_left():
    """'The causal rule of BlockMask is j <= i, aligned top-left': with fewer queries than keys
    it is torch.tril(ones(L, S)), not the bottom-right triangle a cached step needs."""
    queries, keys = 3, 8
    ones = torch.ones(queries, keys, dtype=torch.bool)
    mask = BlockMask(causal=True).dense(queries, keys)
    assert torch.equal(mask, torch.tril(ones))
    assert not torch.equal(mask, torch.tril(ones, diagonal=keys - queries))


def test_the_block_figure_counts():
    """The block figure's titles: 64, 36, 15 and 48 of 64 blocks computed."""
    counts = block_counts(BLOCK_EXAMPLE["length"], BLOCK_EXAMPLE["block_size"], BLOCK_MASKS)
    computed = [tally["masked"] + tally["whole"] for tally in counts.values()]
    assert computed == [64, 36, 15, 48]
    assert counts["no mask"] == {"skipped": 0, "masked": 0, "whole": 64}


@pytest.mark.parametrize("length", [1024, 2048, 4096, 16384])
def test_a_window_of_w_in_blocks_of_w_computes_2L_over_w_minus_1_blocks(length):
    """'each query block needs its own diagonal block and the one before it, 2L/w - 1 blocks in
    all, where the full square has (L/w)^2'."""
    window = SETTINGS["window"]
    mask = BlockMask(causal=True, window=window)
    assert len(mask.visited(length, length, window)) == 2 * length // window - 1


def test_the_walk_through():
    """The walk-through's caption: block 2 raises the maximum from 1 to 2.5, so block 1's sum
    shrinks by e^(1 - 2.5) ~ 0.22; block 3 has no score above 2.5 (factor 1); after the last
    block the running average is exact."""
    scores, values = torch.tensor(WALK_SCORES), torch.tensor(WALK_VALUES)
    states = list(online_steps(scores, values[:, None], WALK_BLOCK))
    maxima = [float(state.maximum) for state in states]
    assert maxima == [1.0, 2.5, 2.5]
    assert round(float(torch.exp(torch.tensor(maxima[0] - maxima[1]))), 2) == 0.22
    final = float(states[-1].total) / float(states[-1].normaliser)
    assert final == pytest.approx(float(torch.softmax(scores, 0) @ values), rel=1e-6)
    assert float(states[0].total) / float(states[0].normaliser) != pytest.approx(final)


def test_tiled_equals_the_fused_kernel_at_a_measured_length():
    """'Three implementations' of the same attention: at L = 1,024 with the chapter's block size,
    outputs and gradients agree to float32 rounding, with and without the window."""
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(1, 2, 1024, 64, generator=generator, requires_grad=True)
              for _ in range(3)]
    window = SETTINGS["window"]
    positions = torch.arange(1024)
    offset = positions[:, None] - positions[None, :]  # i - j
    for settings, mask in (({}, None),
                           ({"causal": True, "window": window},
                            (offset >= 0) & (offset <= window))):
        tiled = tiled_attention(*inputs, **settings, block_size=SETTINGS["block_size"])
        fused = F.scaled_dot_product_attention(*inputs, attn_mask=mask)
        torch.testing.assert_close(tiled, fused, atol=1e-5, rtol=1e-5)
        grads = torch.autograd.grad(tiled.sum(), inputs)
        for got, want in zip(grads, torch.autograd.grad(fused.sum(), inputs), strict=True):
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dense_mask", [False, True], ids=["no mask", "dense window mask"])
def test_the_fused_kernel_is_a_flash_kernel_forward_and_backward(dense_mask):
    """'runs a flash kernel written in C++, forward and backward
    (_scaled_dot_product_flash_attention_for_cpu and its _backward)', and, with the window as a
    dense mask, 'it still runs its flash kernel, forward and backward'."""
    query, key, value = (torch.randn(1, 2, 512, 64, requires_grad=True) for _ in range(3))
    mask = local_mask(512, SETTINGS["window"], causal=True) if dense_mask else None

    def forward_and_backward():
        F.scaled_dot_product_attention(query, key, value, attn_mask=mask).sum().backward()

    kernels = sdpa_kernel_name(forward_and_backward).split(", ")
    assert kernels == ["aten::_scaled_dot_product_flash_attention_for_cpu",
                       "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak memory is read from /proc")
def test_what_the_fused_call_holds_depends_on_its_backend_and_its_mask():
    # The SDPA table: flash kernel by default, math backend materialises the matrix, a dense
    # bool mask costs O(L^2) memory, is_causal=True does not. The page's own measurement (in a
    # fresh process, lengths 512 to 2,048), read from the cache the docs build filled.
    points = cached_sdpa_points()
    peaks = {(point.variant, point.length): point.peak_bytes for point in points}
    kernels = {point.variant: point.kernel for point in points}
    assert "flash" in kernels["default, no mask"]
    assert "flash" in kernels["is_causal=True"] and "flash" in kernels["dense bool causal mask"]
    assert kernels["math backend, no mask"].endswith("attention_math")
    heads, length = 4, 2048
    assert peaks["math backend, no mask", length] >= 0.9 * heads * length**2 * 4
    assert peaks["math backend, no mask", length] >= 3 * peaks["math backend, no mask", 1024]
    assert peaks["dense bool causal mask", length] >= length**2  # at least the mask's bytes
    assert peaks["dense bool causal mask", length] >= 3 * peaks["dense bool causal mask", 1024]
    flag = peaks["is_causal=True", length]
    assert flag < 2.5 * max(peaks["is_causal=True", 1024], 1)
    assert flag < peaks["dense bool causal mask", length] / 4
