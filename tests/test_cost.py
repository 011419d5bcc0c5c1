"""The cost measurement: what it measures, and the growth it reports."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import causal_mask
from attnprimer.site.bench import attention_cost as cost
from attnprimer.site.bench.attention_cost import (
    IMPLEMENTATIONS,
    SDPA_VARIANTS,
    measure_attention_cost,
    measure_in_fresh_process,
    sdpa_kernel_name,
)

LINUX = sys.platform.startswith("linux")


def test_the_implementations_compute_the_same_context():
    generator = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(1, 4, 33, 16, generator=generator) for _ in range(3))
    ours, fused = (function(query, key, value) for function in IMPLEMENTATIONS.values())
    torch.testing.assert_close(ours, fused, atol=1e-5, rtol=1e-5)


FRESH_PEAKS = """
import torch
from torch.nn import functional as F
from attnprimer.site.bench import attention_cost as cost
cost.exact_allocator()
print(cost.peak_memory(lambda: torch.ones(16 * 2**20).sum()))  # 64 MiB
length = 2048
query = torch.randn(1, 4, length, 64)
allowed = torch.tril(torch.ones(length, length, dtype=torch.bool))
additive = torch.zeros(length, length).masked_fill(~allowed, float("-inf"))
with torch.no_grad():
    for mask in (allowed, additive):
        F.scaled_dot_product_attention(query, query, query, attn_mask=mask)
        print(cost.peak_memory(
            lambda: F.scaled_dot_product_attention(query, query, query, attn_mask=mask)))
"""


@pytest.fixture(scope="module")
def fresh_peaks() -> list[int]:
    """Peaks measured in one fresh process, as the site measures: a long-lived process may
    reuse memory it already holds, and a reused block raises no peak. One process for the
    three, since starting one (importing torch) costs more than the measurements."""
    result = subprocess.run([sys.executable, "-c", FRESH_PEAKS], capture_output=True,
                            text=True, check=True)
    return [int(line) for line in result.stdout.strip().splitlines()[-3:]]


@pytest.mark.skipif(not LINUX, reason="peak memory is read from /proc")
def test_peak_memory_sees_a_large_allocation(fresh_peaks):
    assert 0.9 * 64 * 2**20 <= fresh_peaks[0] <= 1.5 * 64 * 2**20


def test_peak_memory_is_none_where_it_cannot_be_measured(monkeypatch):
    monkeypatch.setattr(cost.sys, "platform", "darwin")
    assert cost.peak_memory(lambda: None) is None


def test_measure_returns_one_point_per_implementation_and_length():
    points = measure_attention_cost(lengths=(16, 32), repeats=2, heads=2, head_dim=8)
    assert [(point.implementation, point.length) for point in points] == [
        (name, length) for name in IMPLEMENTATIONS for length in (16, 32)]
    assert all(point.seconds > 0 for point in points)


@pytest.mark.skipif(not LINUX, reason="peak memory is read from /proc")
def test_our_memory_grows_quadratically_and_the_fused_kernels_does_not():
    points = measure_in_fresh_process(lengths=(1024, 2048), repeats=1)
    peaks = {(point.implementation, point.length): point.peak_bytes for point in points}
    ours, fused = IMPLEMENTATIONS
    heads = 4
    # Scores and weights, each (1, H, L, L) float32, exist at the same time.
    assert peaks[ours, 2048] >= 0.9 * 2 * heads * 2048**2 * 4
    assert peaks[ours, 2048] >= 3 * peaks[ours, 1024]
    assert peaks[fused, 2048] < 2.5 * max(peaks[fused, 1024], 1)
    assert peaks[fused, 2048] < peaks[ours, 2048] / 10


def test_the_module_prints_a_table(capsys, monkeypatch):
    monkeypatch.setattr(cost, "exact_allocator", lambda: None)  # leave this process's malloc be
    assert cost._main(["--lengths", "16", "32", "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("B=1, H=4, Dh=64")
    assert len(lines) == 2 + 2 * len(IMPLEMENTATIONS)


def test_the_sdpa_variants_compute_the_same_context_as_ours():
    generator = torch.Generator().manual_seed(0)
    query, key, value = (torch.randn(1, 2, 17, 8, generator=generator) for _ in range(3))
    unmasked = scaled_dot_product_attention(query, key, value)[0]
    causal = scaled_dot_product_attention(query, key, value, causal_mask(17))[0]
    expected = {"default, no mask": unmasked, "is_causal=True": causal,
                "dense bool causal mask": causal, "math backend, no mask": unmasked}
    assert set(expected) == set(SDPA_VARIANTS)
    for name, function in SDPA_VARIANTS.items():
        torch.testing.assert_close(function(query, key, value), expected[name],
                                   atol=1e-5, rtol=1e-5)


def test_the_kernel_name_comes_from_the_profiler():
    query = torch.randn(1, 1, 8, 4)
    assert sdpa_kernel_name(lambda: query.sum()) == "none"
    default = SDPA_VARIANTS["default, no mask"]
    assert "flash" in sdpa_kernel_name(lambda: default(query, query, query))


@pytest.mark.skipif(not LINUX, reason="peak memory is read from /proc")
def test_a_boolean_mask_is_copied_into_a_float_mask_inside_the_call(fresh_peaks):
    # The self-attention page: "inside the call, a float copy of it (four bytes per entry)".
    boolean, additive = fresh_peaks[1:]
    floats = 2048**2 * 4
    assert boolean >= 0.9 * floats
    assert additive < 0.5 * floats
