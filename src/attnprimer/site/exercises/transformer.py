"""The exercises of the Transformer lab: a pre-LN encoder block, and the decoder-only mask.

The checker is in [`checker`][attnprimer.site.exercises.checker]; the package
[`attnprimer.site.exercises`][attnprimer.site.exercises] collects this module's ``EXERCISES``
with the other labs', so ``exercises.check("encoder_block", fn)`` works like every other check.

* ``encoder_block(x, block)``: the forward pass of a pre-LN
  [`EncoderBlock`][attnprimer.transformer.EncoderBlock], written from its four modules. The
  known mistakes: a residual connection missing (around the attention, around the
  feed-forward, or both), the post-LN order, the norm applied to the sublayer's output, and the
  residual stream replaced by its normalisation.
* ``decoder_mask(sequence, source_length)``: the self-attention mask of
  [`DecoderOnly`][attnprimer.transformer.DecoderOnly], causal and blind to the input's padding.
  The known mistakes: a step that sees one token ahead, the mask upside down, a step that
  cannot see itself, the padding left visible or masked as queries, and the blocked-is-True
  convention.

Examples:
    >>> import torch
    >>> from attnprimer.site.exercises import check
    >>> def decoder_mask(sequence, source_length):
    ...     length = sequence.shape[1]
    ...     causal = torch.ones(length, length, dtype=torch.bool).tril()
    ...     real = torch.ones_like(sequence, dtype=torch.bool)
    ...     real[:, :source_length] = sequence[:, :source_length] != 0
    ...     return causal & real[:, None, :]
    >>> check("decoder_mask", decoder_mask)
    ✓ decoder_mask matches the reference on 5 cases.
"""

from __future__ import annotations

import torch

from attnprimer.site.exercises.checker import Case, Exercise, Mistake
from attnprimer.transformer import PAD, EncoderBlock

__all__ = ["DECODER_MASK", "ENCODER_BLOCK", "EXERCISES", "decoder_mask", "encoder_block"]


# A pre-LN encoder block ------------------------------------------------------------------------


class _Block(EncoderBlock):
    """A pre-LN block whose repr fits in a message: ``EncoderBlock(D=8, H=2, F=16, pre-LN)``."""

    def __repr__(self) -> str:
        return (f"EncoderBlock(D={self.attention.embed_dim}, H={self.attention.num_heads}, "
                f"F={self.feed_forward.expand.out_features}, pre-LN)")


def _block(generator: torch.Generator, dim: int, heads: int, hidden: int) -> _Block:
    """A seeded pre-LN block, its norms' gains and biases moved off 1 and 0 (so that a
    misplaced norm shows)."""
    with torch.random.fork_rng():  # seeded weights, the reader's random state left alone
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (), generator=generator)))
        block = _Block(dim, heads, hidden, pre_norm=True).eval()
    with torch.no_grad():
        for norm in (block.norm_attention, block.norm_feed_forward):
            norm.weight.copy_(1 + 0.5 * torch.randn(dim, generator=generator))
            norm.bias.copy_(0.5 * torch.randn(dim, generator=generator))
    return block


def _block_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(14)
    cases = []
    for batch, length, dim, heads, hidden in ((1, 1, 4, 1, 8), (2, 3, 8, 2, 16),
                                              (3, 5, 16, 4, 32)):
        x = torch.randn(batch, length, dim, generator=generator)
        cases.append(Case({"x": x, "block": _block(generator, dim, heads, hidden)}))
    return cases


@torch.no_grad()
def encoder_block(x: torch.Tensor, block: EncoderBlock) -> torch.Tensor:
    """The reference: x (B, L, D) through a pre-LN ``block``, without a mask -> (B, L, D)."""
    return block(x)[0]


def _sublayers(block: EncoderBlock):
    def attention(x):
        return block.attention(x)[0]
    return attention, block.norm_attention, block.feed_forward, block.norm_feed_forward


