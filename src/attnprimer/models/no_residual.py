"""The Transformer chapter's ablation: blocks without their residual connections.

Taught in the chapter "The Transformer" (``docs/chapters/transformer.md``).

Each sublayer's output replaces its input instead of being added to it: ``x = f(x)`` where the
block of [`attnprimer.transformer`][attnprimer.transformer] writes ``x = x + f(x)`` (pre-LN:
``f`` reads ``norm(x)``; post-LN: the sum's norm becomes ``norm(f(x))``). The chapter "The
Transformer" trains these models to measure what the residual connections are for
([`ReversalTransformerTask`][attnprimer.tasks.reversal_transformer.ReversalTransformerTask]
with ``residual=False`` builds them); nothing else uses them.

Shape legend: B batch, L query length, S key length, D model width, H heads.
"""

from __future__ import annotations

import torch

from attnprimer.transformer import DecoderBlock, DecoderOnly, EncoderBlock, Transformer

__all__ = ["DecoderBlockWithoutResidual", "DecoderOnlyWithoutResidual",
           "EncoderBlockWithoutResidual", "TransformerWithoutResidual"]


class EncoderBlockWithoutResidual(EncoderBlock):
    """[`EncoderBlock`][attnprimer.transformer.EncoderBlock] with ``x = f(x)`` for each
    sublayer: the same modules, the residual connections dropped.

    Examples:
        >>> block = EncoderBlockWithoutResidual(dim=8, heads=2, hidden=16, pre_norm=True)
        >>> x, weights = block(torch.randn(3, 5, 8))
        >>> x.shape, weights.shape                   # (B, L, D), (B, H, L, L)
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    """

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D), mask (B, L, L) or (L, L) -> (B, L, D), weights (B, H, L, L)."""
        if self.pre_norm:
            x, weights = self.attention(self.norm_attention(x), mask=mask)
            x = self.feed_forward(self.norm_feed_forward(x))
        else:
            context, weights = self.attention(x, mask=mask)
            x = self.norm_attention(context)
            x = self.norm_feed_forward(self.feed_forward(x))
        return x, weights


class DecoderBlockWithoutResidual(DecoderBlock):
    """[`DecoderBlock`][attnprimer.transformer.DecoderBlock] with ``y = f(y)`` for each of its
    three sublayers."""

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """y (B, T, D), memory (B, S, D) -> y (B, T, D), weights (B, H, T, T), (B, H, T, S)."""
        if self.pre_norm:
            y, self_weights = self.self_attention(self.norm_self(y), mask=self_mask)
            y, cross_weights = self.cross_attention(self.norm_cross(y), memory,
                                                    mask=memory_mask)
            y = self.feed_forward(self.norm_feed_forward(y))
        else:
            context, self_weights = self.self_attention(y, mask=self_mask)
            y = self.norm_self(context)
            context, cross_weights = self.cross_attention(y, memory, mask=memory_mask)
            y = self.norm_cross(context)
            y = self.norm_feed_forward(self.feed_forward(y))
        return y, self_weights, cross_weights


class TransformerWithoutResidual(Transformer):
    """The encoder-decoder [`Transformer`][attnprimer.transformer.Transformer], its blocks
    without residual connections."""

    encoder_block = EncoderBlockWithoutResidual
    decoder_block = DecoderBlockWithoutResidual


class DecoderOnlyWithoutResidual(DecoderOnly):
    """The [`DecoderOnly`][attnprimer.transformer.DecoderOnly] stack, its blocks without
    residual connections."""

    block = EncoderBlockWithoutResidual
