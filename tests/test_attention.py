"""Tests for attnprimer.attention: masked_softmax, softmax_over_keys and attend."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer import attend, causal_mask, masked_softmax
from attnprimer.attention import SHORT_ROW, softmax_over_keys

PROPERTY_SETTINGS = settings(deadline=None, max_examples=60, database=None)


def _reference_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the allowed keys only, written out with exp and a sum, row by row."""
    scores, mask = torch.broadcast_tensors(scores, mask)
    weights = torch.zeros_like(scores)
    flat_scores = scores.reshape(-1, scores.shape[-1])
    flat_mask = mask.reshape(-1, mask.shape[-1])
    flat_weights = weights.view(-1, scores.shape[-1])
    for row in range(flat_scores.shape[0]):
        allowed = [j for j in range(flat_scores.shape[1]) if flat_mask[row, j]]
        if not allowed:
            continue
        top = max(float(flat_scores[row, j]) for j in allowed)
        exps = {j: math.exp(float(flat_scores[row, j]) - top) for j in allowed}
        total = sum(exps.values())
        for j, e in exps.items():
            flat_weights[row, j] = e / total
    return weights


# --- softmax_over_keys -------------------------------------------------------------------------


@pytest.mark.parametrize("keys", [1, 2, 7, 10, 11, SHORT_ROW - 1, SHORT_ROW, SHORT_ROW + 5, 40])
def test_softmax_over_keys_is_torch_softmax_with_its_gradient(keys, float_dtype, float_tol,
                                                               generator):
    scores = (3 * torch.randn(4, 5, keys, generator=generator, dtype=float_dtype)).requires_grad_()
    upstream = torch.randn(4, 5, keys, generator=generator, dtype=float_dtype)
    weights = softmax_over_keys(scores)
    (gradient,) = torch.autograd.grad(weights, scores, upstream)
    expected = torch.softmax(scores, dim=-1)
    (expected_gradient,) = torch.autograd.grad(expected, scores, upstream)
    assert weights.shape == expected.shape
    torch.testing.assert_close(weights, expected, **float_tol)
    torch.testing.assert_close(gradient, expected_gradient, **float_tol)


def test_softmax_over_keys_keeps_torch_softmax_behaviour_at_the_edges():
    scores = torch.tensor([[float("-inf"), 0.0, float("-inf")], [float("-inf")] * 3])
    weights = softmax_over_keys(scores)
    assert weights[0].tolist() == [0.0, 1.0, 0.0]  # a masked key weighs exactly nothing
    assert weights[1].isnan().all() and torch.softmax(scores, -1)[1].isnan().all()
    assert softmax_over_keys(torch.zeros(3, 0)).shape == (3, 0)  # no keys at all


# --- masked_softmax ----------------------------------------------------------------------------


def test_masked_softmax_without_mask_is_softmax(generator):
    scores = torch.randn(2, 3, 5, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(masked_softmax(scores), torch.softmax(scores, dim=-1))
    torch.testing.assert_close(masked_softmax(scores, None), torch.softmax(scores, dim=-1))


@pytest.mark.parametrize(
    "mask_shape", [(2, 3, 5), (3, 5), (5,), (2, 1, 5), (1, 3, 1)], ids=lambda s: str(s)
)
def test_masked_softmax_matches_reference(mask_shape, generator):
    scores = torch.randn(2, 3, 5, generator=generator, dtype=torch.float64)
    mask = torch.rand(mask_shape, generator=generator) < 0.6
    weights = masked_softmax(scores, mask)
    assert weights.shape == scores.shape
    torch.testing.assert_close(
        weights, _reference_masked_softmax(scores, mask), atol=1e-12, rtol=1e-12
    )


def test_masked_softmax_masked_keys_get_exactly_zero(generator):
    scores = 3 * torch.randn(4, 6, generator=generator, dtype=torch.float64)
    mask = torch.rand(4, 6, generator=generator) < 0.5
    mask[:, 0] = True
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights[mask] > 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, dtype=torch.float64))


