"""Tests for attnprimer.multihead: split/merge heads and MultiHeadAttention vs PyTorch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attnprimer import (
    MultiHeadAttention,
    causal_mask,
    combine_masks,
    local_mask,
    merge_heads,
    padding_mask,
    split_heads,
    to_blocked_mask,
)

PROPERTY_SETTINGS = settings(deadline=None, max_examples=40, database=None)


def _randomize_(module: nn.Module, generator: torch.Generator, scale: float = 0.5) -> nn.Module:
    """Overwrite every parameter with fresh noise (nn.MultiheadAttention starts its biases at 0)."""
    with torch.no_grad():
        for parameter in module.parameters():
            noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
            parameter.copy_(scale * noise)
    return module


def _copy_into_torch(
    ours: MultiHeadAttention, key_dim: int, value_dim: int
) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention holding the weights of ``ours``: the copy from_torch does not do."""
    has_bias = ours.query_proj.bias is not None
    dtype = ours.query_proj.weight.dtype
    module = nn.MultiheadAttention(
        ours.embed_dim,
        ours.num_heads,
        bias=has_bias,
        kdim=key_dim,
        vdim=value_dim,
        batch_first=True,
        dtype=dtype,
    )
    projections = (ours.query_proj, ours.key_proj, ours.value_proj)
    with torch.no_grad():
        if module.in_proj_weight is not None:  # packed (3D, D) layout
            module.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))
        else:
            module.q_proj_weight.copy_(ours.query_proj.weight)
            module.k_proj_weight.copy_(ours.key_proj.weight)
            module.v_proj_weight.copy_(ours.value_proj.weight)
        module.out_proj.weight.copy_(ours.out_proj.weight)
        if has_bias:
            module.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
            module.out_proj.bias.copy_(ours.out_proj.bias)
    return module


# --- split_heads / merge_heads -----------------------------------------------------------------


def test_split_heads_slices_the_model_dimension(generator):
    batch, length, heads, head_dim = 2, 3, 4, 5
    x = torch.randn(batch, length, heads * head_dim, generator=generator)
    split = split_heads(x, heads)
    assert split.shape == (batch, heads, length, head_dim)
    for b in range(batch):
        for h in range(heads):
            for i in range(length):
                assert torch.equal(split[b, h, i], x[b, i, h * head_dim : (h + 1) * head_dim])


def test_merge_heads_concatenates_the_heads(generator):
    batch, heads, length, head_dim = 2, 3, 4, 2
    x = torch.randn(batch, heads, length, head_dim, generator=generator)
    merged = merge_heads(x)
    assert merged.shape == (batch, length, heads * head_dim)
    for b in range(batch):
        for i in range(length):
            assert torch.equal(merged[b, i], torch.cat([x[b, h, i] for h in range(heads)]))


def test_split_heads_with_one_head_is_a_reshape(generator):
    x = torch.randn(2, 3, 4, generator=generator)
    assert torch.equal(split_heads(x, 1), x[:, None])


@pytest.mark.parametrize(("dim", "heads"), [(6, 4), (5, 2), (3, 6)])
def test_split_heads_rejects_indivisible_dimension(dim, heads):
    with pytest.raises(ValueError) as excinfo:
        split_heads(torch.zeros(2, 3, dim), heads)
    assert f"D={dim}" in str(excinfo.value) and f"num_heads={heads}" in str(excinfo.value)


@pytest.mark.parametrize("shape", [(3, 4), (1, 2, 3, 4)], ids=str)
def test_split_heads_rejects_wrong_rank(shape):
    with pytest.raises(ValueError, match=str(shape).replace("(", r"\(").replace(")", r"\)")):
        split_heads(torch.zeros(shape), 2)


@pytest.mark.parametrize("shape", [(3, 4, 2), (1, 2, 3, 4, 5)], ids=str)
def test_merge_heads_rejects_wrong_rank(shape):
    with pytest.raises(ValueError, match=str(shape).replace("(", r"\(").replace(")", r"\)")):
        merge_heads(torch.zeros(shape))


