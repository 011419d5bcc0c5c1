"""The Transformer chapter's ablation: blocks without residual connections, beside the plain."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from attnprimer.masks import causal_mask
from attnprimer.models.no_residual import (
    DecoderBlockWithoutResidual,
    DecoderOnlyWithoutResidual,
    EncoderBlockWithoutResidual,
    TransformerWithoutResidual,
)
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.transformer import DecoderBlock, DecoderOnly, EncoderBlock, Transformer

EXACT = {"atol": 1e-10, "rtol": 0}
DIM, HEADS, HIDDEN = 8, 2, 16


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-LN", "pre-LN"])
def test_without_residuals_each_block_is_its_sublayers_composed(pre_norm):
    """Each sublayer's output replaces its input, nothing is added back."""
    torch.manual_seed(0)
    x, memory = randn(2, 5, DIM), randn(2, 6, DIM, seed=1)
    encoder = EncoderBlockWithoutResidual(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    decoder = DecoderBlockWithoutResidual(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    mask = causal_mask(5)

    def sublayer(norm, f):  # f alone, its input normalised (pre-LN) or its output (post-LN)
        return (lambda h: f(norm(h))) if pre_norm else (lambda h: norm(f(h)))

    attend = sublayer(encoder.norm_attention, lambda h: encoder.attention(h)[0])
    expected = sublayer(encoder.norm_feed_forward, encoder.feed_forward)(attend(x))
    assert_close(encoder(x)[0], expected, **EXACT)

    steps = [sublayer(decoder.norm_self, lambda h: decoder.self_attention(h, mask=mask)[0]),
             sublayer(decoder.norm_cross, lambda h: decoder.cross_attention(h, memory)[0]),
             sublayer(decoder.norm_feed_forward, decoder.feed_forward)]
    expected = x
    for step in steps:
        expected = step(expected)
    assert_close(decoder(x, memory, mask)[0], expected, **EXACT)

    # the plain block with the same weights adds each sublayer's input back
    plain = DecoderBlock(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    plain.load_state_dict(decoder.state_dict())
    assert not torch.allclose(plain(x, memory, mask)[0], expected, atol=1e-3)
    plain_encoder = EncoderBlock(DIM, HEADS, HIDDEN, pre_norm=pre_norm).double()
    plain_encoder.load_state_dict(encoder.state_dict())
    assert not torch.allclose(plain_encoder(x)[0], encoder(x)[0], atol=1e-3)


@pytest.mark.parametrize("architecture, plain, ablated", [
    ("encoder-decoder", Transformer, TransformerWithoutResidual),
    ("decoder-only", DecoderOnly, DecoderOnlyWithoutResidual),
])
def test_the_task_builds_the_variant_for_residual_false_only(architecture, plain, ablated):
    without = ReversalTransformerTask(architecture=architecture, residual=False).build_model()
    assert type(without) is ablated
    blocks = [m for m in without.modules() if isinstance(m, EncoderBlock | DecoderBlock)]
    assert blocks and all(type(block).__name__.endswith("WithoutResidual") for block in blocks)
    with_residuals = ReversalTransformerTask(architecture=architecture).build_model()
    assert type(with_residuals) is plain
    assert all(type(m) in (EncoderBlock, DecoderBlock) for m in with_residuals.modules()
               if isinstance(m, EncoderBlock | DecoderBlock))
    # the same parameters, so a checkpoint of either loads into its own class alone by name
    assert with_residuals.state_dict().keys() == without.state_dict().keys()
