"""The counting model: shapes, attention weights, and its lack of position information."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnprimer.models import CountingModel, ModelOutput

NUM_TOKENS, NUM_QUERIES, NUM_CLASSES, HIDDEN = 4, 3, 11, 16


def make_model(seed: int = 0, *, random_queries: bool = False, **sizes) -> CountingModel:
    torch.manual_seed(seed)
    settings = dict(num_tokens=NUM_TOKENS, num_queries=NUM_QUERIES,
                    num_classes=NUM_CLASSES, hidden=HIDDEN) | sizes
    model = CountingModel(**settings)
    if random_queries:
        # Away from the zero initialisation, so that attention is not uniform.
        with torch.no_grad():
            nn.init.normal_(model.queries, std=3.0)
    return model.eval()


def random_tokens(batch: int, length: int, seed: int = 0, num_tokens: int = NUM_TOKENS):
    return torch.randint(0, num_tokens, (batch, length),
                         generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("batch, length", [(1, 1), (2, 5), (7, 10), (3, 23)])
def test_output_shapes(batch, length):
    model = make_model()
    output = model(random_tokens(batch, length))
    assert isinstance(output, ModelOutput)
    assert output.logits.shape == (batch, NUM_QUERIES, NUM_CLASSES)
    assert set(output.attention) == {"encoder-decoder"}
    assert output.attention["encoder-decoder"].shape == (batch, NUM_QUERIES, length)


def test_output_shapes_follow_the_constructor():
    model = make_model(num_tokens=6, num_queries=5, num_classes=4, hidden=8)
    output = model(random_tokens(2, 9, num_tokens=6))
    assert output.logits.shape == (2, 5, 4)
    assert output.attention["encoder-decoder"].shape == (2, 5, 9)


@pytest.mark.parametrize("random_queries", [False, True])
def test_attention_rows_sum_to_one(random_queries):
    model = make_model(random_queries=random_queries)
    weights = model(random_tokens(6, 10, seed=1)).attention["encoder-decoder"]
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(6, NUM_QUERIES))


def test_queries_start_at_zero_so_attention_starts_uniform():
    for seed in range(3):
        model = make_model(seed)
        assert torch.count_nonzero(model.queries) == 0
        length = 7
        weights = model(random_tokens(4, length, seed=seed)).attention["encoder-decoder"]
        torch.testing.assert_close(weights, torch.full_like(weights, 1 / length))


def test_trained_queries_make_attention_depend_on_the_tokens():
    # The counterpart of the test above: with non-zero queries, attention is not uniform,
    # so the permutation test below is not trivially true.
    model = make_model(random_queries=True)
    weights = model(random_tokens(4, 10, seed=2)).attention["encoder-decoder"]
    assert not torch.allclose(weights, torch.full_like(weights, 0.1), atol=1e-3)


def test_same_token_gets_the_same_weight_wherever_it_is():
    model = make_model(random_queries=True)
    tokens = torch.tensor([[1, 2, 1, 0, 3, 1]])
    weights = model(tokens).attention["encoder-decoder"][0]  # (T, S)
    for query in range(NUM_QUERIES):
        torch.testing.assert_close(weights[query, 0], weights[query, 2])
        torch.testing.assert_close(weights[query, 0], weights[query, 5])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_permuting_the_input_leaves_the_logits_unchanged(seed):
    model = make_model(seed, random_queries=True)
    tokens = random_tokens(5, 10, seed=seed)
    permutation = torch.randperm(10, generator=torch.Generator().manual_seed(100 + seed))
    assert not torch.equal(tokens[:, permutation], tokens)  # a real shuffle
    with torch.no_grad():
        original = model(tokens)
        shuffled = model(tokens[:, permutation])
    torch.testing.assert_close(shuffled.logits, original.logits)
    # The weights move with their tokens.
    torch.testing.assert_close(
        shuffled.attention["encoder-decoder"],
        original.attention["encoder-decoder"][..., permutation],
    )


def test_different_inputs_give_different_logits():
    # Guards the permutation test: the logits do depend on which tokens are present.
    model = make_model(random_queries=True)
    with torch.no_grad():
        a = model(torch.tensor([[1, 1, 1, 0, 0]])).logits
        b = model(torch.tensor([[2, 2, 3, 0, 0]])).logits
    assert not torch.allclose(a, b)


def test_examples_in_a_batch_are_independent():
    model = make_model(random_queries=True)
    tokens = random_tokens(4, 8, seed=3)
    with torch.no_grad():
        together = model(tokens).logits
        one_by_one = torch.cat([model(row[None]).logits for row in tokens])
    torch.testing.assert_close(together, one_by_one)


def test_gradients_reach_every_parameter():
    model = make_model(random_queries=True).train()
    model(random_tokens(3, 6)).logits.sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, name
        assert torch.isfinite(parameter.grad).all(), name
    assert model.queries.grad.abs().sum() > 0
