"""Tests for attnprimer.online_softmax: one pass over blocks equals the softmax of the whole row."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer.online_softmax import (
    RunningAverage,
    combine,
    finish,
    online_logsumexp,
    online_softmax,
    online_statistics,
    online_step,
    online_steps,
    online_weighted_average,
    start,
)
from attnprimer.softmax import softmax_statistics

PROPERTY_SETTINGS = settings(deadline=None, max_examples=60, database=None)


def _masked_scores(generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """(6, 11) scores with scattered -inf, one fully masked row and one with a single key."""
    scores = 5 * torch.randn(6, 11, generator=generator, dtype=dtype)
    scores[torch.rand(6, 11, generator=generator) < 0.3] = -torch.inf
    scores[2] = -torch.inf  # every key masked
    scores[4, 1:] = -torch.inf  # only the first key
    scores[5, :7] = -torch.inf  # the first blocks all masked, then real keys
    return scores


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 11, 20])
def test_statistics_match_torch(generator, float_dtype, float_tol, block_size):
    scores = _masked_scores(generator, float_dtype)
    expected = torch.logsumexp(scores, dim=-1)
    torch.testing.assert_close(online_logsumexp(scores, block_size), expected, **float_tol)
    maximum, normaliser = online_statistics(scores, block_size)
    whole = softmax_statistics(scores)
    torch.testing.assert_close(maximum, whole.maximum, **float_tol)
    torch.testing.assert_close(normaliser, whole.normaliser, **float_tol)


@pytest.mark.parametrize("block_size", [1, 3, 4, 11])
def test_softmax_matches_torch_and_gives_zeros_for_a_fully_masked_row(
        generator, float_dtype, float_tol, block_size):
    scores = _masked_scores(generator, float_dtype)
    weights = online_softmax(scores, block_size)
    expected = torch.softmax(scores, dim=-1)  # NaN on the fully masked row
    real = torch.ones(6, dtype=torch.bool)
    real[2] = False
    torch.testing.assert_close(weights[real], expected[real], **float_tol)
    assert torch.equal(weights[2], torch.zeros(11, dtype=float_dtype))


@pytest.mark.parametrize("block_size", [1, 2, 5, 11])
def test_weighted_average_matches_softmax_times_values(generator, float_dtype, float_tol,
                                                       block_size):
    scores = _masked_scores(generator, float_dtype)
    values = torch.randn(6, 11, 3, generator=generator, dtype=float_dtype)
    average = online_weighted_average(scores, values, block_size)
    expected = torch.nan_to_num(torch.softmax(scores, dim=-1)).unsqueeze(-2) @ values
    torch.testing.assert_close(average, expected.squeeze(-2), **float_tol)
    assert torch.equal(average[2], torch.zeros(3, dtype=float_dtype))
    *_, last = online_steps(scores, values, block_size)
    torch.testing.assert_close(finish(last)[1].squeeze(-1), torch.logsumexp(scores, dim=-1),
                               **float_tol)


@PROPERTY_SETTINGS
@given(length=st.integers(1, 40), block_size=st.integers(1, 45),
       offset=st.sampled_from([0.0, 1e4, -1e4]), seed=st.integers(0, 2**31 - 1))
def test_any_blocking_of_any_row_agrees(length, block_size, offset, seed):
    generator = torch.Generator().manual_seed(seed)
    scores = offset + 10 * torch.randn(3, length, generator=generator, dtype=torch.float64)
    values = torch.randn(length, 2, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(online_softmax(scores, block_size), torch.softmax(scores, -1))
    torch.testing.assert_close(online_weighted_average(scores, values, block_size),
                               torch.softmax(scores, -1) @ values)


def test_combine_is_symmetric_and_handles_masked_blocks():
    left = softmax_statistics(torch.tensor([[-1000.0, -1001.0], [-torch.inf, -torch.inf]]))
    right = softmax_statistics(torch.tensor([[-torch.inf], [-1000.0]]))
    both = combine(left, right)
    # A masked block (maximum 0, sum 0) must not pull the maximum up to 0: exp(-1000) = 0.
    assert both.maximum.flatten().tolist() == [-1000.0, -1000.0]
    torch.testing.assert_close(both.normaliser.flatten(),
                               torch.tensor([1 + torch.e ** -1, 1.0]))
    swapped = combine(right, left)
    torch.testing.assert_close(swapped.normaliser, both.normaliser)


def test_a_step_that_forgets_to_rescale_is_wrong():
    """The check has teeth: the same loop without the rescale differs once the maximum grows."""
    scores = torch.tensor([[0.0, 5.0]])  # R = 1 row, two keys read one at a time
    values = torch.tensor([[1.0], [2.0]])  # (S, Dv)
    state = online_step(start((1,), 1, scores), scores[:, :1], values[:1])
    exponentials = (scores[:, 1:] - 5.0).exp()
    forgetful = RunningAverage(torch.tensor([[5.0]]), state.normaliser + exponentials,
                               state.total + exponentials @ values[1:])
    right = online_step(state, scores[:, 1:], values[1:])
    assert not torch.allclose(finish(forgetful)[0], finish(right)[0])
    torch.testing.assert_close(finish(right)[0], torch.softmax(scores, -1) @ values)


def test_rejects_a_block_size_below_one():
    with pytest.raises(ValueError, match="block_size"):
        online_statistics(torch.zeros(3), 0)
