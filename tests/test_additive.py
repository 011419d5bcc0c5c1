"""Tests for attnprimer.additive: Bahdanau's score v^T tanh(W_q q + W_k k)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from attnprimer import AdditiveAttention, AdditiveScore, additive_scores, causal_mask
from attnprimer.additive import additive_attention_by_hand


def _loop_additive_scores(query, key, query_weight, key_weight, v):
    """Bahdanau scores for query (L, Dq) and key (S, Dk), one pair at a time in plain Python."""
    length, key_length = query.shape[0], key.shape[0]
    hidden_dim, query_dim = query_weight.shape
    key_dim = key_weight.shape[1]
    scores = torch.zeros(length, key_length, dtype=query.dtype)
    for i in range(length):
        for j in range(key_length):
            total = 0.0
            for a in range(hidden_dim):
                pre_activation = 0.0
                for d in range(query_dim):
                    pre_activation += query_weight[a, d].item() * query[i, d].item()
                for d in range(key_dim):
                    pre_activation += key_weight[a, d].item() * key[j, d].item()
                total += v[a].item() * math.tanh(pre_activation)
            scores[i, j] = total
    return scores


def _random_parameters(generator, query_dim=3, key_dim=5, hidden_dim=4, dtype=torch.float64):
    query_weight = torch.randn(hidden_dim, query_dim, generator=generator, dtype=dtype)
    key_weight = torch.randn(hidden_dim, key_dim, generator=generator, dtype=dtype)
    v = torch.randn(hidden_dim, generator=generator, dtype=dtype)
    return query_weight, key_weight, v


# --- additive_scores ---------------------------------------------------------------------------


def test_additive_scores_equal_the_loop(generator):
    query_weight, key_weight, v = _random_parameters(generator)
    query = torch.randn(4, 3, generator=generator, dtype=torch.float64)  # L=4, Dq=3
    key = torch.randn(6, 5, generator=generator, dtype=torch.float64)  # S=6, Dk=5
    scores = additive_scores(query, key, query_weight, key_weight, v)
    assert scores.shape == (4, 6)
    expected = _loop_additive_scores(query, key, query_weight, key_weight, v)
    torch.testing.assert_close(scores, expected, atol=1e-10, rtol=1e-10)


def test_additive_scores_with_batch_dims_equal_the_loop(generator):
    query_weight, key_weight, v = _random_parameters(generator)
    query = torch.randn(2, 3, 2, 3, generator=generator, dtype=torch.float64)  # (B, H, L, Dq)
    key = torch.randn(2, 3, 4, 5, generator=generator, dtype=torch.float64)  # (B, H, S, Dk)
    scores = additive_scores(query, key, query_weight, key_weight, v)
    assert scores.shape == (2, 3, 2, 4)
    for b in range(2):
        for h in range(3):
            expected = _loop_additive_scores(query[b, h], key[b, h], query_weight, key_weight, v)
            torch.testing.assert_close(scores[b, h], expected, atol=1e-10, rtol=1e-10)


def test_additive_scores_broadcast_batch_dims(generator):
    query_weight, key_weight, v = _random_parameters(generator)
    query = torch.randn(2, 3, generator=generator, dtype=torch.float64)  # (L, Dq), shared
    key = torch.randn(4, 5, 5, generator=generator, dtype=torch.float64)  # (B, S, Dk)
    scores = additive_scores(query, key, query_weight, key_weight, v)
    assert scores.shape == (4, 2, 5)
    for b in range(4):
        expected = _loop_additive_scores(query, key[b], query_weight, key_weight, v)
        torch.testing.assert_close(scores[b], expected, atol=1e-10, rtol=1e-10)


def test_additive_scores_float32(generator):
    query_weight, key_weight, v = _random_parameters(generator, dtype=torch.float32)
    query = torch.randn(3, 3, generator=generator)
    key = torch.randn(2, 5, generator=generator)
    scores = additive_scores(query, key, query_weight, key_weight, v)
    assert scores.dtype == torch.float32
    expected = _loop_additive_scores(query, key, query_weight, key_weight, v)
    torch.testing.assert_close(scores, expected, atol=1e-5, rtol=1e-5)


def test_additive_scores_are_not_symmetric_dot_products(generator):
    # Unlike a dot product, swapping the roles of W_q and W_k changes the score.
    query_weight, key_weight, v = _random_parameters(generator, query_dim=3, key_dim=3)
    x = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    scores = additive_scores(x, x, query_weight, key_weight, v)
    assert not torch.allclose(scores, scores.T)


@pytest.mark.parametrize(
    ("query_weight_shape", "key_weight_shape", "v_shape"),
    [
        ((4, 5), (4, 5), (4,)),  # W_q sized for the keys
        ((4, 3), (4, 3), (4,)),  # W_k sized for the queries
        ((4, 3), (6, 5), (4,)),  # W_k has a different hidden size
        ((4, 3), (4, 5), (6,)),  # v has a different hidden size
        ((4, 3), (4, 5), (4, 1)),  # v is not a vector
        ((3, 4), (5, 4), (4,)),  # both transposed
    ],
    ids=["query_weight", "key_weight", "key_hidden", "v_hidden", "v_matrix", "transposed"],
)
def test_additive_scores_wrong_weight_shapes_name_the_shapes(
    query_weight_shape, key_weight_shape, v_shape
):
    query, key = torch.zeros(2, 7, 3), torch.zeros(2, 6, 5)
    with pytest.raises(ValueError) as excinfo:
        additive_scores(
            query,
            key,
            torch.zeros(query_weight_shape),
            torch.zeros(key_weight_shape),
            torch.zeros(v_shape),
        )
    message = str(excinfo.value)
    for shape in [(2, 7, 3), (2, 6, 5), query_weight_shape, key_weight_shape, v_shape]:
        assert str(shape) in message, (shape, message)


def test_additive_scores_need_two_dims():
    query_weight, key_weight, v = torch.zeros(4, 3), torch.zeros(4, 5), torch.zeros(4)
    with pytest.raises(ValueError) as excinfo:
        additive_scores(torch.zeros(3), torch.zeros(6, 5), query_weight, key_weight, v)
    assert "(3,)" in str(excinfo.value) and "(6, 5)" in str(excinfo.value)


# --- AdditiveScore -----------------------------------------------------------------------------


def test_additive_score_module_parameters():
    score = AdditiveScore(query_dim=3, key_dim=5, hidden_dim=4)
    assert isinstance(score.query_proj, nn.Linear) and score.query_proj.bias is None
    assert isinstance(score.key_proj, nn.Linear) and score.key_proj.bias is None
    assert score.query_proj.weight.shape == (4, 3)
    assert score.key_proj.weight.shape == (4, 5)
    assert score.v.shape == (4,)
    assert {name for name, _ in score.named_parameters()} == {
        "query_proj.weight",
        "key_proj.weight",
        "v",
    }


def test_additive_score_module_uses_additive_scores(generator):
    torch.manual_seed(0)
    score = AdditiveScore(query_dim=3, key_dim=5, hidden_dim=4).double()
    query = torch.randn(2, 4, 3, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 6, 5, generator=generator, dtype=torch.float64)
    scores = score(query, key)
    assert scores.shape == (2, 4, 6)
    for b in range(2):
        expected = _loop_additive_scores(
            query[b], key[b], score.query_proj.weight, score.key_proj.weight, score.v
        )
        torch.testing.assert_close(scores[b], expected, atol=1e-10, rtol=1e-10)
    scores.sum().backward()
    for parameter in score.parameters():
        assert parameter.grad is not None and torch.any(parameter.grad != 0)


def test_additive_score_module_rejects_wrong_input_sizes():
    score = AdditiveScore(query_dim=3, key_dim=5, hidden_dim=4)
    with pytest.raises(ValueError) as excinfo:
        score(torch.zeros(2, 4, 5), torch.zeros(2, 6, 3))  # query and key swapped
    assert "(2, 4, 5)" in str(excinfo.value) and "(2, 6, 3)" in str(excinfo.value)


# --- AdditiveAttention -------------------------------------------------------------------------


def test_additive_attention_is_softmax_of_additive_scores(generator):
    torch.manual_seed(0)
    attention = AdditiveAttention(query_dim=3, key_dim=5, hidden_dim=4).double()
    assert isinstance(attention.score, AdditiveScore)
    query = torch.randn(2, 4, 3, generator=generator, dtype=torch.float64)
    key = torch.randn(2, 6, 5, generator=generator, dtype=torch.float64)
    value = torch.randn(2, 6, 7, generator=generator, dtype=torch.float64)  # Dv != Dk
    mask = causal_mask(4, 6)
    context, weights = attention(query, key, value, mask)
    assert context.shape == (2, 4, 7) and weights.shape == (2, 4, 6)

    params = (attention.score.query_proj.weight, attention.score.key_proj.weight, attention.score.v)
    for b in range(2):
        scores = _loop_additive_scores(query[b], key[b], *params)
        expected_weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        torch.testing.assert_close(weights[b], expected_weights, atol=1e-10, rtol=1e-10)
        torch.testing.assert_close(context[b], expected_weights @ value[b], atol=1e-10, rtol=1e-10)
    assert torch.all(weights[:, ~mask] == 0)


def test_additive_attention_without_mask(generator):
    torch.manual_seed(1)
    attention = AdditiveAttention(query_dim=2, key_dim=2, hidden_dim=3).double()
    query = torch.randn(1, 3, 2, generator=generator, dtype=torch.float64)
    key = torch.randn(1, 4, 2, generator=generator, dtype=torch.float64)
    context, weights = attention(query, key, key)
    expected = torch.softmax(attention.score(query, key), dim=-1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(context, expected @ key)


def test_additive_attention_fully_masked_row(generator):
    torch.manual_seed(2)
    attention = AdditiveAttention(query_dim=3, key_dim=3, hidden_dim=4).double()
    query = torch.randn(2, 3, 3, generator=generator, dtype=torch.float64, requires_grad=True)
    key = torch.randn(2, 4, 3, generator=generator, dtype=torch.float64, requires_grad=True)
    value = torch.randn(2, 4, 2, generator=generator, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[1, 2] = False
    context, weights = attention(query, key, value, mask)
    assert torch.all(weights[1, 2] == 0) and torch.all(context[1, 2] == 0)
    assert not torch.isnan(context).any()
    context.sum().backward()
    for tensor in (query, key, value):
        assert torch.isfinite(tensor.grad).all()


def test_additive_attention_checks_the_mask():
    attention = AdditiveAttention(query_dim=3, key_dim=3, hidden_dim=4)
    query, key = torch.zeros(2, 3, 3), torch.zeros(2, 4, 3)
    with pytest.raises(TypeError):
        attention(query, key, key, torch.ones(3, 4))
    with pytest.raises(ValueError):
        attention(query, key, key, torch.ones(3, 5, dtype=torch.bool))


# --- additive_attention_by_hand ----------------------------------------------------------------


@pytest.mark.parametrize("query_dim,key_dim", [(6, 6), (3, 5)])
def test_by_hand_equals_the_module(generator, query_dim, key_dim):
    torch.manual_seed(0)
    attention = AdditiveAttention(query_dim=query_dim, key_dim=key_dim, hidden_dim=4).double()
    state = torch.randn(query_dim, generator=generator, dtype=torch.float64)
    memory = torch.randn(7, key_dim, generator=generator, dtype=torch.float64)
    context, weights = additive_attention_by_hand(attention.score, state, memory)
    module_context, module_weights = attention(state[None], memory, memory)  # L = 1
    torch.testing.assert_close(weights, module_weights[0], atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(context, module_context[0], atol=1e-12, rtol=1e-12)
    scores = attention.score(state[None], memory)[0]  # the AdditiveScore alone: (S,)
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1), atol=1e-12, rtol=1e-12)


def test_by_hand_rejects_a_batch():
    score = AdditiveScore(query_dim=3, key_dim=3, hidden_dim=4)
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        additive_attention_by_hand(score, torch.zeros(2, 3), torch.zeros(5, 3))
