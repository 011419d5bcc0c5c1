"""Tests for attnprimer.softmax: the stable softmax and log-sum-exp against PyTorch's."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer import logsumexp, masked_softmax, stable_softmax
from attnprimer.softmax import naive_softmax, softmax_statistics

PROPERTY_SETTINGS = settings(deadline=None, max_examples=60, database=None)
DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_matches_torch_on_ordinary_scores(generator, dtype, dim):
    scores = 3 * torch.randn(4, 5, 6, generator=generator, dtype=dtype)
    torch.testing.assert_close(stable_softmax(scores, dim), torch.softmax(scores, dim=dim))
    torch.testing.assert_close(logsumexp(scores, dim), torch.logsumexp(scores, dim=dim))
    torch.testing.assert_close(logsumexp(scores, dim, keepdim=True),
                               torch.logsumexp(scores, dim=dim, keepdim=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1e3, -1e3, 1e30, -1e30])
def test_huge_scores_match_torch_where_the_naive_softmax_fails(generator, dtype, offset):
    small = torch.randn(3, 7, generator=generator, dtype=dtype)
    scores = small + offset  # exp overflows (or underflows to 0 for every key)
    expected = torch.softmax(scores, dim=-1)
    assert torch.isfinite(expected).all()
    assert not torch.isfinite(naive_softmax(scores)).all()
    torch.testing.assert_close(stable_softmax(scores), expected)
    torch.testing.assert_close(logsumexp(scores), torch.logsumexp(scores, dim=-1))


def test_shifting_a_row_changes_no_weight(generator):
    scores = torch.randn(5, 8, generator=generator, dtype=torch.float64)
    shift = 100 * torch.randn(5, 1, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(stable_softmax(scores + shift), stable_softmax(scores))
    torch.testing.assert_close(logsumexp(scores + shift), logsumexp(scores) + shift[:, 0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_keys_as_minus_infinity_match_torch(generator, dtype):
    scores = torch.randn(4, 6, generator=generator, dtype=dtype)
    mask = torch.rand(4, 6, generator=generator) < 0.6
    mask[:, 0] = True  # every row keeps a key
    masked = scores.masked_fill(~mask, float("-inf"))
    weights = stable_softmax(masked)
    torch.testing.assert_close(weights, torch.softmax(masked, dim=-1))
    torch.testing.assert_close(weights, masked_softmax(scores, mask))
    assert (weights[~mask] == 0).all()
    torch.testing.assert_close(logsumexp(masked), torch.logsumexp(masked, dim=-1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_row_of_only_minus_infinity(dtype):
    scores = torch.tensor([[1.0, 2.0, 3.0], [-torch.inf] * 3], dtype=dtype)
    # PyTorch: the log-sum-exp of nothing is -inf, and its softmax is NaN.
    assert torch.isnan(torch.softmax(scores, dim=-1)[1]).all()
    torch.testing.assert_close(logsumexp(scores), torch.logsumexp(scores, dim=-1))
    assert logsumexp(scores)[1] == -torch.inf
    weights = stable_softmax(scores)
    torch.testing.assert_close(weights[0], torch.softmax(scores[0], dim=-1))
    assert (weights[1] == 0).all()  # the site's convention: zero weights, never NaN
    torch.testing.assert_close(weights, masked_softmax(scores.nan_to_num(neginf=0.0),
                                                       torch.isfinite(scores)))


def test_a_fully_masked_row_has_finite_gradients():
    scores = torch.tensor([[0.5, -torch.inf], [-torch.inf, -torch.inf]], requires_grad=True)
    (stable_softmax(scores) * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_gradients_match_torch(generator):
    scores = torch.randn(3, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(stable_softmax, (scores,))
    assert torch.autograd.gradcheck(logsumexp, (scores,))
    upstream = torch.randn(3, 5, generator=generator, dtype=torch.float64)
    ours = torch.autograd.grad((stable_softmax(scores) * upstream).sum(), scores)[0]
    theirs = torch.autograd.grad((torch.softmax(scores, -1) * upstream).sum(), scores)[0]
    torch.testing.assert_close(ours, theirs)


def test_statistics_are_the_row_maximum_and_the_shifted_sum():
    maximum, normaliser = softmax_statistics(torch.tensor([[3.0, 1.0], [0.0, 0.0]]))
    torch.testing.assert_close(maximum, torch.tensor([[3.0], [0.0]]))
    torch.testing.assert_close(normaliser, torch.tensor([[1 + torch.e**-2], [2.0]]))


@PROPERTY_SETTINGS
@given(
    rows=st.integers(1, 4),
    keys=st.integers(1, 9),
    scale=st.sampled_from([1.0, 10.0, 1e3, 1e6]),
    seed=st.integers(0, 2**16),
)
def test_property_rows_sum_to_one_and_match_torch(rows, keys, scale, seed):
    scores = scale * torch.randn(rows, keys, generator=torch.Generator().manual_seed(seed),
                                 dtype=torch.float64)
    weights = stable_softmax(scores)
    assert torch.isfinite(weights).all() and (weights >= 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(rows, dtype=torch.float64))
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1))
    torch.testing.assert_close(logsumexp(scores), torch.logsumexp(scores, dim=-1))