@PROPERTY_SETTINGS
@given(
    batch=st.integers(1, 3),
    length=st.integers(1, 5),
    heads=st.integers(1, 4),
    head_dim=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_split_merge_round_trip(batch, length, heads, head_dim, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, heads * head_dim, generator=generator)
    split = split_heads(x, heads)
    assert split.shape == (batch, heads, length, head_dim)
    assert torch.equal(merge_heads(split), x)
    y = torch.randn(batch, heads, length, head_dim, generator=generator)
    assert torch.equal(split_heads(merge_heads(y), heads), y)


# --- MultiHeadAttention vs nn.MultiheadAttention -----------------------------------------------

# (embed_dim, heads, L, S, key_dim, value_dim, self_attention)
CONFIGS = {
    "self": (8, 2, 5, 5, None, None, True),
    "cross": (8, 4, 3, 6, None, None, False),
    "cross_kdim_vdim": (6, 3, 4, 5, 5, 7, False),
    "self_one_head": (4, 1, 3, 3, None, None, True),
}
MASKS = ["none", "causal", "padding", "causal+padding"]


def _inputs(config, batch, dtype, generator):
    embed_dim, _, length, key_length, key_dim, value_dim, self_attention = config
    query = torch.randn(batch, length, embed_dim, generator=generator, dtype=dtype)
    if self_attention:
        return query, query, query
    key = torch.randn(batch, key_length, key_dim or embed_dim, generator=generator, dtype=dtype)
    value = torch.randn(batch, key_length, value_dim or embed_dim, generator=generator, dtype=dtype)
    return query, key, value


def _masks(kind, batch, length, key_length):
    """(attn_mask (L, S) or None, key padding mask (B, S) or None), True = may attend."""
    lengths = torch.arange(batch) % key_length + 1  # every sequence keeps at least one key
    lengths[-1] = key_length
    causal = causal_mask(length, key_length) if "causal" in kind else None
    padding = padding_mask(lengths, max_length=key_length) if "padding" in kind else None
    return causal, padding


def _compare_with_torch(ours, reference, config, mask_kind, dtype, tol, generator):
    batch = 3
    _, heads, length, key_length, *_ = config
    query, key, value = _inputs(config, batch, dtype, generator)
    causal, padding = _masks(mask_kind, batch, length, key_length)

    ours_mask = combine_masks(causal, None if padding is None else padding[:, None, :])
    output, weights = ours(query, key, value, ours_mask)
    expected_output, expected_weights = reference(
        query,
        key,
        value,
        attn_mask=None if causal is None else to_blocked_mask(causal),
        key_padding_mask=None if padding is None else to_blocked_mask(padding),
        need_weights=True,
        average_attn_weights=False,
    )
    assert output.shape == (batch, length, ours.embed_dim)
    assert weights.shape == (batch, heads, length, key_length)
    assert output.dtype == weights.dtype == dtype
    torch.testing.assert_close(output, expected_output, **tol)
    torch.testing.assert_close(weights, expected_weights, **tol)
    if ours_mask is not None:
        allowed = torch.broadcast_to(ours_mask, (batch, length, key_length))[:, None]
        assert torch.all(weights[~allowed.expand_as(weights)] == 0)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_from_torch_matches_torch(config_name, mask_kind, bias, float_dtype, float_tol, generator):
    config = CONFIGS[config_name]
    embed_dim, heads, _, _, key_dim, value_dim, _ = config
    reference = nn.MultiheadAttention(
        embed_dim,
        heads,
        bias=bias,
        kdim=key_dim,
        vdim=value_dim,
        batch_first=True,
        dtype=float_dtype,
    )
    _randomize_(reference, generator)
    ours = MultiHeadAttention.from_torch(reference)
    assert (ours.query_proj.bias is not None) == bias
    assert all(p.dtype == float_dtype for p in ours.parameters())
    _compare_with_torch(ours, reference, config, mask_kind, float_dtype, float_tol, generator)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_direct_module_matches_torch_with_copied_weights(
    config_name, mask_kind, bias, float_dtype, float_tol, generator
):
    config = CONFIGS[config_name]
    embed_dim, heads, _, _, key_dim, value_dim, _ = config
    ours = MultiHeadAttention(embed_dim, heads, key_dim=key_dim, value_dim=value_dim, bias=bias)
    ours = _randomize_(ours.to(float_dtype), generator)
    reference = _copy_into_torch(ours, key_dim or embed_dim, value_dim or embed_dim)
    _compare_with_torch(ours, reference, config, mask_kind, float_dtype, float_tol, generator)


def test_from_torch_copies_every_weight_exactly(generator):
    reference = nn.MultiheadAttention(6, 2, kdim=4, vdim=5, batch_first=True, dtype=torch.float64)
    _randomize_(reference, generator)
    ours = MultiHeadAttention.from_torch(reference)
    assert torch.equal(ours.query_proj.weight, reference.q_proj_weight)
    assert torch.equal(ours.key_proj.weight, reference.k_proj_weight)
    assert torch.equal(ours.value_proj.weight, reference.v_proj_weight)
    biases = torch.cat([ours.query_proj.bias, ours.key_proj.bias, ours.value_proj.bias])
    assert torch.equal(biases, reference.in_proj_bias)
    assert torch.equal(ours.out_proj.weight, reference.out_proj.weight)
    assert torch.equal(ours.out_proj.bias, reference.out_proj.bias)
    # A copy, not a view: changing ours leaves the reference alone.
    with torch.no_grad():
        ours.query_proj.weight.add_(1.0)
    assert not torch.equal(ours.query_proj.weight, reference.q_proj_weight)


@pytest.mark.parametrize(
    "option", [{"add_bias_kv": True}, {"add_zero_attn": True}], ids=["add_bias_kv", "add_zero_attn"]
)
def test_from_torch_rejects_options_without_counterpart(option):
    reference = nn.MultiheadAttention(4, 2, batch_first=True, **option)
    with pytest.raises(ValueError):
        MultiHeadAttention.from_torch(reference)


# --- MultiHeadAttention on its own -------------------------------------------------------------


def test_module_structure():
    attention = MultiHeadAttention(8, 2, key_dim=3, value_dim=5, bias=False)
    assert attention.embed_dim == 8 and attention.num_heads == 2
    assert attention.query_proj.weight.shape == (8, 8)
    assert attention.key_proj.weight.shape == (8, 3)
    assert attention.value_proj.weight.shape == (8, 5)
    assert attention.out_proj.weight.shape == (8, 8)
    projections = (attention.query_proj, attention.key_proj, attention.value_proj)
    assert all(p.bias is None for p in (*projections, attention.out_proj))


@pytest.mark.parametrize(("embed_dim", "heads"), [(6, 4), (0, 1), (4, 0), (-4, 2)])
def test_module_rejects_bad_head_counts(embed_dim, heads):
    with pytest.raises(ValueError) as excinfo:
        MultiHeadAttention(embed_dim, heads)
    message = str(excinfo.value)
    assert f"embed_dim={embed_dim}" in message and f"num_heads={heads}" in message


@pytest.mark.parametrize("which", ["query", "key", "value"])
def test_module_rejects_inputs_that_are_not_three_dimensional(which):
    attention = MultiHeadAttention(4, 2)
    inputs = {
        "query": torch.zeros(2, 3, 4),
        "key": torch.zeros(2, 5, 4),
        "value": torch.zeros(2, 5, 4),
    }
    inputs[which] = inputs[which][0]
    with pytest.raises(ValueError) as excinfo:
        attention(**inputs)
    assert which in str(excinfo.value) and str(tuple(inputs[which].shape)) in str(excinfo.value)


def test_module_defaults_are_self_attention(generator):
    attention = _randomize_(MultiHeadAttention(6, 3).double(), generator)
    x = torch.randn(2, 4, 6, generator=generator, dtype=torch.float64)
    memory = torch.randn(2, 5, 6, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(attention(x), attention(x, x, x))
    torch.testing.assert_close(attention(x, memory), attention(x, memory, memory))


def test_module_mask_shapes_agree(generator):
    batch, heads, length, key_length = 2, 3, 4, 5
    attention = _randomize_(MultiHeadAttention(6, heads).double(), generator)
    query = torch.randn(batch, length, 6, generator=generator, dtype=torch.float64)
    memory = torch.randn(batch, key_length, 6, generator=generator, dtype=torch.float64)
    mask = causal_mask(length, key_length)  # (L, S)
    expected = attention(query, memory, mask=mask)
    per_batch = mask.expand(batch, length, key_length)  # (B, L, S)
    per_head = mask.expand(batch, heads, length, key_length)  # (B, H, L, S)
    for shaped in (per_batch, per_head):
        output, weights = attention(query, memory, mask=shaped)
        torch.testing.assert_close(output, expected[0], atol=1e-12, rtol=1e-12)
        torch.testing.assert_close(weights, expected[1], atol=1e-12, rtol=1e-12)


def test_module_per_head_mask(generator):
    batch, heads, length = 2, 2, 4
    attention = _randomize_(MultiHeadAttention(4, heads).double(), generator)
    x = torch.randn(batch, length, 4, generator=generator, dtype=torch.float64)
    mask = torch.stack([causal_mask(length), local_mask(length, window=1)])  # (H, L, S)
    mask = mask.expand(batch, heads, length, length)
    _, weights = attention(x, mask=mask)
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights[mask] > 0)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_module_fully_masked_row(bias, generator):
    batch, length, key_length, embed_dim = 2, 3, 4, 6
    attention = MultiHeadAttention(embed_dim, 2, key_dim=5, bias=bias).double()
    attention = _randomize_(attention, generator)
    query = torch.randn(batch, length, embed_dim, generator=generator, dtype=torch.float64)
    key = torch.randn(batch, key_length, 5, generator=generator, dtype=torch.float64)
    value = torch.randn(batch, key_length, embed_dim, generator=generator, dtype=torch.float64)
    for tensor in (query, key, value):
        tensor.requires_grad_()
    mask = torch.ones(batch, length, key_length, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    output, weights = attention(query, key, value, mask)
    assert not torch.isnan(output).any() and not torch.isnan(weights).any()
    assert torch.all(weights[0, :, 1] == 0)
    # Zero context, so the output is the output projection of zero: its bias (or zero).
    expected = attention.out_proj.bias if bias else torch.zeros(embed_dim, dtype=torch.float64)
    torch.testing.assert_close(output[0, 1], expected.detach(), atol=1e-12, rtol=0)
    output.sum().backward()
    for tensor in (query, key, value):
        assert tensor.grad is not None and torch.isfinite(tensor.grad).all()
    for parameter in attention.parameters():
        assert torch.isfinite(parameter.grad).all()


def test_module_checks_the_mask(generator):
    attention = MultiHeadAttention(4, 2)
    x = torch.randn(2, 3, 4, generator=generator)
    with pytest.raises(TypeError):
        attention(x, mask=torch.ones(3, 3))
    with pytest.raises(ValueError):
        attention(x, mask=torch.ones(3, 4, dtype=torch.bool))


# --- causality property ------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    batch=st.integers(1, 2),
    length=st.integers(2, 6),
    heads=st.integers(1, 3),
    head_dim=st.integers(1, 3),
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_causal_self_attention_ignores_the_future(
    batch, length, heads, head_dim, data, seed
):
    cut = data.draw(st.integers(1, length - 1), label="first changed position")
    generator = torch.Generator().manual_seed(seed)
    attention = _randomize_(MultiHeadAttention(heads * head_dim, heads).double(), generator)
    x = torch.randn(batch, length, heads * head_dim, generator=generator, dtype=torch.float64)
    changed = x.clone()
    future = (batch, length - cut, heads * head_dim)
    changed[:, cut:] = torch.randn(future, generator=generator, dtype=torch.float64)
    mask = causal_mask(length)
    output, weights = attention(x, mask=mask)
    changed_output, changed_weights = attention(changed, mask=mask)
    torch.testing.assert_close(changed_output[:, :cut], output[:, :cut], atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(
        changed_weights[:, :, :cut], weights[:, :, :cut], atol=1e-12, rtol=1e-12
    )
    # The check has teeth: the changed positions themselves do see the change.
    assert not torch.allclose(changed_output[:, cut:], output[:, cut:])
