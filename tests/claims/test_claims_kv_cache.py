"""The claims of the key/value-cache part of the chapter "Attention at scale", every seed.

They read the page's numbers through the same result cache as its figures and tables
(``attnprimer.site.experiments.kv_cache``), on the site's trained decoder-only models. No time is
asserted: the page's times are measurements of the machine that built it.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnprimer.grouped_query import GroupedQueryAttention
from attnprimer.kv_cache import LayerCache
from attnprimer.site.catalogue import TRANSFORMER_STEPS, TRANSFORMERS, site_seeds
from attnprimer.site.experiments.kv_cache import (
    LARGER,
    LENGTHS,
    PROMPT,
    cache_table,
    cached_decoding_cost,
    cached_decoding_run,
    cached_equality,
    cached_site_model_speed,
)

DECODER_ONLY = "Transformer (decoder-only)"


@pytest.fixture(scope="module")
def decoders(site_models):
    settings = TRANSFORMERS[DECODER_ONLY]
    return [site_models(model) for model in site_seeds(
        "reversal-transformer", **settings, steps=TRANSFORMER_STEPS[settings["architecture"]])]


def test_three_seeds(decoders):
    assert len(decoders) == 3


def test_the_cache_writes_exactly_the_tokens_of_recomputation_on_every_seed(decoders):
    """Same tokens, logits equal up to float32 rounding; the batch is padded and holds
    inputs longer than any in training, as the page says."""
    for trained in decoders:
        result = cached_equality(trained)
        assert result["same tokens"]
        assert result["largest difference"] < 1e-4
        assert 0 < result["padded"] < result["inputs"]
        assert result["beyond training"] > 0


def test_the_trained_models_speed_run_wrote_the_same_tokens(decoders):
    assert cached_site_model_speed(decoders[0])["same tokens"]


@pytest.fixture(scope="module")
def cost(decoders):
    return {(point.cache, point.length): point for point in cached_decoding_cost(decoders[0])}


def test_the_cache_grows_by_one_position_per_token(cost):
    """Keys and values of every layer, for the prompt, the separator and every token fed back
    (the last one is not): 2 x layers x positions x D x 4 bytes."""
    for length in LENGTHS:
        positions = PROMPT + 1 + length - 1
        assert cost[True, length].cache_bytes == 2 * LARGER["layers"] * positions \
            * LARGER["dim"] * 4
        assert cost[False, length].cache_bytes == 0


def test_recomputation_peaks_above_the_cache_at_the_longest_length(cost):
    """Memory, not time: recomputing holds every layer's (L, L) weights, more than the cache."""
    longest = LENGTHS[-1]
    on, off = cost[True, longest], cost[False, longest]
    if on.peak_bytes is None or off.peak_bytes is None:
        pytest.skip("peak memory is not measurable on this platform")
    assert off.peak_bytes > on.peak_bytes


def test_fewer_key_value_heads_shrink_the_cache_by_h_over_g():
    table = dict(cache_table())
    heads = LARGER["heads"]
    assert table[heads] == 2 * LARGER["layers"] * LARGER["dim"] * 4  # multi-head: 2 x D
    for groups, per_token in table.items():
        assert per_token * heads / groups == table[heads]


def test_the_decoding_times_are_five_runs_min_and_median_with_the_machine(decoders):
    """The tables give the shortest and the median of five runs, and the machine."""
    run = cached_decoding_run(decoders[0])
    assert run["repeats"] >= 5
    for machine in (run["before"], run["after"]):
        assert machine["cpu"] and machine["cores"] >= 1 and "load" in machine
    for point in cached_decoding_cost(decoders[0]):
        assert 0 < point.seconds <= point.median_seconds
    speed = cached_site_model_speed(decoders[0])
    assert speed["repeats"] >= 5
    assert speed["seconds with cache"] <= speed["median with cache"]
    assert speed["seconds without"] <= speed["median without"]


def test_the_decoding_memory_is_read_to_about_one_mib(cost):
    """'read the peaks to about 1 MiB': the repeated decodings' peaks agree to within that."""
    for point in cost.values():
        if point.peak_spread_bytes is not None:
            assert point.peak_spread_bytes < 2**20, point


class _Shapes(TorchDispatchMode):
    """Records the name and output shape of every operation run inside it."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self.seen.append((str(func), tuple(out.shape)))
        return out


def test_the_teaching_code_copies_the_shared_heads_out_to_h_on_every_step():
    """'repeat_interleave copies the G heads out to H before the attention, so each step
    writes and reads keys and values of multi-head size': a multi-query layer (G = 1, H = 8)
    with 5 cached positions makes (1, 8, 6, Dh) keys and values at the next step, while its
    cache holds (1, 1, 6, Dh)."""
    torch.manual_seed(0)
    layer, cache = GroupedQueryAttention(32, 8, 1), LayerCache()
    with torch.no_grad():
        layer(torch.randn(1, 5, 32), cache=cache)
        with _Shapes() as shapes:
            layer(torch.randn(1, 1, 32), cache=cache)
    copies = [shape for name, shape in shapes.seen if "repeat_interleave" in name
              or "index_select" in name or "expand" in name or "clone" in name]
    assert (1, 8, 6, 4) in copies, shapes.seen
    assert cache.nbytes == 2 * 6 * 4 * 4  # keys and values: 1 head, 6 positions, Dh = 4
