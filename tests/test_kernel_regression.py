"""Tests for attnprimer.kernel_regression: Nadaraya–Watson estimates as attention pooling."""

from __future__ import annotations

import math

import pytest
import torch

from attnprimer import nadaraya_watson, scaled_dot_product_attention
from attnprimer.kernel_regression import gaussian_scores


def _reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, width: float):
    """The estimator as Nadaraya and Watson wrote it: kernel-weighted sum over kernel sum."""
    estimates = []
    for x in query.tolist():
        kernel = [math.exp(-sum((a - b) ** 2 for a, b in zip(x, k, strict=True)) / (2 * width**2))
                  for k in key.tolist()]
        total = sum(kernel)
        estimates.append([sum(w * v[d] for w, v in zip(kernel, value.tolist(), strict=True)) / total
                          for d in range(value.shape[-1])])
    return torch.tensor(estimates, dtype=value.dtype)


@pytest.mark.parametrize("width", [0.3, 1.0, 4.0])
def test_matches_the_written_out_estimator(generator, width):
    query = torch.randn(5, 2, generator=generator, dtype=torch.float64)
    key = torch.randn(7, 2, generator=generator, dtype=torch.float64)
    value = torch.randn(7, 3, generator=generator, dtype=torch.float64)
    estimate, weights = nadaraya_watson(query, key, value, width)
    torch.testing.assert_close(estimate, _reference(query, key, value, width))
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, dtype=torch.float64))
    assert (weights > 0).all()


def test_the_weights_are_a_softmax_of_the_gaussian_scores(generator):
    query = torch.randn(2, 4, 1, generator=generator)
    key = torch.randn(2, 6, 1, generator=generator)
    _, weights = nadaraya_watson(query, key, torch.randn(2, 6, 1, generator=generator), 0.5)
    torch.testing.assert_close(weights, torch.softmax(gaussian_scores(query, key, 0.5), -1))


def test_narrow_kernels_look_up_the_nearest_sample_and_wide_ones_average(generator):
    key = torch.linspace(0, 1, 6).unsqueeze(-1)  # (S, 1)
    value = torch.randn(6, 1, generator=generator)
    query = torch.tensor([[0.21], [0.79]])  # nearest samples: 0.2 and 0.8
    nearest, weights = nadaraya_watson(query, key, value, width=1e-3)
    torch.testing.assert_close(nearest, value[[1, 4]])
    assert (weights.amax(-1) > 0.999).all()
    mean, weights = nadaraya_watson(query, key, value, width=1e3)
    torch.testing.assert_close(mean, value.mean(0).expand(2, 1))
    torch.testing.assert_close(weights, torch.full((2, 6), 1 / 6))


def test_equal_length_keys_make_it_dot_product_attention_with_scale_one_over_width_squared(
    generator,
):
    query = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    key = torch.nn.functional.normalize(torch.randn(5, 4, generator=generator,
                                                    dtype=torch.float64), dim=-1)
    value = torch.randn(5, 2, generator=generator, dtype=torch.float64)
    width = 0.7
    expected = scaled_dot_product_attention(query, key, value, scale=1 / width**2)
    for ours, theirs in zip(nadaraya_watson(query, key, value, width), expected, strict=True):
        torch.testing.assert_close(ours, theirs)


def test_batch_dimensions_broadcast(generator):
    query = torch.randn(2, 3, 1, generator=generator)
    key = torch.randn(2, 5, 1, generator=generator)
    value = torch.randn(2, 5, 4, generator=generator)
    estimate, weights = nadaraya_watson(query, key, value, 1.0)
    assert estimate.shape == (2, 3, 4) and weights.shape == (2, 3, 5)
    torch.testing.assert_close(estimate[1], nadaraya_watson(query[1], key[1], value[1], 1.0)[0])


@pytest.mark.parametrize("width", [0.0, -1.0, float("nan")])
def test_a_width_that_is_not_positive_is_an_error(width):
    with pytest.raises(ValueError, match="width must be positive"):
        nadaraya_watson(torch.zeros(1, 1), torch.zeros(2, 1), torch.zeros(2, 1), width)


def test_mismatched_dimensions_are_an_error():
    with pytest.raises(ValueError, match=r"query \(\.\.\., L, D\) and key"):
        nadaraya_watson(torch.zeros(1, 2), torch.zeros(2, 3), torch.zeros(2, 1), 1.0)
