"""The key/value cache gives the outputs of full recomputation, on untrained models.

The same equality on the trained site models is in ``tests/claims/test_claims_kv_cache.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.kv_cache import KVCache, LayerCache, extend, greedy_with_cache, greedy_without_cache
from attnprimer.models.no_residual import DecoderOnlyWithoutResidual
from attnprimer.transformer import DecoderOnly


def _model(pre_norm: bool, seed: int = 0, dtype=torch.float32, **settings) -> DecoderOnly:
    torch.manual_seed(seed)
    settings = {"num_outputs": 9, "dim": 16, "heads": 4, "layers": 2} | settings
    return DecoderOnly(**settings, pre_norm=pre_norm).to(dtype).eval()


def _padded_inputs(generator, batch=6, length=7, classes=8):
    inputs = torch.randint(1, classes, (batch, length), generator=generator)
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    lengths[0] = length  # one row without padding
    inputs[torch.arange(length)[None, :] >= lengths[:, None]] = 0  # pad after the letters
    return inputs


@pytest.mark.parametrize("pre_norm", [True, False])
def test_cached_greedy_equals_recomputation_in_float64(pre_norm, generator):
    model = _model(pre_norm, dtype=torch.float64)
    inputs = _padded_inputs(generator)
    cached, _ = greedy_with_cache(model, inputs)
    with torch.no_grad():
        full = model(inputs).logits  # the model's own greedy decoding
    torch.testing.assert_close(cached, full, rtol=0, atol=1e-10)


@pytest.mark.parametrize("pre_norm", [True, False])
def test_cached_greedy_writes_the_same_tokens_in_float32(pre_norm, generator):
    model = _model(pre_norm, seed=1)
    inputs = _padded_inputs(generator, batch=16, length=9)
    cached, _ = greedy_with_cache(model, inputs, steps=20)
    full = greedy_without_cache(model, inputs, steps=20)
    assert torch.equal(cached.argmax(-1), full.argmax(-1))
    torch.testing.assert_close(cached, full, rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_a_sequence(generator):
    """The same letters, decoded alone and padded inside a batch, give the same logits."""
    model = _model(True, dtype=torch.float64)
    inputs = _padded_inputs(generator)
    batch, _ = greedy_with_cache(model, inputs, steps=6)
    short = int((inputs[1] != 0).sum())
    alone, _ = greedy_with_cache(model, inputs[1:2, :short], steps=6)
    torch.testing.assert_close(batch[1:2], alone, rtol=0, atol=1e-10)


def test_prefill_in_pieces_equals_prefill_at_once(generator):
    """extend takes any number of new tokens: two chunks give what one pass gives."""
    model = _model(True, dtype=torch.float64)
    tokens = torch.randint(1, 9, (3, 8), generator=generator)
    real = torch.ones_like(tokens, dtype=torch.bool)
    whole = extend(model, KVCache.empty(model, 3), tokens, real)
    cache = KVCache.empty(model, 3)
    first = extend(model, cache, tokens[:, :5], real[:, :5])
    second = extend(model, cache, tokens[:, 5:], real[:, 5:])
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole, rtol=0, atol=1e-10)


def test_a_top_left_mask_would_be_wrong(generator, monkeypatch):
    """The test above can fail: with the triangle aligned top-left, chunked prefill differs."""
    from attnprimer import kv_cache

    model = _model(True, dtype=torch.float64)
    tokens = torch.randint(1, 9, (3, 8), generator=generator)
    real = torch.ones_like(tokens, dtype=torch.bool)
    whole = extend(model, KVCache.empty(model, 3), tokens, real)
    monkeypatch.setattr(kv_cache.torch, "tril",
                        lambda ones, diagonal=0: torch.ones_like(ones).tril())
    cache = KVCache.empty(model, 3)
    extend(model, cache, tokens[:, :5], real[:, :5])
    second = kv_cache.extend(model, cache, tokens[:, 5:], real[:, 5:])
    assert (second - whole[:, 5:]).abs().max() > 1e-3


def test_the_cache_grows_by_one_position_per_step(generator):
    model = _model(True, heads=4, dim=16, layers=3)
    inputs = _padded_inputs(generator, batch=2, length=5)
    _, cache = greedy_with_cache(model, inputs, steps=7)
    positions = 5 + 1 + 6  # input, separator, the 6 tokens fed back (the 7th is not)
    assert cache.real.shape == (2, positions)
    for layer in cache.layers:
        assert layer.keys.shape == layer.values.shape == (2, 4, positions, 16 // 4)
    # keys and values, 3 layers, B x S x D floats of 4 bytes
    assert cache.nbytes == 2 * 3 * 2 * positions * 16 * 4


def test_an_empty_layer_cache_holds_nothing():
    assert LayerCache().nbytes == 0


def test_torch_is_causal_aligns_top_left_when_there_are_fewer_queries(generator):
    """What the page says of ``is_causal=True``: with L < S it is the top-left triangle."""
    from torch.nn import functional as F

    q = torch.randn(1, 1, 3, 4, generator=generator, dtype=torch.float64)
    k = torch.randn(1, 1, 8, 4, generator=generator, dtype=torch.float64)
    top_left = torch.tril(torch.ones(3, 8, dtype=torch.bool))
    bottom_right = torch.tril(torch.ones(3, 8, dtype=torch.bool), diagonal=8 - 3)
    flagged = F.scaled_dot_product_attention(q, k, k, is_causal=True)
    torch.testing.assert_close(flagged, F.scaled_dot_product_attention(q, k, k, attn_mask=top_left))
    assert not torch.allclose(flagged, F.scaled_dot_product_attention(q, k, k,
                                                                      attn_mask=bottom_right))


def test_at_a_decoding_step_the_top_left_triangle_reads_the_first_position_only():
    """What the page says of L = 1: bottom-right is a row of ones, top-left a single one."""
    ones = torch.ones(1, 6, dtype=torch.bool)
    assert torch.tril(ones, diagonal=6 - 1).all()
    assert torch.tril(ones).nonzero().tolist() == [[0, 0]]


def test_bad_input_is_refused_with_its_shapes():
    model = _model(True)
    cache = KVCache.empty(model, batch=2)
    tokens = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"tokens \(2, 3\), real \(2, 4\)"):
        extend(model, cache, tokens, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="B = 2 as the cache"):
        extend(model, cache, tokens[:1], torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="max_positions=64"):
        greedy_with_cache(model, torch.ones(1, 40, dtype=torch.long))


def test_a_model_without_residual_connections_is_refused():
    """cached_block writes x + context; a block without residuals would silently differ."""
    torch.manual_seed(0)
    model = DecoderOnlyWithoutResidual(num_outputs=9, dim=16, heads=4, layers=2).eval()
    with pytest.raises(ValueError, match=r"EncoderBlock\.forward only"):
        greedy_with_cache(model, torch.ones(1, 3, dtype=torch.long))
