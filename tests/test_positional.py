"""Positional encodings: their defining properties, and what they do to attention."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.multihead import MultiHeadAttention
from attnprimer.positional import (
    LearnedEncoding,
    RelativePositionBias,
    SinusoidalEncoding,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    relative_offsets,
    rotary_angles,
    sinusoidal_encoding,
)


def test_sinusoidal_matches_the_formula_of_vaswani_et_al():
    length, dim = 7, 6
    table = sinusoidal_encoding(length, dim)
    for position in range(length):
        for i in range(dim // 2):
            angle = position / 10_000 ** (2 * i / dim)
            assert table[position, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[position, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_sinusoidal_rows_have_one_norm_and_products_depend_on_the_offset_only():
    table = sinusoidal_encoding(40, 16).double()
    torch.testing.assert_close(table.norm(dim=-1), torch.full((40,), math.sqrt(8.0),
                                                              dtype=torch.float64), atol=1e-6,
                               rtol=0)
    for offset in (1, 5, 17):
        products = (table[:-offset] * table[offset:]).sum(-1)
        assert products.max() - products.min() < 1e-5


@pytest.mark.parametrize("dim", [0, 3, -2])
def test_odd_or_empty_dimensions_are_refused(dim):
    with pytest.raises(ValueError, match="even"):
        sinusoidal_encoding(4, dim)
    with pytest.raises(ValueError, match="even"):
        rotary_angles(4, dim)


def test_sinusoidal_module_adds_the_table():
    encode = SinusoidalEncoding(8, max_positions=16)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(encode(x), x + sinusoidal_encoding(5, 8))
    assert list(encode.parameters()) == []  # nothing to learn
    with pytest.raises(ValueError, match="longer than the 16 positions"):
        encode(torch.randn(1, 17, 8))


def test_learned_encoding_starts_at_zero_and_learns_only_the_positions_it_sees():
    encode = LearnedEncoding(4, max_positions=10)
    x = torch.randn(3, 6, 4)
    assert torch.equal(encode(x), x)
    optimizer = torch.optim.Adam(encode.parameters(), lr=0.1)
    for _ in range(5):
        loss = (encode(x) - 1).pow(2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    norms = encode.norms()
    assert torch.all(norms[:6] > 0)
    assert torch.all(norms[6:] == 0)  # positions beyond the training length stay at zero


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 20), st.integers(0, 20), st.integers(0, 2**31 - 1))
def test_rotary_scores_depend_on_the_offset_only(m, n, seed):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 8, generator=generator, dtype=torch.float64)
    length = max(m, n) + 1
    queries = apply_rotary(q.expand(length, 8).clone())
    keys = apply_rotary(k.expand(length, 8).clone())
    shift = min(m, n)  # move both back by the same amount: the score must not change
    assert (queries[m] @ keys[n]).item() == pytest.approx(
        (queries[m - shift] @ keys[n - shift]).item(), abs=1e-9)


def test_rotary_keeps_lengths_and_leaves_position_zero_alone():
    x = torch.randn(2, 9, 6, dtype=torch.float64)
    rotated = apply_rotary(x)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[:, 0], x[:, 0])


def test_rotary_turns_each_pair_by_its_angle():
    x = torch.zeros(3, 4)
    x[:, 0] = 1.0  # the unit vector of pair 0
    angles = rotary_angles(3, 4)
    rotated = apply_rotary(x)
    torch.testing.assert_close(rotated[:, 0], angles[:, 0].cos())
    torch.testing.assert_close(rotated[:, 1], angles[:, 0].sin())


# --- attention without positions ---------------------------------------------------------------


def test_self_attention_is_permutation_equivariant(generator):
    attention = MultiHeadAttention(8, num_heads=2).double()
    x = torch.randn(2, 7, 8, generator=generator, dtype=torch.float64)
    order = torch.randperm(7, generator=generator)
    with torch.no_grad():
        output, weights = attention(x)
        shuffled, shuffled_weights = attention(x[:, order])
    torch.testing.assert_close(shuffled, output[:, order], atol=1e-12, rtol=0)
    torch.testing.assert_close(shuffled_weights, weights[:, :, order][..., order], atol=1e-12,
                               rtol=0)


def test_a_positional_encoding_breaks_the_equivariance(generator):
    attention = MultiHeadAttention(8, num_heads=2).double()
    x = torch.randn(1, 7, 8, generator=generator, dtype=torch.float64)
    order = torch.flip(torch.arange(7), [0])
    encoding = sinusoidal_encoding(7, 8).double()
    with torch.no_grad():
        output = attention(x + encoding)[0]
        shuffled = attention(x[:, order] + encoding)[0]
    assert (shuffled - output[:, order]).abs().max() > 1e-2


def test_rotary_breaks_it_too(generator):
    q, k, v = torch.randn(3, 1, 6, 4, generator=generator, dtype=torch.float64)
    order = torch.flip(torch.arange(6), [0])
    plain = scaled_dot_product_attention(apply_rotary(q), apply_rotary(k), v)[0]
    shuffled = scaled_dot_product_attention(apply_rotary(q[:, order]), apply_rotary(k[:, order]),
                                            v[:, order])[0]
    assert (shuffled - plain[:, order]).abs().max() > 1e-3


# --- score biases ----------------------------------------------------------------------------


@pytest.mark.parametrize("heads", [1, 2, 4, 8, 16])
def test_alibi_slopes_are_the_geometric_sequence_of_press_et_al(heads):
    ratio = 2 ** (-8 / heads)
    expected = torch.tensor([ratio ** head for head in range(1, heads + 1)])
    torch.testing.assert_close(alibi_slopes(heads), expected)


def test_alibi_slopes_for_other_head_counts_extend_the_power_of_two_below():
    # six heads: the four slopes of four heads, then slopes 1 and 3 of eight heads
    eight = alibi_slopes(8)
    torch.testing.assert_close(alibi_slopes(6), torch.cat([alibi_slopes(4), eight[[0, 2]]]))
    with pytest.raises(ValueError, match="num_heads"):
        alibi_slopes(0)


def test_alibi_bias_values_on_a_small_case():
    bias = alibi_bias(2, 3)  # (H, L, S); slopes 1/16 and 1/256
    assert bias.shape == (2, 3, 3)
    distance = torch.tensor([[0.0, 1, 2], [1, 0, 1], [2, 1, 0]])
    torch.testing.assert_close(bias[0], -distance / 16)
    torch.testing.assert_close(bias[1], -distance / 256)
    causal = alibi_bias(2, 3, causal=True)
    assert torch.isinf(causal[:, 0, 1:]).all() and torch.isinf(causal[:, 1, 2]).all()
    torch.testing.assert_close(causal.tril(), bias.tril())


def test_bias_shapes_for_other_key_lengths():
    assert relative_offsets(2, 5).shape == (2, 5)
    assert alibi_bias(4, 2, 5).shape == (4, 2, 5)
    assert RelativePositionBias(3, max_offset=2)(2, 5).shape == (3, 2, 5)


def test_relative_bias_reads_one_entry_per_clipped_offset():
    bias = RelativePositionBias(1, max_offset=2)
    with torch.no_grad():
        bias.table[0] = torch.tensor([-2.0, -1, 0, 1, 2])  # offsets -2..2
    table = bias(5)[0]  # (L, S)
    expected = relative_offsets(5).clamp(-2, 2).float()
    torch.testing.assert_close(table, expected)
    assert torch.isinf(bias(5, causal=True)[0].triu(1)[0, 1:]).all()


def test_relative_bias_starts_at_zero_and_learns():
    bias = RelativePositionBias(2, max_offset=3)
    assert torch.equal(bias(4), torch.zeros(2, 4, 4))
    bias(4)[:, 0, 1].sum().backward()
    assert bias.table.grad[:, 3 + 1].eq(1).all()  # offset +1 received the gradient


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kind", ["alibi", "relative"])
def test_scores_plus_bias_agree_with_torch_attention_with_a_float_mask(kind, causal):
    generator = torch.Generator().manual_seed(0)
    heads, length, dim = 4, 6, 8
    q, k, v = torch.randn(3, 2, heads, length, dim, generator=generator)  # (B, H, L, Dh) each
    if kind == "alibi":
        bias = alibi_bias(heads, length, causal=causal)
    else:
        module = RelativePositionBias(heads, max_offset=2)
        with torch.no_grad():
            module.table.normal_(generator=generator)
        bias = module(length, causal=causal).detach()
    scores = q @ k.transpose(-2, -1) / math.sqrt(dim) + bias  # (B, H, L, S)
    ours = torch.softmax(scores, dim=-1) @ v
    theirs = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_alibi_scores_depend_on_the_offset_only():
    bias = alibi_bias(4, 9)
    for offset in range(-8, 9):
        diagonal = bias.diagonal(offset, dim1=-2, dim2=-1)  # (H, L - |offset|)
        assert torch.equal(diagonal, diagonal[:, :1].expand_as(diagonal))
