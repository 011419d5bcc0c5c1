"""The Transformer's blocks against PyTorch's, and the causal decoder's behaviour."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attnprimer.masks import causal_mask, padding_mask, to_blocked_mask
from attnprimer.multihead import MultiHeadAttention
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.train import held_out_generator
from attnprimer.transformer import (
    DecoderBlock,
    DecoderOnly,
    EncoderBlock,
    FeedForward,
    Transformer,
    by_head,
)

EXACT = {"atol": 1e-10, "rtol": 0}
DIM, HEADS, HIDDEN = 8, 2, 16


def torch_layer(kind, norm_first: bool):
    torch.manual_seed(0)
    layer = kind(DIM, HEADS, dim_feedforward=HIDDEN, dropout=0.0, activation="relu",
                 batch_first=True, norm_first=norm_first).double()
    # Training mode (dropout is 0): PyTorch's inference fast path would zero the outputs at
    # padded positions, which is not the same function.
    return layer.train()


def copy_feed_forward(ours: FeedForward, layer) -> None:
    ours.expand.load_state_dict(layer.linear1.state_dict())
    ours.contract.load_state_dict(layer.linear2.state_dict())


def copy_encoder(layer: nn.TransformerEncoderLayer, pre_norm: bool) -> EncoderBlock:
    block = EncoderBlock(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    block.attention = MultiHeadAttention.from_torch(layer.self_attn)
    copy_feed_forward(block.feed_forward, layer)
    block.norm_attention.load_state_dict(layer.norm1.state_dict())
    block.norm_feed_forward.load_state_dict(layer.norm2.state_dict())
    return block


def copy_decoder(layer: nn.TransformerDecoderLayer, pre_norm: bool) -> DecoderBlock:
    block = DecoderBlock(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    block.self_attention = MultiHeadAttention.from_torch(layer.self_attn)
    block.cross_attention = MultiHeadAttention.from_torch(layer.multihead_attn)
    copy_feed_forward(block.feed_forward, layer)
    for ours, theirs in ((block.norm_self, layer.norm1), (block.norm_cross, layer.norm2),
                         (block.norm_feed_forward, layer.norm3)):
        ours.load_state_dict(theirs.state_dict())
    return block


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-LN", "pre-LN"])
def test_the_encoder_block_is_pytorchs_with_padding(pre_norm):
    layer = torch_layer(nn.TransformerEncoderLayer, norm_first=pre_norm)
    block = copy_encoder(layer, pre_norm)
    x = randn(3, 5, DIM)
    real = padding_mask([5, 3, 1], max_length=5)  # (B, S), True = a real position
    ours, weights = block(x, real[:, None, :])
    theirs = layer(x, src_key_padding_mask=to_blocked_mask(real))  # PyTorch: True = blocked
    assert_close(ours, theirs, **EXACT)
    assert weights.shape == (3, HEADS, 5, 5)
    assert bool((weights[2, :, :, 1:] == 0).all())  # one real letter: padding gets nothing


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-LN", "pre-LN"])
def test_the_encoder_block_is_pytorchs_with_a_causal_mask(pre_norm):
    layer = torch_layer(nn.TransformerEncoderLayer, norm_first=pre_norm)
    block = copy_encoder(layer, pre_norm)
    x = randn(2, 6, DIM, seed=1)
    ours, _ = block(x, causal_mask(6))
    theirs = layer(x, src_mask=to_blocked_mask(causal_mask(6)))
    assert_close(ours, theirs, **EXACT)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-LN", "pre-LN"])
def test_the_decoder_block_is_pytorchs_with_causal_and_padding_masks(pre_norm):
    layer = torch_layer(nn.TransformerDecoderLayer, norm_first=pre_norm)
    block = copy_decoder(layer, pre_norm)
    y, memory = randn(3, 4, DIM, seed=2), randn(3, 6, DIM, seed=3)
    real = padding_mask([6, 2, 4], max_length=6)  # the memory's padding: (B, S)
    ours, self_weights, cross_weights = block(y, memory, causal_mask(4), real[:, None, :])
    theirs = layer(y, memory, tgt_mask=to_blocked_mask(causal_mask(4)),
                   memory_key_padding_mask=to_blocked_mask(real))
    assert_close(ours, theirs, **EXACT)
    assert bool((self_weights.triu(diagonal=1) == 0).all())  # nothing from later steps
    assert bool((cross_weights[1, :, :, 2:] == 0).all())  # nothing from the padding


def test_without_a_norm_in_the_wrong_place_the_blocks_differ():
    """The equivalence tests can fail: post-LN copied into a pre-LN block does not match."""
    layer = torch_layer(nn.TransformerEncoderLayer, norm_first=False)
    block = copy_encoder(layer, pre_norm=True)
    x = randn(2, 5, DIM)
    assert not torch.allclose(block(x)[0], layer(x), atol=1e-3)


def test_by_head_splits_the_heads_in_order():
    weights = torch.arange(2 * 3 * 1 * 1.0).reshape(2, 3, 1, 1)
    heads = by_head("cross 2", weights)
    assert list(heads) == ["cross 2.1", "cross 2.2", "cross 2.3"]
    assert torch.equal(heads["cross 2.3"], weights[:, 2])


# --- the models: causal decoding ----------------------------------------------------------------

def models():
    torch.manual_seed(0)
    task = ReversalTransformerTask(dim=16, heads=2)
    return {"encoder-decoder": Transformer(task.vocab_size + 1, task.num_classes, 16, 2, 2),
            "decoder-only": DecoderOnly(task.num_classes, 16, 2, 2),
            "decoder-only, pre-LN": DecoderOnly(task.num_classes, 16, 2, 2, pre_norm=True)}


def batch(samples: int = 16):
    task = ReversalTransformerTask()
    return task, task.sample(samples, held_out_generator(0))


@pytest.mark.parametrize("name", list(models()))
@pytest.mark.parametrize("step", [0, 3, 7])
def test_the_logits_at_step_t_ignore_the_targets_from_t_on(name, step):
    model = models()[name].eval()
    _, examples = batch()
    changed = examples.targets.clone()
    generator = torch.Generator().manual_seed(step)
    changed[:, step:] = torch.randint(1, 10, changed[:, step:].shape, generator=generator)
    with torch.no_grad():
        before = model(examples.inputs, examples.targets).logits
        after = model(examples.inputs, changed).logits
    # Step t is fed targets[t - 1]: steps up to t are untouched, step t + 1 is not.
    assert_close(after[:, : step + 1], before[:, : step + 1], atol=1e-6, rtol=0)
    assert not torch.allclose(after[:, step + 1], before[:, step + 1])


@pytest.mark.parametrize("name", list(models()))
def test_greedy_decoding_is_teacher_forcing_on_the_models_own_outputs(name):
    model = models()[name].eval()
    _, examples = batch()
    with torch.no_grad():
        greedy = model(examples.inputs)
        forced = model(examples.inputs, greedy.logits.argmax(dim=-1))
    assert greedy.logits.shape == (16, examples.inputs.shape[1] + 1, 10)
    assert_close(forced.logits, greedy.logits, atol=1e-6, rtol=0)
    for key, weights in greedy.attention.items():  # the last pass saw the same sequence
        assert_close(forced.attention[key], weights, atol=1e-6, rtol=0)


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder-only"])
def test_padding_changes_no_output(architecture):
    """The same letters with more padding after them: the same logits, step for step."""
    torch.manual_seed(0)
    model = ReversalTransformerTask(architecture=architecture).build_model().eval()
    short = ReversalTransformerTask(max_len=4)
    inputs = short.sample(8, held_out_generator(0)).inputs  # (B, 4)
    padded = torch.nn.functional.pad(inputs, (0, 6))  # (B, 10): six more padding tokens
    with torch.no_grad():
        logits = model(inputs).logits  # (B, 5, C)
        more = model(padded).logits[:, :5]
    assert_close(more, logits, atol=1e-5, rtol=0)


def test_every_head_of_every_layer_is_returned_by_name():
    model = models()["encoder-decoder"].eval()
    _, examples = batch(4)
    with torch.no_grad():
        attention = model(examples.inputs, examples.targets).attention
    expected = {f"{kind} {layer}.{head}" for kind in ("encoder self", "decoder self", "cross")
                for layer in (1, 2) for head in (1, 2)}
    assert set(attention) == expected
    S, T = examples.inputs.shape[1], examples.targets.shape[1]
    assert attention["encoder self 2.1"].shape == (4, S, S)
    assert attention["cross 1.2"].shape == (4, T, S)
    for weights in attention.values():
        assert_close(weights.sum(dim=-1), torch.ones(weights.shape[:-1]), atol=1e-5, rtol=0)


def test_the_task_samples_what_the_rnn_task_samples():
    from attnprimer.tasks import ReversalTask
    ours = ReversalTransformerTask(architecture="decoder-only").sample(50, held_out_generator())
    theirs = ReversalTask().sample(50, held_out_generator())
    assert torch.equal(ours.inputs, theirs.inputs) and torch.equal(ours.targets, theirs.targets)


def test_the_task_refuses_gru_settings_and_bad_shapes():
    with pytest.raises(ValueError, match="GRU"):
        ReversalTransformerTask(hidden=32)
    with pytest.raises(ValueError, match="multiple of heads"):
        ReversalTransformerTask(dim=30, heads=4)
    with pytest.raises(ValueError, match="architecture"):
        ReversalTransformerTask(architecture="encoder-only")
