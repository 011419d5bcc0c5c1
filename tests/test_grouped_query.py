"""Grouped-query attention: equal to multi-head attention when G = H, to PyTorch's
``enable_gqa`` for any G, and its cache holds G heads."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from attnprimer.grouped_query import GroupedQueryAttention, cache_bytes_per_token, grouped_attention
from attnprimer.kv_cache import LayerCache
from attnprimer.masks import causal_mask, combine_masks, padding_mask
from attnprimer.multihead import MultiHeadAttention

# A builtin without a Python signature: its docstring lists the arguments.
HAS_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


def _masks(batch, length):
    padding = padding_mask(torch.tensor([length, length - 2, 1][:batch]), length)
    return [None, causal_mask(length), combine_masks(causal_mask(length), padding[:, None, :])]


@pytest.mark.parametrize("mask_index", [0, 1, 2])
@pytest.mark.parametrize("bias", [True, False])
def test_equal_to_multihead_when_the_groups_are_the_heads(generator, mask_index, bias):
    torch.manual_seed(0)
    multihead = MultiHeadAttention(12, 3, bias=bias).double()
    grouped = GroupedQueryAttention.from_multihead(multihead)
    assert grouped.num_kv_heads == 3
    x = torch.randn(3, 6, 12, generator=generator, dtype=torch.float64)
    mask = _masks(3, 6)[mask_index]
    expected, expected_weights = multihead(x, mask=mask)
    output, weights = grouped(x, mask=mask)
    torch.testing.assert_close(output, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(weights, expected_weights, rtol=0, atol=1e-10)


def test_cross_attention_equal_to_multihead(generator):
    multihead = MultiHeadAttention(8, 4).double()
    grouped = GroupedQueryAttention.from_multihead(multihead)
    x = torch.randn(2, 3, 8, generator=generator, dtype=torch.float64)
    memory = torch.randn(2, 5, 8, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(grouped(x, memory)[0], multihead(x, memory)[0],
                               rtol=0, atol=1e-10)


@pytest.mark.skipif(not HAS_GQA, reason="this torch has no enable_gqa")
@pytest.mark.parametrize("groups", [1, 2, 4, 8])
@pytest.mark.parametrize("mask_index", [0, 1, 2])
def test_equal_to_torch_enable_gqa(generator, groups, mask_index):
    q = torch.randn(3, 8, 6, 5, generator=generator, dtype=torch.float64)  # H = 8
    k = torch.randn(3, groups, 6, 5, generator=generator, dtype=torch.float64)
    v = torch.randn(3, groups, 6, 5, generator=generator, dtype=torch.float64)
    mask = _masks(3, 6)[mask_index]
    if mask is not None and mask.dim() == 3:
        mask = mask[:, None]  # (B, 1, L, S)
    context, weights = grouped_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(context, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 8, 6, dtype=torch.float64))



@pytest.mark.skipif(not HAS_GQA, reason="this torch has no enable_gqa")
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_the_layer_equals_torch_enable_gqa_on_its_own_projections(generator, groups):
    """The layer, not only the function: its projections, then PyTorch's grouped SDPA."""
    torch.manual_seed(2)
    layer = GroupedQueryAttention(16, 4, groups).double()
    x = torch.randn(3, 6, 16, generator=generator, dtype=torch.float64)
    mask = _masks(3, 6)[2][:, None]  # causal and padding, (B, 1, L, S)
    q = layer.query_proj(x).view(3, 6, 4, 4).transpose(1, 2)  # (B, H, L, Dh)
    k, v = (proj(x).view(3, 6, groups, 4).transpose(1, 2)  # (B, G, S, Dh)
            for proj in (layer.key_proj, layer.value_proj))
    context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    expected = layer.out_proj(context.transpose(1, 2).reshape(3, 6, 16))
    torch.testing.assert_close(layer(x, mask=mask)[0], expected, rtol=0, atol=1e-10)

def test_the_group_of_a_query_head_is_its_index_over_h_by_g(generator):
    """Head h reads key/value head h // (H / G): change key head 1 and only heads 2, 3 move."""
    q = torch.randn(1, 4, 3, 2, generator=generator)
    k = torch.randn(1, 2, 3, 2, generator=generator)
    before, _ = grouped_attention(q, k, k)
    changed = k.clone()
    changed[:, 1] += 1.0
    after, _ = grouped_attention(q, changed, changed)
    moved = (after - before).abs().amax(dim=(0, 2, 3))
    assert moved[:2].max() == 0 and moved[2:].min() > 0


def test_mean_pooled_groups_reduce_the_key_projection():
    torch.manual_seed(0)
    multihead = MultiHeadAttention(8, 4)
    grouped = GroupedQueryAttention.from_multihead(multihead, num_kv_heads=2)
    # head dim 2: key head 0 of the copy is the mean of heads 0 and 1 (rows 0-1 and 2-3)
    expected = (multihead.key_proj.weight[0:2] + multihead.key_proj.weight[2:4]) / 2
    torch.testing.assert_close(grouped.key_proj.weight[0:2], expected)
    assert grouped.value_proj.weight.shape == (4, 8)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_cached_decoding_equals_one_causal_pass(generator, groups):
    torch.manual_seed(1)
    attention = GroupedQueryAttention(16, 4, groups).double()
    x = torch.randn(2, 7, 16, generator=generator, dtype=torch.float64)
    whole, _ = attention(x, mask=causal_mask(7))
    cache = LayerCache()
    steps = [attention(x[:, t: t + 1], cache=cache)[0] for t in range(7)]
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, rtol=0, atol=1e-10)
    assert cache.keys.shape == (2, groups, 7, 4)  # G heads cached, not H


def test_cache_bytes_shrink_by_h_over_g():
    full = cache_bytes_per_token(64, 8, 8, layers=3, positions=10)
    assert full == 2 * 3 * 64 * 4  # keys and values, 3 layers, D floats of 4 bytes
    for groups in (4, 2, 1):
        assert cache_bytes_per_token(64, 8, groups, layers=3, positions=10) == full * groups / 8


@pytest.mark.parametrize(("heads", "groups"), [(4, 3), (4, 0), (4, 8)])
def test_groups_must_divide_the_heads(heads, groups):
    with pytest.raises(ValueError, match="num_kv_heads"):
        GroupedQueryAttention(16, heads, groups)


def test_key_and_value_heads_must_agree():
    with pytest.raises(ValueError, match="same number G"):
        grouped_attention(torch.zeros(1, 4, 2, 2), torch.zeros(1, 2, 2, 2),
                          torch.zeros(1, 1, 2, 2))