@torch.no_grad()
def _no_attention_residual(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    x = attention(norm_a(x))
    return x + feed_forward(norm_f(x))


@torch.no_grad()
def _no_feed_forward_residual(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    x = x + attention(norm_a(x))
    return feed_forward(norm_f(x))


@torch.no_grad()
def _no_residuals(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    return feed_forward(norm_f(attention(norm_a(x))))


@torch.no_grad()
def _post_norm(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    x = norm_a(x + attention(x))
    return norm_f(x + feed_forward(x))


@torch.no_grad()
def _norm_of_output(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    x = x + norm_a(attention(x))
    return x + norm_f(feed_forward(x))


@torch.no_grad()
def _normalised_stream(x, block):
    attention, norm_a, feed_forward, norm_f = _sublayers(block)
    x = norm_a(x)
    x = x + attention(x)
    x = norm_f(x)
    return x + feed_forward(x)


ENCODER_BLOCK = Exercise(
    name="encoder_block",
    signature="encoder_block(x, block) -> (B, L, D), from x (B, L, D) and a pre-LN EncoderBlock",
    reference=encoder_block,
    cases=_block_cases,
    outputs=(("x", "(B, L, D)"),),
    mistakes=(
        Mistake("the attention's residual connection is missing: the block returns "
                "attention(norm(x)) where it should add it to x, x + attention(norm(x)).",
                _no_attention_residual),
        Mistake("the feed-forward's residual connection is missing: the second sublayer is "
                "x + feed_forward(norm(x)), not feed_forward(norm(x)).",
                _no_feed_forward_residual),
        Mistake("both residual connections are missing: each sublayer adds what it computes "
                "to its input, x = x + attention(norm(x)), then x = x + feed_forward(norm(x)).",
                _no_residuals),
        Mistake("this is the post-LN order, norm(x + sublayer(x)), the original paper's. A "
                "pre-LN block normalises the sublayer's input and adds the result to x "
                "unnormalised: x + sublayer(norm(x)).", _post_norm),
        Mistake("the norm is applied to the sublayer's output, x + norm(sublayer(x)); it "
                "belongs on its input, x + sublayer(norm(x)).", _norm_of_output),
        Mistake("x itself was replaced by norm(x) before the residual, so the residual adds "
                "the normalised x. Keep x as it is and normalise only the copy the sublayer "
                "reads: x = x + sublayer(norm(x)).", _normalised_stream),
    ),
)


# The decoder-only model's mask -----------------------------------------------------------------


def _mask_cases() -> list[Case]:
    # the input (padded with 0), the separator (9), then the outputs so far (a 0 there is
    # the outputs' padding in a batch, which is not the input's and stays visible)
    sequences = ([[3]], [[1, 2, 9]], [[4, 0, 9, 5, 6]],
                 [[2, 3, 0, 0, 9, 3, 2], [5, 1, 2, 4, 9, 4, 2]], [[4, 0, 9, 5, 0]])
    lengths = (1, 2, 2, 4, 2)
    return [Case({"sequence": torch.tensor(sequence), "source_length": length})
            for sequence, length in zip(sequences, lengths, strict=True)]


def _causal(length: int, diagonal: int = 0) -> torch.Tensor:
    return torch.ones(length, length, dtype=torch.bool).tril(diagonal)


def _real(sequence: torch.Tensor, source_length: int) -> torch.Tensor:
    real = torch.ones_like(sequence, dtype=torch.bool)
    real[:, :source_length] = sequence[:, :source_length] != PAD
    return real  # (B, L)


def decoder_mask(sequence: torch.Tensor, source_length: int) -> torch.Tensor:
    """The reference: (B, L) tokens, the first S of them the padded input -> (B, L, L) bool.

    Query i may read key j when j <= i and j is not the input's padding, as in
    [`DecoderOnly.run`][attnprimer.transformer.DecoderOnly.run].
    """
    length = sequence.shape[1]
    return _causal(length) & _real(sequence, source_length)[:, None, :]


DECODER_MASK = Exercise(
    name="decoder_mask",
    signature="decoder_mask(sequence, source_length) -> (B, L, L), bool, True = may attend",
    reference=decoder_mask,
    cases=_mask_cases,
    outputs=(("mask", "(B, L, L)"),),
    mistakes=(
        Mistake("each step sees one token ahead: query i may read key i + 1, the very token it "
                "is trained to predict (under teacher forcing it is right there in the "
                "sequence). Keys 0..i only: torch.tril with diagonal 0.",
                lambda sequence, source_length: (
                    _causal(sequence.shape[1], 1) & _real(sequence, source_length)[:, None, :])),
        Mistake("the mask is upside down: row i is query i and column j key j, and query i "
                "reads keys 0..i, on and below the diagonal (torch.tril), not above it.",
                lambda sequence, source_length: (
                    _causal(sequence.shape[1]).T & _real(sequence, source_length)[:, None, :])),
        Mistake("the diagonal is False, but every step may read itself (the first one has "
                "nothing else to read).",
                lambda sequence, source_length: (
                    _causal(sequence.shape[1], -1) & _real(sequence, source_length)[:, None, :])),
        Mistake("the input's padding is visible: it is causal, but padded keys (token 0 among "
                "the first source_length tokens) must be False too.",
                lambda sequence, source_length: _causal(sequence.shape[1]).expand(
                    sequence.shape[0], -1, -1)),
        Mistake("every 0 is masked, the outputs' padding included: only the first "
                "source_length tokens are the input, and only a 0 among them is its padding.",
                lambda sequence, source_length: (
                    _causal(sequence.shape[1]) & (sequence != PAD)[:, None, :])),
        Mistake("the padding is masked as queries (rows) instead of keys (columns): index the "
                "(B, L) padding mask as [:, None, :] so that it broadcasts over the queries.",
                lambda sequence, source_length: (
                    _causal(sequence.shape[1]) & _real(sequence, source_length)[:, :, None])),
        Mistake("True marks the blocked keys, nn.MultiheadAttention's convention; attnprimer's "
                "masks say True = may attend.",
                lambda sequence, source_length: ~decoder_mask(sequence, source_length)),
    ),
)


EXERCISES = (ENCODER_BLOCK, DECODER_MASK)