def test_masked_softmax_ignores_scores_of_masked_keys(generator):
    scores = torch.randn(3, 5, generator=generator, dtype=torch.float64)
    mask = causal_mask(3, 5)
    changed = scores.masked_fill(~mask, 1e6)  # huge scores on keys that may not be attended
    torch.testing.assert_close(masked_softmax(changed, mask), masked_softmax(scores, mask))


def test_masked_softmax_is_stable_for_large_scores():
    scores = torch.tensor([[1000.0, 0.0, -1000.0], [1e4, 1e4, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    weights = masked_softmax(scores, mask)
    assert torch.isfinite(weights).all()
    torch.testing.assert_close(weights[0], torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(weights[1], torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64))


def test_masked_softmax_mask_that_does_not_broadcast_raises():
    scores = torch.zeros(2, 3, 5)
    mask = torch.ones(3, 4, dtype=torch.bool)
    with pytest.raises(ValueError) as excinfo:
        masked_softmax(scores, mask)
    assert "(3, 4)" in str(excinfo.value)
    assert "(2, 3, 5)" in str(excinfo.value)


def test_masked_softmax_mask_with_more_dims_than_scores_raises():
    # Broadcasts, but would enlarge the scores: a mistake, not a mask.
    scores = torch.zeros(3, 5)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    with pytest.raises(ValueError) as excinfo:
        masked_softmax(scores, mask)
    assert "(2, 3, 5)" in str(excinfo.value)
    assert "(3, 5)" in str(excinfo.value)


@pytest.mark.parametrize(
    "mask",
    [torch.ones(3, 5), torch.ones(3, 5, dtype=torch.uint8), torch.ones(3, 5, dtype=torch.int64)],
    ids=["float", "uint8", "int64"],
)
def test_masked_softmax_non_boolean_mask_raises_type_error(mask):
    with pytest.raises(TypeError, match="boolean"):
        masked_softmax(torch.zeros(3, 5), mask)


# --- fully masked rows -------------------------------------------------------------------------


def _mask_with_empty_row(length: int, key_length: int, empty_row: int) -> torch.Tensor:
    mask = causal_mask(length, key_length).clone()
    mask[empty_row] = False
    return mask


def _qkv(generator, batch=2, length=3, key_length=4, dim=5, value_dim=2):
    query = torch.randn(batch, length, dim, generator=generator, dtype=torch.float64)
    key = torch.randn(batch, key_length, dim, generator=generator, dtype=torch.float64)
    value = torch.randn(batch, key_length, value_dim, generator=generator, dtype=torch.float64)
    return [t.requires_grad_() for t in (query, key, value)]


def _assert_finite_grads(*tensors: torch.Tensor) -> None:
    for tensor in tensors:
        assert tensor.grad is not None
        assert torch.isfinite(tensor.grad).all()


def test_masked_softmax_fully_masked_row_is_zero_with_finite_gradients(generator):
    query, key, value = _qkv(generator)
    mask = _mask_with_empty_row(3, 4, empty_row=1)
    weights = masked_softmax(query @ key.transpose(-2, -1), mask)  # (B, L, S)
    context = weights @ value
    assert not torch.isnan(weights).any()
    assert torch.all(weights[:, 1] == 0)
    assert torch.all(context[:, 1] == 0)
    torch.testing.assert_close(
        weights[:, [0, 2]].sum(-1), torch.ones(2, 2, dtype=torch.float64)
    )
    context.sum().backward()
    _assert_finite_grads(query, key, value)


def test_masked_softmax_all_rows_masked(generator):
    scores = torch.randn(2, 3, generator=generator, dtype=torch.float64, requires_grad=True)
    weights = masked_softmax(scores, torch.zeros(2, 3, dtype=torch.bool))
    assert torch.all(weights == 0)
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert torch.all(scores.grad == 0)


def test_attend_fully_masked_row_gives_zero_context_and_finite_gradients(generator):
    query, key, value = _qkv(generator)
    mask = _mask_with_empty_row(3, 4, empty_row=0)
    context, weights = attend(query @ key.transpose(-2, -1), value, mask)
    assert not torch.isnan(context).any() and not torch.isnan(weights).any()
    assert torch.all(weights[:, 0] == 0)
    assert torch.all(context[:, 0] == 0)
    assert torch.any(context[:, 1:] != 0)
    context.sum().backward()
    _assert_finite_grads(query, key, value)


# --- attend ------------------------------------------------------------------------------------


def test_attend_context_is_weighted_average_of_values(generator):
    scores = torch.randn(2, 3, 4, generator=generator, dtype=torch.float64)
    value = torch.randn(2, 4, 5, generator=generator, dtype=torch.float64)
    mask = causal_mask(3, 4)
    context, weights = attend(scores, value, mask)
    assert context.shape == (2, 3, 5)
    assert weights.shape == (2, 3, 4)
    torch.testing.assert_close(weights, _reference_masked_softmax(scores, mask))
    for b in range(2):
        for i in range(3):
            expected = sum(weights[b, i, j] * value[b, j] for j in range(4))
            torch.testing.assert_close(context[b, i], expected)


def test_attend_without_mask_uses_plain_softmax(generator):
    scores = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    value = torch.randn(4, 2, generator=generator, dtype=torch.float64)
    context, weights = attend(scores, value)
    torch.testing.assert_close(weights, torch.softmax(scores, -1))
    torch.testing.assert_close(context, torch.softmax(scores, -1) @ value)


def test_attend_uniform_scores_average_the_values(generator):
    value = torch.randn(5, 3, generator=generator, dtype=torch.float64)
    context, _ = attend(torch.zeros(2, 5, dtype=torch.float64), value)
    torch.testing.assert_close(context, value.mean(0).expand(2, 3))


def test_attend_key_count_mismatch_raises():
    scores = torch.zeros(2, 3, 4)
    value = torch.zeros(2, 5, 6)
    with pytest.raises(ValueError) as excinfo:
        attend(scores, value)
    assert "(2, 3, 4)" in str(excinfo.value)
    assert "(2, 5, 6)" in str(excinfo.value)


def test_attend_batch_mismatch_raises():
    scores = torch.zeros(2, 3, 4)
    value = torch.zeros(3, 4, 6)
    with pytest.raises(ValueError) as excinfo:
        attend(scores, value)
    assert "(2, 3, 4)" in str(excinfo.value)
    assert "(3, 4, 6)" in str(excinfo.value)


def test_attend_checks_the_mask():
    with pytest.raises(TypeError):
        attend(torch.zeros(3, 4), torch.zeros(4, 2), torch.ones(3, 4))
    with pytest.raises(ValueError):
        attend(torch.zeros(3, 4), torch.zeros(4, 2), torch.ones(3, 5, dtype=torch.bool))


# --- properties --------------------------------------------------------------------------------


@st.composite
def scores_and_masks(draw):
    batch = draw(st.integers(1, 3))
    length = draw(st.integers(1, 5))
    key_length = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    density = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    generator = torch.Generator().manual_seed(seed)
    scale = draw(st.sampled_from([0.1, 1.0, 10.0]))
    shape = (batch, length, key_length)
    scores = scale * torch.randn(shape, generator=generator, dtype=torch.float64)
    mask = torch.rand(shape, generator=generator) < density
    return scores, mask


@PROPERTY_SETTINGS
@given(scores_and_masks())
def test_property_rows_sum_to_one_or_zero(data):
    scores, mask = data
    weights = masked_softmax(scores, mask)
    assert torch.isfinite(weights).all()
    assert torch.all(weights >= 0) and torch.all(weights <= 1)
    expected = mask.any(-1).to(torch.float64)  # 1 for a row with a key, 0 for a fully masked row
    torch.testing.assert_close(weights.sum(-1), expected, atol=1e-12, rtol=0)


@PROPERTY_SETTINGS
@given(scores_and_masks())
def test_property_masked_positions_get_exactly_zero(data):
    scores, mask = data
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[~mask] == 0)
    value = torch.ones(scores.shape[-1], 1, dtype=torch.float64)
    context, attend_weights = attend(scores, value, mask)
    assert torch.equal(attend_weights, weights)
    # Averaging ones gives one, or zero for a fully masked row.
    torch.testing.assert_close(context[..., 0], mask.any(-1).to(torch.float64), atol=1e-12, rtol=0)
