"""The toy models: shapes, attention weights, the counting model's lack of position information,
and the difference model's self-attention over its output steps."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from attnprimer.models import ModelOutput
from attnprimer.models.counting import CountingModel
from attnprimer.models.difference import DifferenceModel, OutputSelfAttention

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


# --- self-attention over the output steps ------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.sampled_from([4, 8, 64]), st.integers(0, 2**31 - 1))
def test_projection_free_self_attention_prefers_itself_for_equal_lengths(steps, hidden, seed):
    # Cauchy-Schwarz: for states of one length, no other step scores higher than a step with
    # itself. A layer norm with gain 1, bias 0 and eps 0 gives every state the same length
    # (with the default eps of 1e-5, a state of small variance comes out shorter: seed 124849).
    generator = torch.Generator().manual_seed(seed)
    states = F.layer_norm(torch.randn(3, steps, hidden, generator=generator,
                                      dtype=torch.float64), (hidden,), eps=0.0)
    layer = OutputSelfAttention(hidden).double()
    _, weights = layer(states)
    diagonal = weights.diagonal(dim1=-2, dim2=-1)  # (B, T)
    assert torch.all(diagonal >= weights.amax(dim=-1) - 1e-12)


def test_learned_projections_can_move_attention_off_the_diagonal():
    torch.manual_seed(0)
    layer = OutputSelfAttention(8, projections=True)
    with torch.no_grad():
        layer.query.weight.zero_()
        layer.query.bias.zero_()
        layer.key.weight.zero_()
        layer.key.bias.copy_(torch.arange(8.0))  # every key the same: scores are all equal
    states = F.layer_norm(torch.randn(2, 4, 8), (8,))
    _, weights = layer(states)
    torch.testing.assert_close(weights, torch.full((2, 4, 4), 0.25))


def test_self_attention_without_projections_has_only_the_norm_to_learn():
    names = {name for name, _ in OutputSelfAttention(8).named_parameters()}
    assert names == {"norm.weight", "norm.bias"}
    projected = {name for name, _ in OutputSelfAttention(8, projections=True).named_parameters()}
    assert {"query.weight", "key.weight", "value.weight"} <= projected


def test_self_attention_is_residual_then_norm():
    layer = OutputSelfAttention(8)
    states = torch.randn(2, 3, 8)
    output, weights = layer(states)
    expected = F.layer_norm(states + weights @ states, (8,))
    torch.testing.assert_close(output, expected)


def test_self_attention_mask_blocks_steps():
    layer = OutputSelfAttention(8)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[2, 0] = False
    _, weights = layer(torch.randn(4, 3, 8), mask)
    assert torch.all(weights[:, 2, 0] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 3))


def make_difference(self_attention: bool = True, **settings) -> DifferenceModel:
    torch.manual_seed(0)
    return DifferenceModel(num_tokens=4, num_queries=4, num_classes=11, hidden=16,
                           self_attention=self_attention, **settings).eval()


def test_difference_model_without_self_attention_is_the_counting_model_plus_a_query():
    plain = make_difference(self_attention=False)
    counting = CountingModel(num_tokens=4, num_queries=4, num_classes=11, hidden=16)
    counting.load_state_dict(plain.state_dict())
    tokens = random_tokens(5, 10)
    torch.testing.assert_close(plain(tokens).logits, counting(tokens).logits)
    assert set(plain(tokens).attention) == {"encoder-decoder"}


def test_difference_model_self_mask_changes_only_the_masked_steps():
    model = make_difference()
    with torch.no_grad():
        nn.init.normal_(model.queries, std=2.0)
    tokens = random_tokens(5, 10)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[3, 1] = False  # the difference step may not read step 1
    free, masked = model(tokens), model(tokens, self_mask=mask)
    assert torch.all(masked.attention["self"][:, 3, 1] == 0)
    torch.testing.assert_close(masked.logits[:, :3], free.logits[:, :3])
    assert not torch.allclose(masked.logits[:, 3], free.logits[:, 3])


def test_difference_model_refuses_inconsistent_settings():
    with pytest.raises(ValueError, match="projections only exist"):
        make_difference(self_attention=False, projections=True)
    with pytest.raises(ValueError, match="self_mask needs"):
        make_difference(self_attention=False)(random_tokens(1, 4),
                                              self_mask=torch.ones(4, 4, dtype=torch.bool))
