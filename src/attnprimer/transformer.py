"""The Transformer: the pieces of the earlier chapters assembled (Vaswani et al., 2017).

Taught in the chapter "The Transformer" (``docs/chapters/transformer.md``).

A Transformer block is attention followed by a small feed-forward network applied to each
position on its own, each of the two wrapped in a *residual connection* (the block adds what it
computes to what it was given) and a *layer norm*. Where the norm sits is a choice:

* **post-LN**, the original paper's: ``x = norm(x + f(x))``;
* **pre-LN** (Xiong et al., 2020; GPT-2): ``x = x + f(norm(x))``, which leaves the residual
  path itself untouched, with one more norm after the last block.

The chapter's ablation, blocks without residual connections, is a variant of these blocks
beside the task that trains it ([`attnprimer.models.no_residual`][attnprimer.models.no_residual]);
the models here build their stacks from the class attributes ``encoder_block`` and
``decoder_block``, which the variant's models replace.

Built here from [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention],
[`attnprimer.masks`][attnprimer.masks] and
[`SinusoidalEncoding`][attnprimer.positional.SinusoidalEncoding], read top to bottom:

* [`FeedForward`][attnprimer.transformer.FeedForward], the position-wise network;
* [`EncoderBlock`][attnprimer.transformer.EncoderBlock]: self-attention, feed-forward;
* [`DecoderBlock`][attnprimer.transformer.DecoderBlock]: *causal* self-attention over the
  output so far, cross-attention to the encoder's output, feed-forward;
* [`Transformer`][attnprimer.transformer.Transformer], the encoder-decoder, and
  [`DecoderOnly`][attnprimer.transformer.DecoderOnly], one causal stack that reads the input,
  a separator, and writes the output in one sequence.

Both models answer like the RNN encoder-decoders of [`attnprimer.rnn`][attnprimer.rnn]:
teacher-forced with targets, every step in one pass; greedy without, one step at a time. Every
head's weights come back by name, ``"encoder self 1.2"`` for layer 1, head 2 (also
``"decoder self"`` and ``"cross"``), each (B, L, S).

Shape legend: B batch, S input length, T output steps, L query length, D model dim, H heads,
F feed-forward size, C output classes. Token 0 is padding.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.masks import causal_mask, combine_masks
from attnprimer.models import ModelOutput
from attnprimer.multihead import MultiHeadAttention
from attnprimer.positional import SinusoidalEncoding

__all__ = ["DecoderBlock", "DecoderOnly", "EncoderBlock", "FeedForward", "Transformer",
           "by_head"]

PAD = 0


# --8<-- [start:feed_forward]
class FeedForward(nn.Module):
    """The same two-layer network at every position: (B, L, D) -> (B, L, F) -> (B, L, D)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.expand = nn.Linear(dim, hidden)  # D -> F
        self.contract = nn.Linear(hidden, dim)  # F -> D

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.contract(torch.relu(self.expand(x)))  # (B, L, D)
# --8<-- [end:feed_forward]


