"""Tests for attnprimer.masks: boolean masks, True = may attend."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnprimer import causal_mask, combine_masks, local_mask, padding_mask, to_blocked_mask


def _expected_from_rule(rows: int, cols: int, rule) -> torch.Tensor:
    """Build a bool (rows, cols) tensor entry by entry from ``rule(i, j)``."""
    entries = [[bool(rule(i, j)) for j in range(cols)] for i in range(rows)]
    return torch.tensor(entries, dtype=torch.bool)


# --- causal_mask -------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 2, 5])
def test_causal_mask_square_allows_only_past_and_present(length):
    mask = causal_mask(length)
    assert mask.dtype == torch.bool
    assert mask.shape == (length, length)
    assert torch.equal(mask, _expected_from_rule(length, length, lambda i, j: j <= i))


@pytest.mark.parametrize(("query_length", "key_length"), [(2, 5), (5, 2), (3, 4), (1, 3)])
def test_causal_mask_rectangular(query_length, key_length):
    mask = causal_mask(query_length, key_length)
    assert mask.dtype == torch.bool
    assert mask.shape == (query_length, key_length)
    expected = _expected_from_rule(query_length, key_length, lambda i, j: j <= i)
    assert torch.equal(mask, expected)


def test_causal_mask_key_length_defaults_to_query_length():
    assert torch.equal(causal_mask(4), causal_mask(4, 4))
    assert torch.equal(causal_mask(4, None), causal_mask(4, 4))


@pytest.mark.parametrize(("query_length", "key_length"), [(3, 3), (2, 5), (5, 2)])
def test_causal_mask_matches_torch_is_causal(query_length, key_length, generator):
    # PyTorch's is_causal is aligned top-left for L != S, like causal_mask.
    query = torch.randn(2, query_length, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(2, key_length, 4, generator=generator, dtype=torch.float64)
    value = torch.randn(2, key_length, 3, generator=generator, dtype=torch.float64)
    with_flag = F.scaled_dot_product_attention(query, key, value, is_causal=True)
    with_mask = F.scaled_dot_product_attention(
        query, key, value, attn_mask=causal_mask(query_length, key_length)
    )
    torch.testing.assert_close(with_mask, with_flag, atol=1e-12, rtol=1e-12)


def test_decoding_with_a_cache_needs_the_bottom_right_triangle_not_causal_mask(generator):
    # The docstring of causal_mask: the last L of S positions, as a KV cache decodes them,
    # match the full causal pass only with the triangle aligned bottom-right.
    length, new = 6, 2
    x = torch.randn(1, length, 4, generator=generator, dtype=torch.float64)
    full = F.scaled_dot_product_attention(x, x, x, attn_mask=causal_mask(length))[:, -new:]
    queries = x[:, -new:]  # (1, L, 4), the new positions; keys and values: all S = 6
    bottom_right = torch.tril(torch.ones(new, length, dtype=torch.bool), diagonal=length - new)
    cached = F.scaled_dot_product_attention(queries, x, x, attn_mask=bottom_right)
    torch.testing.assert_close(cached, full, atol=1e-12, rtol=1e-12)
    top_left = F.scaled_dot_product_attention(queries, x, x, attn_mask=causal_mask(new, length))
    assert not torch.allclose(top_left, full)


@pytest.mark.parametrize(("query_length", "key_length"), [(0, 3), (3, 0), (-1, None)])
def test_causal_mask_rejects_non_positive_lengths(query_length, key_length):
    with pytest.raises(ValueError, match="must be positive"):
        causal_mask(query_length, key_length)


# --- padding_mask ------------------------------------------------------------------------------


@pytest.mark.parametrize("as_tensor", [False, True], ids=["list", "tensor"])
def test_padding_mask_marks_real_positions(as_tensor):
    lengths = [3, 1, 4, 0]
    mask = padding_mask(torch.tensor(lengths) if as_tensor else lengths)
    assert mask.dtype == torch.bool
    assert mask.shape == (len(lengths), max(lengths))
    expected = _expected_from_rule(len(lengths), max(lengths), lambda b, s: s < lengths[b])
    assert torch.equal(mask, expected)


def test_padding_mask_list_and_tensor_agree():
    assert torch.equal(padding_mask([2, 5, 1]), padding_mask(torch.tensor([2, 5, 1])))


def test_padding_mask_max_length_pads_further():
    lengths = [2, 3]
    mask = padding_mask(lengths, max_length=6)
    assert mask.shape == (2, 6)
    assert torch.equal(mask, _expected_from_rule(2, 6, lambda b, s: s < lengths[b]))
    # Equal to the longest length: the same as the default.
    assert torch.equal(padding_mask(lengths, max_length=3), padding_mask(lengths))


def test_padding_mask_row_counts_equal_lengths():
    lengths = torch.tensor([5, 0, 2, 7])
    mask = padding_mask(lengths, max_length=9)
    assert torch.equal(mask.sum(dim=-1), lengths)


def test_padding_mask_broadcasts_over_queries():
    lengths = [1, 3]
    mask = padding_mask(lengths)[:, None, :]  # (B, 1, S)
    scores_shape = (2, 4, 3)  # (B, L, S)
    expanded = mask.expand(scores_shape)
    for b in range(2):
        for i in range(4):
            assert expanded[b, i].tolist() == [s < lengths[b] for s in range(3)]


@pytest.mark.parametrize("lengths", [[2, -1], torch.tensor([-3])])
def test_padding_mask_rejects_negative_lengths(lengths):
    with pytest.raises(ValueError, match="non-negative"):
        padding_mask(lengths)


def test_padding_mask_rejects_too_short_max_length():
    with pytest.raises(ValueError, match="max_length=2") as excinfo:
        padding_mask([1, 4], max_length=2)
    assert "4" in str(excinfo.value)


def test_padding_mask_rejects_non_vector_lengths():
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        padding_mask(torch.tensor([[1, 2], [3, 4]]))


# --- local_mask --------------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "window"), [(1, 0), (4, 0), (5, 1), (6, 2), (4, 10)])
def test_local_mask_is_a_band(length, window):
    mask = local_mask(length, window)
    assert mask.dtype == torch.bool
    assert mask.shape == (length, length)
    expected = _expected_from_rule(length, length, lambda i, j: abs(i - j) <= window)
    assert torch.equal(mask, expected)


@pytest.mark.parametrize(("length", "window"), [(1, 0), (4, 0), (5, 1), (6, 2)])
def test_local_mask_causal_looks_back_only(length, window):
    mask = local_mask(length, window, causal=True)
    expected = _expected_from_rule(length, length, lambda i, j: 0 <= i - j <= window)
    assert torch.equal(mask, expected)


def test_local_mask_window_zero_is_the_diagonal():
    assert torch.equal(local_mask(5, 0), torch.eye(5, dtype=torch.bool))


def test_local_mask_wide_window_degenerates_to_full_and_causal():
    assert local_mask(4, window=3).all()
    assert torch.equal(local_mask(4, window=3, causal=True), causal_mask(4))


def test_local_mask_rejects_negative_window_and_empty_length():
    with pytest.raises(ValueError, match="window"):
        local_mask(4, -1)
    with pytest.raises(ValueError, match="length"):
        local_mask(0, 1)


# --- combine_masks -----------------------------------------------------------------------------


def test_combine_masks_skips_none():
    mask = causal_mask(3)
    assert torch.equal(combine_masks(None, mask, None), mask)
    assert combine_masks() is None
    assert combine_masks(None, None) is None


def test_combine_masks_is_elementwise_and(generator):
    first = torch.rand(3, 4, generator=generator) < 0.5
    second = torch.rand(3, 4, generator=generator) < 0.5
    combined = combine_masks(first, second)
    assert torch.equal(combined, first & second)
    assert torch.equal(combine_masks(second, first), combined)


def test_combine_masks_broadcasts_causal_and_padding():
    lengths = [2, 3]
    causal = causal_mask(3)  # (L, S)
    padding = padding_mask(lengths, max_length=3)[:, None, :]  # (B, 1, S)
    combined = combine_masks(causal, padding)
    assert combined.shape == (2, 3, 3)  # (B, L, S)
    for b in range(2):
        expected = _expected_from_rule(3, 3, lambda i, j, b=b: j <= i and j < lengths[b])
        assert torch.equal(combined[b], expected)


def test_combine_masks_three_masks():
    everything = torch.ones(1, 4, 4, dtype=torch.bool)  # (B, L, S), allows all
    combined = combine_masks(causal_mask(4), None, local_mask(4, 1), everything)
    assert combined.shape == (1, 4, 4)
    assert torch.equal(combined[0], local_mask(4, 1, causal=True))


@pytest.mark.parametrize("bad", [torch.ones(3, 3), torch.ones(3, 3, dtype=torch.uint8)])
def test_combine_masks_rejects_non_boolean(bad):
    with pytest.raises(TypeError, match="boolean"):
        combine_masks(causal_mask(3), bad)
    with pytest.raises(TypeError, match="boolean"):
        combine_masks(bad)


# --- to_blocked_mask ---------------------------------------------------------------------------


def test_to_blocked_mask_negates_and_is_its_own_inverse(generator):
    mask = torch.rand(2, 3, 5, generator=generator) < 0.5
    blocked = to_blocked_mask(mask)
    assert blocked.dtype == torch.bool
    assert torch.equal(blocked, ~mask)
    assert torch.equal(to_blocked_mask(blocked), mask)


@pytest.mark.parametrize("bad", [torch.ones(2, 2), torch.zeros(2, 2, dtype=torch.int64)])
def test_to_blocked_mask_rejects_non_boolean(bad):
    with pytest.raises(TypeError, match="boolean"):
        to_blocked_mask(bad)


def test_to_blocked_mask_is_what_nn_multihead_attention_expects(generator):
    torch.manual_seed(0)  # nn.MultiheadAttention's initialisation
    batch, length, embed_dim, heads = 2, 4, 6, 2
    module = nn.MultiheadAttention(embed_dim, heads, batch_first=True).double()
    x = torch.randn(batch, length, embed_dim, generator=generator, dtype=torch.float64)
    lengths = [2, 4]
    causal = causal_mask(length)  # (L, S)
    padding = padding_mask(lengths)  # (B, S)
    _, weights = module(
        x,
        x,
        x,
        attn_mask=to_blocked_mask(causal),
        key_padding_mask=to_blocked_mask(padding),
        average_attn_weights=False,
    )  # (B, H, L, S)
    allowed = combine_masks(causal, padding[:, None, :])[:, None]  # (B, 1, L, S)
    allowed = allowed.expand_as(weights)
    assert torch.all(weights[~allowed] == 0)
    assert torch.all(weights[allowed] > 0)
    torch.testing.assert_close(
        weights.sum(-1), torch.ones(batch, heads, length, dtype=torch.float64), atol=1e-12, rtol=0
    )
