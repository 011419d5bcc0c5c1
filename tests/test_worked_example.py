"""The worked example of the QKV and self-attention chapters, against the arithmetic by hand."""

from __future__ import annotations

import math

import torch

from attnprimer.site.experiments.worked_example import qkv_example, self_attention_example


def test_the_qkv_example_is_the_softmax_of_the_scaled_scores_by_hand():
    worked = qkv_example()
    scaled = [2 / math.sqrt(2), 1 / math.sqrt(2), 3 / math.sqrt(2)]
    total = sum(math.exp(s) for s in scaled)
    weights = [math.exp(s) / total for s in scaled]
    context = [10 * weights[0] + 5 * weights[2], 10 * weights[1] + 5 * weights[2]]
    torch.testing.assert_close(worked.weights, torch.tensor([weights]))
    torch.testing.assert_close(worked.context, torch.tensor([context]))
    assert worked.weights.argmax().item() == 2  # the query agrees most with c


def test_the_example_matches_pytorchs_attention():
    worked = self_attention_example()
    expected = torch.nn.functional.scaled_dot_product_attention(
        worked.queries, worked.keys, worked.values)
    torch.testing.assert_close(worked.context, expected)


def test_without_projections_each_token_weighs_itself_at_least_as_much_as_any_other():
    weights = self_attention_example(projections=False).weights
    assert (weights.diagonal()[:, None] >= weights - 1e-7).all()
    # With the swap W_q, token a looks away from itself: its own weight is its smallest.
    swapped = self_attention_example().weights
    assert swapped[0, 0] < swapped[0, 1] and swapped[1, 1] < swapped[1, 0]
