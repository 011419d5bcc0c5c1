"""Tests for attnprimer.tiled and attnprimer.block_mask: tiled attention equals dense attention,
outputs and gradients, with causal, local and padding masks, and skips the blocks a mask removes."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.nn import functional as F

import attnprimer.tiled as tiled_module
from attnprimer.block_mask import BlockMask
from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import causal_mask, local_mask, padding_mask
from attnprimer.tiled import tiled_attention

MASKS = {
    "none": {},
    "causal": {"causal": True},
    "local": {"window": 3},
    "causal local": {"causal": True, "window": 2},
    "padding": {"key_lengths": torch.tensor([13, 5])},
    "padding, one empty": {"key_lengths": torch.tensor([0, 9])},  # every key masked
    "causal padding": {"causal": True, "key_lengths": torch.tensor([4, 13])},
}


def _inputs(generator, dtype, length=13, key_length=13, requires_grad=True):
    shapes = [(2, 3, length, 8), (2, 3, key_length, 8), (2, 3, key_length, 5)]
    return [torch.randn(*shape, generator=generator, dtype=dtype, requires_grad=requires_grad)
            for shape in shapes]  # (B, H, L, Dh), (B, H, S, Dh), (B, H, S, Dv)


def _dense_mask(settings, length, key_length):
    """The same mask built the dense way, with attnprimer.masks."""
    mask = torch.ones(length, key_length, dtype=torch.bool)
    if settings.get("causal"):
        mask = mask & causal_mask(length, key_length)
    if "window" in settings:
        mask = mask & local_mask(length, settings["window"])
    if "key_lengths" in settings:
        mask = mask & padding_mask(settings["key_lengths"], key_length)[:, None, None, :]
    return mask


def _gradients(output, inputs, grad_output):
    return torch.autograd.grad(output, inputs, grad_output)


@pytest.mark.parametrize("block_size", [1, 4, 5, 13, 32])
@pytest.mark.parametrize("name", MASKS)
def test_equals_the_packages_sdpa_and_torch_outputs_and_gradients(
        generator, float_dtype, float_tol, name, block_size):
    settings = MASKS[name]
    inputs = _inputs(generator, float_dtype)
    mask = _dense_mask(settings, 13, 13)
    tiled = tiled_attention(*inputs, **settings, block_size=block_size)
    ours, _ = scaled_dot_product_attention(*inputs, mask)
    torch_sdpa = F.scaled_dot_product_attention(*inputs, attn_mask=mask)
    grad_output = torch.randn(tiled.shape, generator=generator, dtype=float_dtype)
    torch.testing.assert_close(tiled, ours, **float_tol)
    torch.testing.assert_close(tiled, torch_sdpa, **float_tol)
    expected = _gradients(ours, inputs, grad_output)
    for got, want, want_torch in zip(_gradients(tiled, inputs, grad_output), expected,
                                     _gradients(torch_sdpa, inputs, grad_output), strict=True):
        torch.testing.assert_close(got, want, **float_tol)
        torch.testing.assert_close(got, want_torch, **float_tol)


@pytest.mark.parametrize("length, key_length", [(7, 13), (13, 6)])
def test_queries_and_keys_of_different_lengths(generator, float_dtype, float_tol, length,
                                               key_length):
    inputs = _inputs(generator, float_dtype, length, key_length)
    for settings in ({}, {"causal": True}):
        mask = _dense_mask(settings, length, key_length)
        tiled = tiled_attention(*inputs, **settings, block_size=4)
        expected = F.scaled_dot_product_attention(*inputs, attn_mask=mask)
        torch.testing.assert_close(tiled, expected, **float_tol)
        torch.testing.assert_close(_gradients(tiled, inputs, torch.ones_like(tiled)),
                                   _gradients(expected, inputs, torch.ones_like(tiled)),
                                   **float_tol)


@pytest.mark.parametrize("name", ["none", "causal local", "padding, one empty"])
def test_gradcheck_in_double_precision(generator, name):
    inputs = [tensor[:, :1, :9] for tensor in _inputs(generator, torch.float64)]
    inputs = [tensor.detach().requires_grad_() for tensor in inputs]  # (2, 1, 9, Dh)
    settings = dict(MASKS[name])
    if "key_lengths" in settings:
        settings["key_lengths"] = torch.tensor([0, 6])

    def attention(query, key, value):
        return tiled_attention(query, key, value, **settings, block_size=4)

    # Central differences: error ~ eps^2 (truncation) + 1e-16 / eps (rounding); eps = 1e-5
    # keeps both below 1e-10 here, 1e-4 and 1e-6 do not.
    assert torch.autograd.gradcheck(attention, inputs, eps=1e-5, atol=1e-10, rtol=1e-10)


def test_a_query_with_every_key_masked_gives_zeros_and_no_gradient(generator):
    query, key, value = _inputs(generator, torch.float32)
    context = tiled_attention(query, key, value, key_lengths=torch.tensor([0, 13]),
                              block_size=4)
    assert torch.equal(context[0], torch.zeros_like(context[0]))
    context.sum().backward()
    assert torch.equal(query.grad[0], torch.zeros_like(query.grad[0]))
    assert torch.equal(value.grad[0], torch.zeros_like(value.grad[0]))
    assert value.grad[1].abs().sum() > 0


def _count_blocks(monkeypatch, **settings):
    """Run a tiled forward and backward; count the blocks each computes (the forward's calls of
    the online step, then the backward's calls of the block masking, which every block makes)."""
    counts = {"forward": 0, "backward": 0}
    online_step, masked = tiled_module.online_step, tiled_module._masked

    def counting_step(*args):
        counts["forward"] += 1
        return online_step(*args)

    monkeypatch.setattr(tiled_module, "online_step", counting_step)
    query, key, value = (torch.randn(1, 1, 64, 4, requires_grad=True) for _ in range(3))
    context = tiled_attention(query, key, value, **settings, block_size=8)
    forward = counts["forward"]
    monkeypatch.setattr(tiled_module, "_masked", lambda scores, *args: (
        counts.__setitem__("backward", counts["backward"] + 1) or masked(scores, *args)))
    context.sum().backward()
    return forward, counts["backward"]


@pytest.mark.parametrize("settings, expected", [
    ({}, 64),  # 8 x 8 blocks of 8
    ({"causal": True}, 36),  # the blocks on and below the diagonal: 8 * 9 / 2
    ({"window": 8}, 22),  # the diagonal and one block either side: 8 + 7 + 7
    ({"causal": True, "window": 8}, 15),  # the diagonal and the one before: 8 + 7
    ({"key_lengths": torch.tensor([20])}, 24),  # keys 0-23: 3 key blocks of 8
])
def test_blocks_a_mask_removes_are_skipped(monkeypatch, settings, expected):
    forward, backward = _count_blocks(monkeypatch, **settings)
    assert forward == expected
    assert backward == expected
    mask = BlockMask(**settings)
    assert len(mask.visited(64, 64, 8)) == expected


def test_local_attention_visits_blocks_linearly_in_the_length():
    mask = BlockMask(causal=True, window=64)
    counts = [len(mask.visited(length, length, 64)) for length in (512, 1024, 2048, 4096)]
    assert [later - earlier for earlier, later in itertools.pairwise(counts)] == [
        2 * (512 // 64), 2 * (1024 // 64), 2 * (2048 // 64)]


@pytest.mark.parametrize("q0, q1, k0, k1", [(0, 8, 0, 8), (8, 16, 0, 8), (0, 8, 8, 16),
                                            (16, 24, 4, 12), (3, 9, 5, 14)])
@pytest.mark.parametrize("settings", [{"causal": True}, {"window": 5},
                                      {"causal": True, "window": 5},
                                      {"key_lengths": torch.tensor([7, 10])}])
def test_skips_and_needs_mask_agree_with_the_block_itself(settings, q0, q1, k0, k1):
    mask = BlockMask(**settings)
    block = mask.block(q0, q1, k0, k1)
    assert mask.skips(q0, q1, k0, k1) == (not block.any())
    assert mask.needs_mask(q0, q1, k0, k1) == (not block.all())


def test_bad_shapes_name_what_was_expected():
    with pytest.raises(ValueError, match=r"query \(\.\.\., L, Dh\)"):
        tiled_attention(torch.zeros(2, 4, 8), torch.zeros(3, 4, 8), torch.zeros(3, 4, 8))
    with pytest.raises(ValueError, match="key_lengths"):
        query = torch.zeros(2, 1, 4, 8)
        tiled_attention(query, query, query, key_lengths=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="window"):
        BlockMask(window=-1)
