"""The worked additive score of the Bahdanau chapter, against the arithmetic by hand."""

from __future__ import annotations

import math

import torch

from attnprimer.additive import AdditiveScore, additive_attention_by_hand
from attnprimer.site.experiments.worked_additive import additive_example


def test_each_step_is_the_arithmetic_by_hand():
    worked = additive_example()
    # W_q s = [[1, 0], [1, -1]] (1, 2) = (1, 1 - 2)
    assert worked.projected_state.tolist() == [1.0, -1.0]
    # W_k h_j, W_k = [[0, 1], [1, 1]]: (0, 1), (1, 1), (1, 2)
    assert worked.projected_memory.tolist() == [[0.0, 1.0], [1.0, 1.0], [1.0, 2.0]]
    assert worked.summed.tolist() == [[1.0, 0.0], [2.0, 0.0], [2.0, 1.0]]
    # v = (1, 1): the score is the sum of the two tanh values
    scores = [math.tanh(1) + math.tanh(0), math.tanh(2) + math.tanh(0),
              math.tanh(2) + math.tanh(1)]
    torch.testing.assert_close(worked.scores, torch.tensor(scores))
    total = sum(math.exp(score) for score in scores)
    weights = [math.exp(score) / total for score in scores]
    torch.testing.assert_close(worked.weights, torch.tensor(weights))
    # the context: weights times h_0 = (1, 0), h_1 = (0, 1), h_2 = (1, 1)
    torch.testing.assert_close(worked.context, torch.tensor([weights[0] + weights[2],
                                                             weights[1] + weights[2]]))


def test_the_rounded_numbers_the_page_prints_add_up():
    # A reader adds the printed tanh values (three decimals) and must get the printed score.
    worked = additive_example()
    hidden = [[round(value, 3) for value in row] for row in worked.hidden.tolist()]
    for row, score in zip(hidden, worked.scores.tolist(), strict=True):
        assert round(sum(row), 3) == round(score, 3)
    assert worked.weights.argmax().item() == 2  # h_2 scores highest
    assert round(sum(round(weight, 3) for weight in worked.weights.tolist()), 3) == 1.0


def test_the_example_is_what_the_module_computes_with_these_weights():
    worked = additive_example()
    score = AdditiveScore(query_dim=2, key_dim=2, hidden_dim=2)
    with torch.no_grad():
        score.query_proj.weight.copy_(worked.query_weight)
        score.key_proj.weight.copy_(worked.key_weight)
        score.v.copy_(worked.v)
        context, weights = additive_attention_by_hand(score, worked.state, worked.memory)
    torch.testing.assert_close(weights, worked.weights)
    torch.testing.assert_close(context, worked.context)
