"""The five position schemes of the length-generalisation chapter, against PyTorch's attention."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.masks import causal_mask
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads
from attnprimer.position_schemes import (
    POSITION_SCHEMES,
    SchemeAttention,
    SchemeDecoder,
    nope_position_signal,
)
from attnprimer.positional import alibi_bias, apply_rotary
from attnprimer.tasks import CopyReverseTask

torch.manual_seed(0)


def _qkv(attention: SchemeAttention, x: torch.Tensor):
    heads = attention.num_heads
    return [split_heads(projection(x), heads) for projection in
            (attention.query_proj, attention.key_proj, attention.value_proj)]


def test_no_scheme_is_torch_multihead_attention_under_a_causal_mask():
    reference = nn.MultiheadAttention(8, 2, batch_first=True)
    attention = SchemeAttention(8, 2, "none")
    attention.load_state_dict(MultiHeadAttention.from_torch(reference).state_dict())
    x = torch.randn(3, 6, 8)
    expected, expected_weights = reference(x, x, x, attn_mask=~causal_mask(6),
                                           average_attn_weights=False)
    output, weights = attention(x, mask=causal_mask(6))
    torch.testing.assert_close(output, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("scheme", ["alibi", "relative"])
def test_score_biases_are_a_float_mask_of_torch_attention(scheme):
    attention = SchemeAttention(8, 2, scheme, max_offset=3)
    if scheme == "relative":  # trained biases, not the zeros it starts from
        nn.init.normal_(attention.relative.table)
        bias = attention.relative(6).detach()
    else:
        bias = alibi_bias(2, 6)
    x = torch.randn(3, 6, 8)
    q, k, v = _qkv(attention, x)
    float_mask = bias.masked_fill(~causal_mask(6), float("-inf"))  # (H, L, L)
    expected = attention.out_proj(merge_heads(
        F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)))
    output, _ = attention(x, mask=causal_mask(6))
    torch.testing.assert_close(output, expected, atol=1e-6, rtol=1e-5)


def test_rotary_rotates_queries_and_keys_before_torch_attention():
    attention = SchemeAttention(8, 2, "rotary")
    x = torch.randn(3, 6, 8)
    q, k, v = _qkv(attention, x)
    expected = attention.out_proj(merge_heads(F.scaled_dot_product_attention(
        apply_rotary(q), apply_rotary(k), v, is_causal=True)))
    output, _ = attention(x, mask=causal_mask(6))
    torch.testing.assert_close(output, expected, atol=1e-6, rtol=1e-5)


def test_an_unknown_scheme_is_an_error():
    with pytest.raises(ValueError, match="scheme must be one of"):
        SchemeAttention(8, 2, "learned")


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_left_padding_changes_nothing(scheme):
    """The layout's promise: the real tokens sit side by side whatever the padding, so the
    relative schemes see the same offsets and the absolute one the same positions."""
    model = SchemeDecoder(num_outputs=6, dim=16, heads=2, layers=2, scheme=scheme).eval()
    if scheme == "relative":
        for block in model.blocks:
            nn.init.normal_(block.attention.relative.table)
    letters = torch.tensor([[1, 2, 3, 4]])
    targets = torch.tensor([[4, 3, 2, 1, 5]])
    padded = F.pad(letters, (3, 0))  # three pads before the letters
    padded_targets = F.pad(targets, (0, 3))  # and the outputs padded after the end
    with torch.no_grad():
        alone = model(letters, targets).logits
        with_pads = model(padded, padded_targets).logits[:, :5]
        greedy_alone = model(letters).logits.argmax(-1)
        greedy_padded = model(padded).logits.argmax(-1)[:, :5]
    torch.testing.assert_close(with_pads, alone, atol=1e-5, rtol=1e-4)
    assert torch.equal(greedy_padded, greedy_alone)


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_teacher_forcing_and_greedy_agree_when_the_model_writes_the_targets(scheme):
    model = SchemeDecoder(num_outputs=6, dim=16, heads=2, layers=1, scheme=scheme).eval()
    inputs = torch.tensor([[1, 2, 3], [0, 4, 2]])
    with torch.no_grad():
        greedy = model(inputs)
        forced = model(inputs, greedy.logits.argmax(-1))
    torch.testing.assert_close(forced.logits, greedy.logits, atol=1e-5, rtol=1e-4)


def test_the_start_token_sits_just_before_the_letters():
    model = SchemeDecoder(num_outputs=6, dim=8, heads=2, layers=1)
    seen = []
    model.embed.register_forward_hook(lambda module, args, output: seen.append(args[0]))
    model(torch.tensor([[0, 0, 1, 2], [3, 4, 5, 1]]), torch.zeros(2, 5, dtype=torch.long))
    start, separator = model.start, model.separator
    assert seen[0][:, :6].tolist() == [[0, 0, start, 1, 2, separator],
                                       [start, 3, 4, 5, 1, separator]]


def test_the_nope_signal_needs_the_causal_mask():
    """With the mask, the start token's share differs at every position; without, the same
    uniform average reaches every position."""
    signal = nope_position_signal(6)
    assert torch.allclose(signal, 1 / torch.arange(1.0, 7.0))
    assert len(set(signal.tolist())) == 6
    model = SchemeDecoder(num_outputs=6, dim=8, heads=1, layers=1, scheme="none")
    attention = model.blocks[0].attention
    x = torch.randn(1, 5, 8)
    permutation = torch.tensor([4, 2, 0, 1, 3])
    # without a mask, permuting the tokens only permutes the outputs: order is invisible
    output, _ = attention(x)
    permuted, _ = attention(x[:, permutation])
    torch.testing.assert_close(permuted, output[:, permutation], atol=1e-6, rtol=1e-5)
    # with it, the same tokens in another order give another output at the same token
    output, _ = attention(x, mask=causal_mask(5))
    permuted, _ = attention(x[:, permutation], mask=causal_mask(5))
    assert not torch.allclose(permuted, output[:, permutation], atol=1e-3)


@pytest.mark.parametrize("operation, expected", [("copy", "ABC."), ("reverse", "CBA.")])
def test_task_targets(operation, expected):
    task = CopyReverseTask(max_len=5, operation=operation)
    inputs = task.encode("ABC")
    assert inputs.tolist() == [0, 0, 1, 2, 3]
    targets = task.targets_for(inputs[None])[0]
    assert task.decode_output(targets) == expected
    assert targets.tolist()[4:] == [0, 0]  # padding after the end


def test_task_batches_are_padded_on_the_left_and_at_length_has_none():
    task = CopyReverseTask(max_len=6)
    batch = task.sample(200, torch.Generator().manual_seed(0))
    letters = batch.inputs != 0
    assert torch.equal(letters, letters.cummax(dim=1).values)  # no pad after a letter
    assert set(letters.sum(dim=1).tolist()) == set(range(1, 7))
    long = task.at_length(11).sample(5, torch.Generator())
    assert long.inputs.shape == (5, 11) and bool((long.inputs != 0).all())


def test_task_settings_are_checked():
    with pytest.raises(ValueError, match="operation"):
        CopyReverseTask(operation="sort")
    with pytest.raises(ValueError, match="pos_enc"):
        CopyReverseTask(pos_enc="learned")


def test_only_the_relative_bias_adds_parameters_one_per_head_layer_and_offset():
    # The chapter: "the relative bias also learns one number per head, layer and offset (136 in
    # all) that the others do not have"; every other scheme has exactly NoPE's parameters.
    task = CopyReverseTask()
    counts = {scheme: sum(p.numel() for p in CopyReverseTask(pos_enc=scheme).build_model()
                          .parameters()) for scheme in POSITION_SCHEMES}
    extra = {scheme: count - counts["none"] for scheme, count in counts.items()}
    assert extra == {scheme: 0 for scheme in POSITION_SCHEMES} | {
        "relative": task.heads * task.layers * (2 * task.max_len + 1)}
    assert extra["relative"] == 136