# --8<-- [start:encoder_block]
class EncoderBlock(nn.Module):
    """Self-attention then feed-forward, each with a residual connection and a layer norm.

    Args:
        dim: D.
        heads: H.
        hidden: F, the feed-forward size.
        pre_norm: normalise each sublayer's input (pre-LN) instead of the sum (post-LN).

    Examples:
        >>> block = EncoderBlock(dim=8, heads=2, hidden=16)
        >>> x, weights = block(torch.randn(3, 5, 8))
        >>> x.shape, weights.shape                   # (B, L, D), (B, H, L, L)
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    """

    def __init__(self, dim: int, heads: int, hidden: int, *,
                 pre_norm: bool = False) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.attention = MultiHeadAttention(dim, heads)
        self.norm_attention = nn.LayerNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)
        self.norm_feed_forward = nn.LayerNorm(dim)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D), mask (B, L, L) or (L, L) -> (B, L, D), weights (B, H, L, L)."""
        if self.pre_norm:  # x + f(norm(x)): the residual path stays as it is
            context, weights = self.attention(self.norm_attention(x),
                                              mask=mask)
            x = x + context
            x = x + self.feed_forward(self.norm_feed_forward(x))
        else:  # norm(x + f(x)): the original Transformer
            context, weights = self.attention(x, mask=mask)
            x = self.norm_attention(x + context)
            x = self.norm_feed_forward(x + self.feed_forward(x))
        return x, weights
# --8<-- [end:encoder_block]


# --8<-- [start:decoder_block]
class DecoderBlock(nn.Module):
    """Causal self-attention, cross-attention to the encoder, then feed-forward.

    Each of the three sublayers has its residual connection and layer norm, placed as in
    [`EncoderBlock`][attnprimer.transformer.EncoderBlock]. The encoder's output (the memory)
    is not normalised here: a pre-LN encoder ends with its own norm.

    Examples:
        >>> block = DecoderBlock(dim=8, heads=2, hidden=16)
        >>> y, self_weights, cross_weights = block(torch.randn(3, 4, 8), torch.randn(3, 6, 8))
        >>> y.shape, self_weights.shape, cross_weights.shape
        (torch.Size([3, 4, 8]), torch.Size([3, 2, 4, 4]), torch.Size([3, 2, 4, 6]))
    """

    def __init__(self, dim: int, heads: int, hidden: int, *,
                 pre_norm: bool = False) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.self_attention = MultiHeadAttention(dim, heads)
        self.norm_self = nn.LayerNorm(dim)
        self.cross_attention = MultiHeadAttention(dim, heads)
        self.norm_cross = nn.LayerNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)
        self.norm_feed_forward = nn.LayerNorm(dim)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """y (B, T, D), memory (B, S, D), masks (.., T, T) and (.., T, S).

        Returns y (B, T, D) and the weights (B, H, T, T) and (B, H, T, S).
        """
        if self.pre_norm:
            context, self_weights = self.self_attention(self.norm_self(y),
                                                        mask=self_mask)
            y = y + context
            context, cross_weights = self.cross_attention(
                self.norm_cross(y), memory, mask=memory_mask)
            y = y + context
            y = y + self.feed_forward(self.norm_feed_forward(y))
        else:
            context, self_weights = self.self_attention(y, mask=self_mask)
            y = self.norm_self(y + context)
            context, cross_weights = self.cross_attention(
                y, memory, mask=memory_mask)
            y = self.norm_cross(y + context)
            y = self.norm_feed_forward(y + self.feed_forward(y))
        return y, self_weights, cross_weights
# --8<-- [end:decoder_block]


def by_head(name: str, weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """One entry per head: weights (B, H, L, S) -> ``{"name.1": (B, L, S), ...}``.

    Examples:
        >>> sorted(by_head("cross 1", torch.zeros(2, 3, 4, 5)))
        ['cross 1.1', 'cross 1.2', 'cross 1.3']
    """
    return {f"{name}.{head + 1}": weights[:, head] for head in range(weights.shape[1])}


def _final_norm(dim: int, pre_norm: bool) -> nn.Module:
    """Pre-LN blocks leave their sum unnormalised, so the stack ends with a norm."""
    return nn.LayerNorm(dim) if pre_norm else nn.Identity()


# --8<-- [start:transformer]
class Transformer(nn.Module):
    """The encoder-decoder Transformer: teacher-forced with ``targets``, greedy without.

    Args:
        num_tokens: input tokens, padding (0) included.
        num_outputs: C, output tokens, padding included; the decoder also embeds a start token.
        dim: D.
        heads: H.
        layers: blocks in the encoder and in the decoder.
        hidden: F, the feed-forward size (default 4 D).
        pre_norm: pre-LN blocks (and a norm after each stack) instead of post-LN.

    Examples:
        >>> model = Transformer(num_tokens=6, num_outputs=8, dim=16, heads=2, layers=1)
        >>> output = model(torch.tensor([[1, 2, 3], [4, 5, 0]]))     # greedy: S + 1 steps
        >>> output.logits.shape, output.attention["cross 1.2"].shape
        (torch.Size([2, 4, 8]), torch.Size([2, 4, 3]))
    """

    encoder_block = EncoderBlock
    decoder_block = DecoderBlock

    def __init__(self, num_tokens: int, num_outputs: int, dim: int, heads: int,
                 layers: int, hidden: int | None = None, *,
                 pre_norm: bool = False, max_positions: int = 64) -> None:
        super().__init__()
        hidden = hidden or 4 * dim
        self.start = num_outputs  # the start token: one embedding more
        self.source_embed = nn.Embedding(num_tokens, dim, padding_idx=PAD)
        self.target_embed = nn.Embedding(num_outputs + 1, dim)
        self.position = SinusoidalEncoding(dim, max_positions)
        self.encoder = nn.ModuleList(
            self.encoder_block(dim, heads, hidden, pre_norm=pre_norm)
            for _ in range(layers))
        self.decoder = nn.ModuleList(
            self.decoder_block(dim, heads, hidden, pre_norm=pre_norm)
            for _ in range(layers))
        self.encoder_norm = _final_norm(dim, pre_norm)
        self.decoder_norm = _final_norm(dim, pre_norm)
        self.out = nn.Linear(dim, num_outputs)

    def encode(self, inputs: torch.Tensor):
        """inputs (B, S) -> memory (B, S, D), its mask (B, 1, S), weights."""
        source_mask = (inputs != PAD)[:, None, :]  # (B, 1, S): no padding
        x = self.position(self.source_embed(inputs))  # (B, S, D)
        attention = {}
        for layer, block in enumerate(self.encoder, start=1):
            x, weights = block(x, source_mask)  # (B, S, D), (B, H, S, S)
            attention |= by_head(f"encoder self {layer}", weights)
        return self.encoder_norm(x), source_mask, attention

    def decode(self, memory, source_mask, tokens: torch.Tensor):
        """tokens (B, T), the start token then the outputs so far -> logits (B, T, C)."""
        y = self.position(self.target_embed(tokens))  # (B, T, D)
        self_mask = causal_mask(tokens.shape[1])  # (T, T): no peeking ahead
        attention = {}
        for layer, block in enumerate(self.decoder, start=1):
            # (B, T, D), (B, H, T, T), (B, H, T, S)
            y, self_weights, cross_weights = block(y, memory, self_mask,
                                                   source_mask)
            attention |= by_head(f"decoder self {layer}", self_weights)
            attention |= by_head(f"cross {layer}", cross_weights)
        return self.out(self.decoder_norm(y)), attention  # (B, T, C)

    def forward(self, inputs: torch.Tensor,
                targets: torch.Tensor | None = None) -> ModelOutput:
        """inputs (B, S) -> logits (B, T, C); T = S + 1 when greedy."""
        memory, source_mask, attention = self.encode(inputs)
        start = inputs.new_full((inputs.shape[0], 1), self.start)  # (B, 1)
        if targets is not None:  # teacher forcing: every step in one pass
            tokens = torch.cat([start, targets[:, :-1]], dim=1)  # (B, T)
            logits, decoded = self.decode(memory, source_mask, tokens)
        else:  # greedy: one step at a time, fed its own best guesses
            tokens = start
            for _ in range(inputs.shape[1] + 1):
                logits, decoded = self.decode(memory, source_mask, tokens)
                best = logits[:, -1:].argmax(dim=-1)  # (B, 1)
                tokens = torch.cat([tokens, best], dim=1)  # (B, t + 1)
        return ModelOutput(logits, attention | decoded)
# --8<-- [end:transformer]


# --8<-- [start:decoder_only]
class DecoderOnly(nn.Module):
    """One causal stack over ``input, separator, output``: a language model of the task.

    The input keeps its padding, masked as keys and skipped by the positions: the separator
    of an input of n letters sits at position n, the output step t at position n + 1 + t,
    and the padding changes nothing. In the tensors, the separator is at index S and output
    step t is predicted at index S + t. The blocks are encoder blocks under a causal mask:
    without an encoder there is nothing to cross-attend to.

    Args:
        num_outputs: C, output tokens (padding, the input's letters, the end...); the
            separator is token C.
        dim: D.
        heads: H.
        layers: blocks in the stack.
        hidden: F, the feed-forward size (default 4 D).
        pre_norm: pre-LN blocks (and a norm after the stack) instead of post-LN.

    Examples:
        >>> model = DecoderOnly(num_outputs=8, dim=16, heads=2, layers=1)
        >>> output = model(torch.tensor([[1, 2, 3], [4, 5, 0]]))     # greedy: S + 1 steps
        >>> output.logits.shape, output.attention["decoder self 1.1"].shape
        (torch.Size([2, 4, 8]), torch.Size([2, 7, 7]))
    """

    block = EncoderBlock

    def __init__(self, num_outputs: int, dim: int, heads: int, layers: int,
                 hidden: int | None = None, *, pre_norm: bool = False,
                 max_positions: int = 64) -> None:
        super().__init__()
        hidden = hidden or 4 * dim
        self.separator = num_outputs
        self.embed = nn.Embedding(num_outputs + 1, dim)
        self.position = SinusoidalEncoding(dim, max_positions)
        self.blocks = nn.ModuleList(
            self.block(dim, heads, hidden, pre_norm=pre_norm)
            for _ in range(layers))
        self.norm = _final_norm(dim, pre_norm)
        self.out = nn.Linear(dim, num_outputs)

    def run(self, sequence: torch.Tensor, source_length: int):
        """sequence (B, L), its first S tokens the input -> logits (B, L, C), weights."""
        length = sequence.shape[1]
        # Keys: the input's padding is masked, the rest is real: (B, L)
        real = torch.ones_like(sequence, dtype=torch.bool)
        real[:, :source_length] = sequence[:, :source_length] != PAD
        mask = combine_masks(causal_mask(length), real[:, None, :])  # (B, L, L)
        # Positions count real tokens only: the separator of an input of n
        # letters sits at position n, however much padding follows them.
        positions = (real.cumsum(dim=1) - 1).clamp(min=0)  # (B, L)
        x = self.embed(sequence) + self.position.table[positions]  # (B, L, D)
        attention = {}
        for layer, block in enumerate(self.blocks, start=1):
            x, weights = block(x, mask)  # (B, L, D), (B, H, L, L)
            attention |= by_head(f"decoder self {layer}", weights)
        return self.out(self.norm(x)), attention  # (B, L, C)

    def forward(self, inputs: torch.Tensor,
                targets: torch.Tensor | None = None) -> ModelOutput:
        """inputs (B, S) -> logits (B, T, C) of the output steps only; T = S + 1 when greedy."""
        source_length = inputs.shape[1]
        separator = inputs.new_full((inputs.shape[0], 1), self.separator)
        sequence = torch.cat([inputs, separator], dim=1)  # (B, S + 1)
        if targets is not None:  # teacher forcing: (B, S + T)
            sequence = torch.cat([sequence, targets[:, :-1]], dim=1)
            logits, attention = self.run(sequence, source_length)
        else:  # greedy
            for _ in range(source_length + 1):
                logits, attention = self.run(sequence, source_length)
                best = logits[:, -1:].argmax(dim=-1)  # (B, 1)
                sequence = torch.cat([sequence, best], dim=1)
        # From the separator on, position S + t predicts output t: (B, T, C)
        return ModelOutput(logits[:, source_length:], attention)
# --8<-- [end:decoder_only]
