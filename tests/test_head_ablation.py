"""Switching heads off: nothing else changes, and a head off is its context zeroed by hand (or
set to its mean over held-out data, by hand)."""

from __future__ import annotations

import pytest
import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.multihead import merge_heads, split_heads
from attnprimer.site.experiments.head_ablation import (
    attention_layer,
    head_means,
    head_names,
    heads_off,
)
from attnprimer.transformer import DecoderOnly, Transformer

INPUTS = torch.tensor([[1, 2, 3, 4], [4, 3, 0, 0]])
TARGETS = torch.tensor([[4, 3, 2, 1, 9], [3, 4, 9, 0, 0]])


def _models():
    torch.manual_seed(0)
    return [Transformer(num_tokens=6, num_outputs=10, dim=12, heads=3, layers=2, pre_norm=True),
            DecoderOnly(num_outputs=10, dim=12, heads=3, layers=2)]


@pytest.mark.parametrize("model", _models(), ids=["encoder-decoder", "decoder-only"])
def test_switching_nothing_off_changes_nothing(model):
    before = model(INPUTS, TARGETS)
    with heads_off(model, []):
        during = model(INPUTS, TARGETS)
    assert torch.equal(before.logits, during.logits)
    assert all(torch.equal(before.attention[name], during.attention[name])
               for name in before.attention)


def _by_hand(layer, query, memory, mask, head):
    """The attention's output with one head's context zeroed, computed without hooks."""
    heads = layer.num_heads
    q = split_heads(layer.query_proj(query), heads)  # (B, H, L, Dh)
    k = split_heads(layer.key_proj(memory), heads)  # (B, H, S, Dh)
    v = split_heads(layer.value_proj(memory), heads)  # (B, H, S, Dh)
    context, _ = scaled_dot_product_attention(q, k, v, mask)  # (B, H, L, Dh)
    context[:, head] = 0.0
    return layer.out_proj(merge_heads(context))  # (B, L, D)


@pytest.mark.parametrize("name", ["encoder self 1.2", "decoder self 2.1", "cross 1.3",
                                  "cross 2.1"])
def test_a_head_off_is_its_context_zeroed_by_hand(name):
    model = _models()[0]
    layer = attention_layer(model, name)
    query, memory = torch.randn(2, 5, 12), torch.randn(2, 4, 12)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])[:, None, None, :]  # (B,1,1,S)
    whole, _ = layer(query, memory, mask=mask)
    with heads_off(model, [name]):
        ablated, weights = layer(query, memory, mask=mask)
    expected = _by_hand(layer, query, memory, mask, int(name[-1]) - 1)
    torch.testing.assert_close(ablated, expected, rtol=0, atol=1e-6)
    assert not torch.allclose(ablated, whole, atol=1e-4)  # the head did contribute
    assert weights.shape == (2, 3, 5, 4)  # its weights are still computed


def test_every_head_of_a_layer_off_leaves_only_the_bias():
    model = _models()[1]
    layer = attention_layer(model, "decoder self 1")
    with heads_off(model, ["decoder self 1.1", "decoder self 1.2", "decoder self 1.3"]):
        output, _ = layer(torch.randn(2, 5, 12))
    torch.testing.assert_close(output, layer.out_proj.bias.expand(2, 5, 12))


def test_the_other_layers_are_untouched():
    model = _models()[0]
    with heads_off(model, ["cross 2.2"]):
        output = model(INPUTS, TARGETS)
    reference = model(INPUTS, TARGETS)
    for name in ("encoder self 1.1", "encoder self 2.3", "decoder self 1.2", "cross 1.1",
                 "decoder self 2.1", "cross 2.1", "cross 2.2"):  # up to and in the layer
        assert torch.equal(output.attention[name], reference.attention[name]), name
    assert not torch.allclose(output.logits, reference.logits)


def test_the_hooks_go_even_when_the_block_fails():
    model = _models()[1]
    before = model(INPUTS, TARGETS).logits
    with pytest.raises(RuntimeError), heads_off(model, ["decoder self 2.3"]):
        raise RuntimeError("stop")
    assert torch.equal(model(INPUTS, TARGETS).logits, before)
    assert not attention_layer(model, "decoder self 2")._forward_pre_hooks


@pytest.mark.parametrize("name", ["cross 1.4", "cross 3.1", "cross 1.0", "cross 1",
                                  "memory 1.1"])
def test_a_head_that_does_not_exist_is_a_clear_error(name):
    with pytest.raises(ValueError, match=r"head|layers|named"), heads_off(_models()[0], [name]):
        pass


def test_the_decoder_only_model_has_no_cross_attention():
    with pytest.raises(ValueError, match="no cross attention"):
        attention_layer(_models()[1], "cross 1.1")


def test_head_names_are_the_names_of_the_models_weights():
    for model in _models():
        assert sorted(head_names(model)) == sorted(model(INPUTS).attention)


def _merged_inputs(model, name):
    """The input of ``name``'s output projection in one teacher-forced pass: (B, L, D)."""
    seen = []
    handle = attention_layer(model, name).out_proj.register_forward_pre_hook(
        lambda projection, given: seen.append(given[0]))
    try:
        model(INPUTS, TARGETS)
    finally:
        handle.remove()
    return seen[0]


@pytest.mark.parametrize(("architecture", "layer", "real"), [
    ("encoder-decoder", "encoder self 1", INPUTS != 0),
    ("encoder-decoder", "cross 2", torch.tensor([[True] * 5, [True] * 3 + [False] * 2])),
    ("decoder-only", "decoder self 2",
     torch.tensor([[True] * 9, [True, True, False, False, True, True, True, False, False]])),
])
def test_a_heads_mean_is_over_the_real_queries_only(architecture, layer, real):
    model = dict(zip(["encoder-decoder", "decoder-only"], _models(), strict=True))[architecture]
    merged = _merged_inputs(model, layer)  # (B, L, D)
    by_hand = merged[real].mean(dim=0).view(3, -1)  # (H, Dh): the padding left out
    torch.testing.assert_close(head_means(model, INPUTS, TARGETS)[layer], by_hand)
    assert not torch.allclose(merged.flatten(0, 1).mean(dim=0).view(3, -1), by_hand)


@pytest.mark.parametrize("model", _models(), ids=["encoder-decoder", "decoder-only"])
def test_a_head_mean_ablated_is_its_context_set_to_its_mean(model):
    means = head_means(model, INPUTS, TARGETS)
    name = head_names(model)[-2]  # a head of the last layer
    layer, head = name.rpartition(".")[0], int(name[-1]) - 1
    whole = _merged_inputs(model, name)  # (B, L, D)
    with heads_off(model, [name], means=means):
        ablated = _merged_inputs(model, name)
    split = ablated.view(*ablated.shape[:-1], 3, -1)  # (B, L, H, Dh)
    assert torch.equal(split[..., head, :], means[layer][head].expand_as(split[..., head, :]))
    others = [h for h in range(3) if h != head]
    assert torch.equal(split[..., others, :], whole.view(split.shape)[..., others, :])


def test_mean_ablation_with_zero_means_is_zero_ablation():
    model = _models()[0]
    zeros = {layer: torch.zeros_like(value)
             for layer, value in head_means(model, INPUTS, TARGETS).items()}
    with heads_off(model, ["cross 1.2", "encoder self 2.1"]):
        zeroed = model(INPUTS, TARGETS).logits
    with heads_off(model, ["cross 1.2", "encoder self 2.1"], means=zeros):
        by_means = model(INPUTS, TARGETS).logits
    assert torch.equal(zeroed, by_means)
