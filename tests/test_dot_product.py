"""Tests for attnprimer.dot_product: dot and general scores, scaled dot-product attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer import (
    GeneralScore,
    causal_mask,
    combine_masks,
    dot_scores,
    general_scores,
    padding_mask,
    scaled_dot_product_attention,
)

PROPERTY_SETTINGS = settings(deadline=None, max_examples=50, database=None)


def _reference_weights(query, key, mask, scale):
    """softmax(Q K^T * scale) with masked keys filled with -inf (NaN on fully masked rows)."""
    scores = torch.einsum("...ld,...sd->...ls", query, key) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


# --- dot_scores --------------------------------------------------------------------------------


def test_dot_scores_is_every_pairwise_dot_product(generator):
    query = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 5, 4, generator=generator, dtype=torch.float64)
    scores = dot_scores(query, key)
    assert scores.shape == (2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                expected = sum(query[b, i, d] * key[b, j, d] for d in range(4))
                torch.testing.assert_close(scores[b, i, j], expected)


def test_dot_scores_broadcasts_batch_dims(generator):
    query = torch.randn(2, 1, 3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(5, 6, 4, generator=generator, dtype=torch.float64)
    scores = dot_scores(query, key)
    assert scores.shape == (2, 5, 3, 6)
    torch.testing.assert_close(scores[1, 4], query[1, 0] @ key[4].T)


def test_dot_scores_key_dim_mismatch_names_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        dot_scores(torch.zeros(2, 3, 4), torch.zeros(2, 5, 6))
    assert "(2, 3, 4)" in str(excinfo.value) and "(2, 5, 6)" in str(excinfo.value)


def test_dot_scores_batch_mismatch_names_both_shapes():
    with pytest.raises(ValueError) as excinfo:
        dot_scores(torch.zeros(2, 3, 4), torch.zeros(3, 5, 4))
    assert "(2, 3, 4)" in str(excinfo.value) and "(3, 5, 4)" in str(excinfo.value)


def test_dot_scores_needs_two_dims():
    with pytest.raises(ValueError) as excinfo:
        dot_scores(torch.zeros(4), torch.zeros(5, 4))
    assert "(4,)" in str(excinfo.value) and "(5, 4)" in str(excinfo.value)


# --- scaled_dot_product_attention vs PyTorch ---------------------------------------------------

MASK_KINDS = ["none", "causal", "padding", "causal+padding"]
BATCH_SHAPES = [(3,), (3, 2)]  # (B,) and (B, H), with B != H so a misaligned mask cannot pass


def _make_mask(kind: str, batch_shape: tuple[int, ...], length: int, key_length: int):
    lengths = torch.tensor([key_length, 1, max(1, key_length - 2)])  # (B,), every length >= 1
    padding = padding_mask(lengths, max_length=key_length)  # (B, S)
    # (B, S) -> (B, 1, S) for scores (B, L, S); (B, 1, 1, S) for scores (B, H, L, S)
    padding = padding.reshape(lengths.shape[0], *([1] * len(batch_shape)), key_length)
    causal = causal_mask(length, key_length)  # (L, S)
    return {
        "none": None,
        "causal": causal,
        "padding": padding,
        "causal+padding": combine_masks(causal, padding),
    }[kind]


@pytest.mark.parametrize("scale", [None, 0.37], ids=["default_scale", "custom_scale"])
@pytest.mark.parametrize("batch_shape", BATCH_SHAPES, ids=["B", "B_H"])
@pytest.mark.parametrize(("length", "key_length"), [(4, 4), (3, 6), (6, 3)], ids=str)
@pytest.mark.parametrize("mask_kind", MASK_KINDS)
def test_sdpa_matches_torch(
    mask_kind, length, key_length, batch_shape, scale, float_dtype, float_tol, generator
):
    dim, value_dim = 5, 7
    query = torch.randn(*batch_shape, length, dim, generator=generator, dtype=float_dtype)
    key = torch.randn(*batch_shape, key_length, dim, generator=generator, dtype=float_dtype)
    value = torch.randn(*batch_shape, key_length, value_dim, generator=generator, dtype=float_dtype)
    mask = _make_mask(mask_kind, batch_shape, length, key_length)

    context, weights = scaled_dot_product_attention(query, key, value, mask=mask, scale=scale)
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale)

    assert context.shape == (*batch_shape, length, value_dim)
    assert weights.shape == (*batch_shape, length, key_length)
    assert context.dtype == weights.dtype == float_dtype
    torch.testing.assert_close(context, expected, **float_tol)
    reference_scale = 1 / math.sqrt(dim) if scale is None else scale
    torch.testing.assert_close(
        weights, _reference_weights(query, key, mask, reference_scale), **float_tol
    )
    if mask is not None:
        assert torch.all(weights[~mask.expand_as(weights)] == 0)


def test_sdpa_matches_torch_on_rows_that_are_not_fully_masked(float_dtype, float_tol, generator):
    batch, heads, length, key_length, dim = 2, 3, 5, 4, 6
    query = torch.randn(batch, heads, length, dim, generator=generator, dtype=float_dtype)
    key = torch.randn(batch, heads, key_length, dim, generator=generator, dtype=float_dtype)
    value = torch.randn(batch, heads, key_length, dim, generator=generator, dtype=float_dtype)
    mask = torch.rand(batch, 1, length, key_length, generator=generator) < 0.5
    mask[0, 0, 1] = False  # one fully masked row (for every head)
    mask[1, 0, 2, 3] = True  # and one row with a single key
    mask[1, 0, 2, :3] = False
    context, weights = scaled_dot_product_attention(query, key, value, mask)

    rows = mask.any(-1).expand(batch, heads, length)  # (B, H, L): rows with any key
    assert not rows.all()
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    torch.testing.assert_close(context[rows], expected[rows], **float_tol)
    reference = _reference_weights(query, key, mask, 1 / math.sqrt(dim))
    torch.testing.assert_close(weights[rows], reference[rows], **float_tol)
    # Rows without keys: zero, not NaN.
    assert torch.all(weights[~rows] == 0) and torch.all(context[~rows] == 0)


def test_sdpa_scale_none_is_inverse_sqrt_dk(generator):
    query = torch.randn(2, 3, 9, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 4, 9, generator=generator, dtype=torch.float64)
    value = torch.randn(2, 4, 2, generator=generator, dtype=torch.float64)
    default = scaled_dot_product_attention(query, key, value)
    explicit = scaled_dot_product_attention(query, key, value, scale=1 / 3)
    torch.testing.assert_close(default, explicit, atol=1e-14, rtol=1e-14)
    other = scaled_dot_product_attention(query, key, value, scale=1.0)
    assert not torch.allclose(default[1], other[1])


def test_sdpa_scale_zero_is_respected(generator):
    # A scale of 0 is a scale, not "use the default": every key gets the same weight.
    query = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(5, 4, generator=generator, dtype=torch.float64)
    value = torch.randn(5, 2, generator=generator, dtype=torch.float64)
    context, weights = scaled_dot_product_attention(query, key, value, scale=0.0)
    torch.testing.assert_close(weights, torch.full((3, 5), 0.2, dtype=torch.float64))
    torch.testing.assert_close(context, value.mean(0).expand(3, 2))


def test_sdpa_fully_masked_row_is_zero_with_finite_gradients(generator):
    query = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    key = torch.randn(2, 5, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    value = torch.randn(2, 5, 3, generator=generator, dtype=torch.float64, requires_grad=True)
    mask = padding_mask([0, 2], max_length=5)[:, None, :]  # batch 0 has no keys at all
    context, weights = scaled_dot_product_attention(query, key, value, mask)
    assert not torch.isnan(context).any() and not torch.isnan(weights).any()
    assert torch.all(weights[0] == 0) and torch.all(context[0] == 0)
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, dtype=torch.float64))
    context.sum().backward()
    for tensor in (query, key, value):
        assert tensor.grad is not None and torch.isfinite(tensor.grad).all()
    # Nothing flows into the batch element that attends to nothing, and its values are unused.
    assert torch.all(query.grad[0] == 0) and torch.all(value.grad[0] == 0)
    assert torch.any(query.grad[1] != 0)


# --- shape errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query_shape", "key_shape", "value_shape", "named"),
    [
        # query Dk != key Dk
        ((2, 3, 4), (2, 5, 6), (2, 5, 6), [(2, 3, 4), (2, 5, 6)]),
        # key S != value S
        ((2, 3, 4), (2, 5, 4), (2, 6, 4), [(2, 5, 4), (2, 6, 4)]),
        # batch dims of query and key do not broadcast
        ((2, 3, 4), (3, 5, 4), (3, 5, 4), [(2, 3, 4), (3, 5, 4)]),
        # batch dims of value do not broadcast with those of the scores (2, 3, 5)
        ((2, 3, 4), (2, 5, 4), (4, 5, 4), [(2, 3, 5), (4, 5, 4)]),
    ],
    ids=["query_key_dim", "key_value_length", "query_key_batch", "value_batch"],
)
def test_sdpa_shape_mismatch_names_both_shapes(query_shape, key_shape, value_shape, named):
    query, key, value = torch.zeros(query_shape), torch.zeros(key_shape), torch.zeros(value_shape)
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(query, key, value)
    for shape in named:
        assert str(shape) in str(excinfo.value)


def test_sdpa_mask_that_does_not_broadcast_raises():
    query, key = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4)
    mask = torch.ones(3, 4, dtype=torch.bool)
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(query, key, key, mask)
    assert "(3, 4)" in str(excinfo.value) and "(2, 3, 5)" in str(excinfo.value)


def test_sdpa_non_boolean_mask_raises_type_error():
    query, key = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4)
    with pytest.raises(TypeError):
        scaled_dot_product_attention(query, key, key, torch.ones(3, 5))
    with pytest.raises(TypeError):
        scaled_dot_product_attention(query, key, key, torch.ones(3, 5, dtype=torch.uint8))


# --- general scores ----------------------------------------------------------------------------


def test_general_scores_is_q_w_kt(generator):
    query = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 5, 6, generator=generator, dtype=torch.float64)
    weight = torch.randn(4, 6, generator=generator, dtype=torch.float64)
    scores = general_scores(query, key, weight)
    assert scores.shape == (2, 3, 5)
    for b in range(2):
        for i in range(3):
            for j in range(5):
                expected = query[b, i] @ weight @ key[b, j]
                torch.testing.assert_close(scores[b, i, j], expected, atol=1e-12, rtol=1e-12)


def test_general_scores_with_identity_is_dot_scores(generator):
    query = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 5, 4, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(
        general_scores(query, key, torch.eye(4, dtype=torch.float64)), dot_scores(query, key)
    )


@pytest.mark.parametrize("weight_shape", [(6, 4), (4, 5), (4,), (1, 4, 6)], ids=str)
def test_general_scores_wrong_weight_shape_names_shapes(weight_shape):
    query, key = torch.zeros(2, 3, 4), torch.zeros(2, 5, 6)
    with pytest.raises(ValueError) as excinfo:
        general_scores(query, key, torch.zeros(weight_shape))
    message = str(excinfo.value)
    assert "(2, 3, 4)" in message and "(2, 5, 6)" in message
    assert str(weight_shape) in message


def test_general_score_module_shapes_and_weight(generator):
    score = GeneralScore(query_dim=4, key_dim=6).double()
    assert score.weight.shape == (4, 6)
    assert score.weight.requires_grad
    query = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 5, 6, generator=generator, dtype=torch.float64)
    scores = score(query, key)
    assert scores.shape == (2, 3, 5)
    torch.testing.assert_close(scores, query @ score.weight @ key.transpose(-2, -1))
    # Batch dims broadcast: one key set for every batch element.
    assert score(query, key[0]).shape == (2, 3, 5)
    assert score(query[0], key[0]).shape == (3, 5)
    scores.sum().backward()
    assert score.weight.grad is not None and torch.any(score.weight.grad != 0)


def test_general_score_module_rejects_wrong_input_sizes():
    score = GeneralScore(query_dim=4, key_dim=6)
    with pytest.raises(ValueError) as excinfo:
        score(torch.zeros(2, 3, 6), torch.zeros(2, 5, 4))
    assert "(2, 3, 6)" in str(excinfo.value) and "(2, 5, 4)" in str(excinfo.value)


def test_general_score_initialisation_is_not_degenerate():
    torch.manual_seed(0)
    weight = GeneralScore(query_dim=8, key_dim=8).weight
    assert torch.isfinite(weight).all() and weight.abs().max() > 0
    bound = math.sqrt(6 / (8 + 8))  # Xavier uniform
    assert weight.abs().max() <= bound


# --- properties --------------------------------------------------------------------------------


@st.composite
def attention_inputs(draw):
    batch = draw(st.integers(1, 3))
    length = draw(st.integers(1, 5))
    key_length = draw(st.integers(1, 6))
    dim = draw(st.integers(1, 4))
    value_dim = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, length, dim, generator=generator, dtype=torch.float64)
    key = torch.randn(batch, key_length, dim, generator=generator, dtype=torch.float64)
    value = torch.randn(batch, key_length, value_dim, generator=generator, dtype=torch.float64)
    use_mask = draw(st.booleans())
    mask = torch.rand(batch, length, key_length, generator=generator) < 0.6 if use_mask else None
    permutation = torch.randperm(key_length, generator=generator)
    return query, key, value, mask, permutation


@PROPERTY_SETTINGS
@given(attention_inputs())
def test_property_weight_rows_sum_to_one_or_zero(inputs):
    query, key, value, mask, _ = inputs
    context, weights = scaled_dot_product_attention(query, key, value, mask)
    assert torch.isfinite(context).all()
    expected = torch.ones(weights.shape[:-1], dtype=torch.float64)
    if mask is not None:
        expected = mask.any(-1).to(torch.float64)
        assert torch.all(weights[~mask] == 0)
    torch.testing.assert_close(weights.sum(-1), expected, atol=1e-12, rtol=0)


@PROPERTY_SETTINGS
@given(attention_inputs())
def test_property_permuting_keys_and_values_permutes_weight_columns(inputs):
    query, key, value, mask, permutation = inputs
    context, weights = scaled_dot_product_attention(query, key, value, mask)
    permuted_mask = None if mask is None else mask[..., permutation]
    permuted_context, permuted_weights = scaled_dot_product_attention(
        query, key[:, permutation], value[:, permutation], permuted_mask
    )
    torch.testing.assert_close(permuted_context, context, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(permuted_weights, weights[..., permutation], atol=1e-12, rtol=1e-12)
