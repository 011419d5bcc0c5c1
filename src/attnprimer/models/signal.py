"""The signal model: embeddings, a positional encoding, one encoder layer, one query.

Taught in the chapter "Positional encoding" (``docs/chapters/positional-encoding.md``).

[`SignalModel`][attnprimer.models.signal.SignalModel] counts how often the first letter
occurs in the rest, which needs to know which letter came first: the positional-encoding
chapter's model. [`EncoderLayer`][attnprimer.models.signal.EncoderLayer] is its
self-attention and feed-forward layer.

Shape legend: B batch, S input length, D hidden size, C classes.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.models import ModelOutput
from attnprimer.positional import LearnedEncoding, SinusoidalEncoding, apply_rotary

__all__ = ["EncoderLayer", "SignalModel"]


# --8<-- [start:encoder_layer]
class EncoderLayer(nn.Module):
    """Self-attention over the input, then a feed-forward network; residuals and layer norms.

    By default the self-attention has no projections (the original primer's
    signal model): queries, keys and values are the inputs. With
    ``projections=True`` queries and keys get learned maps W_q, W_k. With
    ``rotary=True`` they always do, and are then rotated by their positions
    ([`apply_rotary`][attnprimer.positional.apply_rotary]): without the maps, a
    query and a key of the same letter would be one vector, and their score
    could not tell "left of me" from "right of me".

    Examples:
        >>> layer = EncoderLayer(hidden=8)
        >>> output, weights = layer(torch.randn(2, 5, 8))
        >>> output.shape, weights.shape                    # (B, L, D), (B, L, L)
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 5]))
    """

    def __init__(self, hidden: int, *, rotary: bool = False,
                 projections: bool = False) -> None:
        super().__init__()
        self.rotary, self.projections = rotary, projections or rotary
        if self.projections:  # W_q and W_k
            self.query, self.key = (nn.Linear(hidden, hidden),
                                    nn.Linear(hidden, hidden))
        self.norm_attention = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(
            nn.Linear(hidden, 2 * hidden), nn.ReLU(),
            nn.Linear(2 * hidden, hidden)
        )
        self.norm_feed_forward = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D) -> (B, L, D) and the self-attention weights (B, L, L)."""
        query, key = x, x
        if self.projections:
            query, key = self.query(x), self.key(x)  # W_q x, W_k x: (B, L, D)
        if self.rotary:  # rotated by their positions
            query, key = apply_rotary(query), apply_rotary(key)
        # The values are the inputs: (B, L, D), (B, L, L)
        context, weights = scaled_dot_product_attention(query, key, x)
        x = self.norm_attention(x + context)
        x = self.norm_feed_forward(x + self.feed_forward(x))
        return x, weights
# --8<-- [end:encoder_layer]


# --8<-- [start:signal_model]
class SignalModel(nn.Module):
    """Embed the tokens, encode positions, one encoder layer, then one learned query reads it.

    Args:
        num_tokens: number of distinct input tokens (letters + blank).
        num_classes: C, the counts 0..C-1.
        hidden: D.
        pos_enc: ``"none"``, ``"learned"`` or ``"sinusoidal"`` (added to the
            embeddings), or ``"rotary"`` (applied inside the encoder's self-attention).
        max_positions: the longest sequence the encoding has positions for.
        projections: give the self-attention learned W_q, W_k (rotary always has them).

    Examples:
        >>> model = SignalModel(num_tokens=4, num_classes=11, hidden=16, pos_enc="learned")
        >>> output = model(torch.tensor([[2, 2, 1, 2, 3]]))           # "BBABC"
        >>> output.logits.shape, sorted(output.attention)
        (torch.Size([1, 1, 11]), ['encoder self', 'encoder-decoder'])
    """

    def __init__(self, num_tokens: int, num_classes: int, hidden: int,
                 pos_enc: str = "none", max_positions: int = 64,
                 projections: bool = False) -> None:
        super().__init__()
        encodings = {"none": None, "rotary": None,
                     "learned": LearnedEncoding(hidden, max_positions),
                     "sinusoidal": SinusoidalEncoding(hidden, max_positions)}
        if pos_enc not in encodings:
            raise ValueError(f"pos_enc must be one of {', '.join(encodings)}, got {pos_enc!r}")
        self.num_tokens = num_tokens
        self.pos_enc = pos_enc
        self.embed = nn.Linear(num_tokens, hidden)  # one-hot token -> (D,)
        self.position = encodings[pos_enc]
        self.encoder = EncoderLayer(hidden, rotary=pos_enc == "rotary",
                                    projections=projections)
        self.query = nn.Parameter(torch.zeros(1, hidden))  # one output step
        self.norm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, tokens: torch.Tensor) -> ModelOutput:
        """tokens (B, S) -> logits (B, 1, C); weights ``encoder self`` (B, S, S),
        ``encoder-decoder`` (B, 1, S)."""
        # (B, S) -> (B, S, D)
        x = self.embed(F.one_hot(tokens, self.num_tokens).float())
        if self.position is not None:
            x = self.position(x)  # + the encoding of each position
        encoded, self_weights = self.encoder(x)  # (B, S, D), (B, S, S)
        # The one learned query: (1, D) -> (B, 1, D)
        query = self.query.expand(tokens.shape[0], -1, -1)
        context, weights = scaled_dot_product_attention(
            query, encoded, encoded)  # (B, 1, D), (B, 1, S)
        logits = self.classifier(self.norm(context + query))  # (B, 1, C)
        return ModelOutput(logits, {"encoder self": self_weights,
                                    "encoder-decoder": weights})
# --8<-- [end:signal_model]
