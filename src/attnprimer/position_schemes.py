"""Five ways for a decoder-only Transformer to know where its tokens are.

Taught in the chapter "Train short, test long" (``docs/chapters/length-generalisation.md``).

The length-generalisation chapter trains one model,
[`SchemeDecoder`][attnprimer.position_schemes.SchemeDecoder],
five times, changing only how position reaches attention (Kazemnejad et al., 2023, compared the
same five families):

* ``"none"`` (NoPE): nothing. A causal stack still is not blind to order: with a start token,
  a first-layer head that scores every key alike gives the token at position i the start
  token's value with weight 1 / (i + 1), a number that says where it is
  ([`nope_position_signal`][attnprimer.position_schemes.nope_position_signal]);
* ``"sinusoidal"``: the absolute sinusoids added to the embeddings (Vaswani et al., 2017);
* ``"relative"``: a learned score bias per head and clipped offset (after T5, Raffel et al.,
  2020, but with Shaw et al.'s clipping where T5 has log-spaced buckets;
  [`RelativePositionBias`][attnprimer.positional.RelativePositionBias]);
* ``"alibi"``: ALiBi's fixed linear penalty on distance (Press et al., 2022);
* ``"rotary"``: queries and keys rotated by their position (Su et al., 2021).

The blocks are the Transformer chapter's pre-LN
[`EncoderBlock`][attnprimer.transformer.EncoderBlock]
under a causal mask, with the attention swapped for
[`SchemeAttention`][attnprimer.position_schemes.SchemeAttention]: the same projections, and
the scheme applied to the scores.

A sequence is ``start, input, separator, output``, padded on the left, so that the real
tokens of every row sit side by side and the offset between two of them is the offset between
their columns: the relative schemes need no per-row tables. Padding is masked as a key and
skipped by the absolute positions.

Shape legend: B batch, S input length, T output steps (S + 1), L sequence length, D model
dim, H heads, Dh = D / H, C output classes.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnprimer.attention import attend
from attnprimer.dot_product import dot_scores
from attnprimer.masks import causal_mask, combine_masks
from attnprimer.models import ModelOutput
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads
from attnprimer.positional import RelativePositionBias, SinusoidalEncoding, alibi_bias, apply_rotary
from attnprimer.transformer import EncoderBlock, by_head

__all__ = ["POSITION_SCHEMES", "SchemeAttention", "SchemeDecoder", "nope_position_signal"]

POSITION_SCHEMES = ("none", "sinusoidal", "relative", "alibi", "rotary")
"""The position schemes, by name: NoPE, absolute sinusoids, a T5-style learned bias, ALiBi,
rotary."""

PAD = 0


# --8<-- [start:attention]
class SchemeAttention(MultiHeadAttention):
    """Multi-head self-attention whose scores see positions through ``scheme``.

    Args:
        embed_dim: D.
        num_heads: H.
        scheme: one of ``POSITION_SCHEMES``; ``"none"`` and ``"sinusoidal"`` change nothing
            here (the sinusoids are added to the embeddings).
        max_offset: the largest offset the ``"relative"`` bias tells apart.

    Examples:
        >>> attention = SchemeAttention(8, 2, "alibi")
        >>> output, weights = attention(torch.randn(3, 5, 8), mask=causal_mask(5))
        >>> output.shape, weights.shape, weights[0, 0, 0, 1].item()
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]), 0.0)
    """

    def __init__(self, embed_dim: int, num_heads: int, scheme: str = "none", *,
                 max_offset: int = 10) -> None:
        super().__init__(embed_dim, num_heads)
        if scheme not in POSITION_SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(POSITION_SCHEMES)}, "
                             f"got {scheme!r}")
        self.scheme = scheme
        if scheme == "relative":
            self.relative = RelativePositionBias(num_heads, max_offset)

    def forward(self, query: torch.Tensor, key=None, value=None,
                mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """query (B, L, D), mask (B, L, L) or (L, L) -> (B, L, D), weights (B, H, L, L)."""
        heads, length = self.num_heads, query.shape[1]
        q = split_heads(self.query_proj(query), heads)  # (B, H, L, Dh)
        k = split_heads(self.key_proj(query), heads)  # (B, H, L, Dh)
        v = split_heads(self.value_proj(query), heads)  # (B, H, L, Dh)
        if self.scheme == "rotary":  # turn each query and key by its position
            q, k = apply_rotary(q), apply_rotary(k)
        scores = dot_scores(q, k) / math.sqrt(q.shape[-1])  # (B, H, L, L)
        if self.scheme == "alibi":  # a fixed penalty on distance, per head
            scores = scores + alibi_bias(heads, length)  # + (H, L, L)
        if self.scheme == "relative":  # a learned number per head and offset
            scores = scores + self.relative(length)  # + (H, L, L)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # one mask for every head: (B, 1, L, L)
        # (B, H, L, Dh) and (B, H, L, L)
        context, weights = attend(scores, v, mask)
        return self.out_proj(merge_heads(context)), weights
# --8<-- [end:attention]


# --8<-- [start:decoder]
class SchemeDecoder(nn.Module):
    """A decoder-only Transformer over ``start, input, separator, output`` with a position scheme.

    Args:
        num_outputs: C, output tokens (padding, the letters, the end); the start token is C,
            the separator C + 1.
        dim: D.
        heads: H.
        layers: pre-LN blocks in the stack.
        scheme: one of ``POSITION_SCHEMES``.
        max_offset: the ``"relative"`` bias's largest distinct offset.
        max_positions: the ``"sinusoidal"`` table's length (longer sequences are an error).

    Examples:
        >>> model = SchemeDecoder(num_outputs=6, dim=16, heads=2, layers=2, scheme="rotary")
        >>> output = model(torch.tensor([[1, 2, 3], [0, 4, 4]]))   # greedy: S + 1 steps
        >>> output.logits.shape, output.attention["decoder self 2.1"].shape
        (torch.Size([2, 4, 6]), torch.Size([2, 8, 8]))
    """

    def __init__(self, num_outputs: int, dim: int, heads: int, layers: int,
                 scheme: str = "none", *, max_offset: int = 10,
                 max_positions: int = 128) -> None:
        super().__init__()
        self.start, self.separator = num_outputs, num_outputs + 1
        self.embed = nn.Embedding(num_outputs + 2, dim)
        self.position = (SinusoidalEncoding(dim, max_positions)
                         if scheme == "sinusoidal" else None)
        self.blocks = nn.ModuleList()
        for _ in range(layers):  # the Transformer chapter's block, ...
            block = EncoderBlock(dim, heads, 4 * dim, pre_norm=True)
            block.attention = SchemeAttention(  # ... this chapter's attention
                dim, heads, scheme, max_offset=max_offset)
            self.blocks.append(block)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, num_outputs)

    def run(self, sequence: torch.Tensor
            ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """sequence (B, L), padded on the left -> logits (B, L, C), weights by head."""
        real = sequence != PAD  # (B, L)
        # Causal, and padding is never a key: (B, L, L)
        mask = combine_masks(causal_mask(sequence.shape[1]), real[:, None, :])
        x = self.embed(sequence)  # (B, L, D)
        if self.position is not None:  # the start token is position 0
            positions = (real.cumsum(dim=1) - 1).clamp(min=0)  # (B, L)
            x = x + self.position.table[positions]
        attention = {}
        for layer, block in enumerate(self.blocks, start=1):
            x, weights = block(x, mask)  # (B, L, D), (B, H, L, L)
            attention |= by_head(f"decoder self {layer}", weights)
        return self.out(self.norm(x)), attention

    def forward(self, inputs: torch.Tensor,
                targets: torch.Tensor | None = None) -> ModelOutput:
        """inputs (B, S), padded on the left -> logits (B, T, C); T = S + 1 when greedy."""
        batch, source_length = inputs.shape
        # pad, input, separator; then the start token on the last pad before
        # the letters
        sequence = torch.cat(
            [inputs.new_zeros(batch, 1), inputs,
             inputs.new_full((batch, 1), self.separator)], dim=1)
        pads = (inputs == PAD).sum(dim=1, keepdim=True)  # (B, 1)
        sequence = sequence.scatter(1, pads, self.start)  # (B, S + 2)
        if targets is not None:  # teacher forcing: (B, S + 2 + T - 1)
            logits, attention = self.run(
                torch.cat([sequence, targets[:, :-1]], dim=1))
        else:  # greedy
            for _ in range(source_length + 1):
                logits, attention = self.run(sequence)
                best = logits[:, -1:].argmax(dim=-1)  # (B, 1)
                sequence = torch.cat([sequence, best], dim=1)
        # From the separator on, each position predicts the next output:
        # (B, T, C)
        return ModelOutput(logits[:, source_length + 1:], attention)
# --8<-- [end:decoder]


# --8<-- [start:nope]
def nope_position_signal(length: int) -> torch.Tensor:
    """What a NoPE model's first layer can know of position: (L,), ``1 / (i + 1)``.

    A head that scores every key alike averages the values of the keys it may see. Under a
    causal mask, the token at position i sees i + 1 keys, the start token among them, so the
    start token's share of its average is 1 / (i + 1): a different number at every position,
    computed from nothing but the mask. Without the mask every token sees all L keys and gets
    the same average: the model is blind to order.

    Examples:
        >>> nope_position_signal(4)
        tensor([1.0000, 0.5000, 0.3333, 0.2500])
    """
    scores = torch.zeros(length, length)  # every key scores alike
    start_value = torch.zeros(length, 1)
    start_value[0] = 1.0  # the start token's value: 1; every other token's: 0
    context, _ = attend(scores, start_value, causal_mask(length))  # (L, 1)
    return context[:, 0]
# --8<-- [end:nope]
