"""The toy tasks' models, assembled from the concept modules.

[`CountingModel`][attnprimer.models.CountingModel] is attention with nothing else around it: no
recurrence, no convolution, no position information. Each output step owns one
learned query vector; the input tokens become keys and values; the context a
query reads is classified into a count.

[`DifferenceModel`][attnprimer.models.DifferenceModel] is the same model with one more output
step and, optionally, a self-attention layer over the output steps
([`OutputSelfAttention`][attnprimer.models.OutputSelfAttention]), so that a step can read what the
other steps found.

Shape legend: B batch, S input length, T output steps (= number of queries),
D hidden size, C classes.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.positional import LearnedEncoding, SinusoidalEncoding, apply_rotary

__all__ = [
    "CountingModel",
    "DifferenceModel",
    "EncoderLayer",
    "ModelOutput",
    "OutputSelfAttention",
    "SignalModel",
]


class ModelOutput(NamedTuple):
    """What every task's model returns.

    Attributes:
        logits: (B, T, C) unnormalised scores over the C classes of each of the T output steps.
        attention: attention weights by name, e.g. ``{"encoder-decoder": (B, T, S)}``.
    """

    logits: torch.Tensor
    attention: dict[str, torch.Tensor]


# --8<-- [start:counting_model]
class CountingModel(nn.Module):
    """One learned query per output step attends over the embedded input tokens.

    Keys and values are the same vectors, a linear map of each token's one-hot
    code. The queries start at zero, so at initialisation every query attends
    uniformly; training moves each query towards the key of "its" letter. The
    context a query reads is added to the query (a residual), normalised, and
    classified into a count.

    Args:
        num_tokens: number of distinct input tokens (letters + blank).
        num_queries: T, the number of output steps.
        num_classes: C, the classes per output step (counts 0..max_len).
        hidden: D.

    Examples:
        >>> model = CountingModel(num_tokens=4, num_queries=3, num_classes=11, hidden=16)
        >>> output = model(torch.tensor([[1, 1, 0, 2, 3]]))  # "AA BC"
        >>> output.logits.shape, output.attention["encoder-decoder"].shape
        (torch.Size([1, 3, 11]), torch.Size([1, 3, 5]))
    """

    def __init__(self, num_tokens: int, num_queries: int, num_classes: int, hidden: int) -> None:
        super().__init__()
        self.num_tokens = num_tokens
        self.queries = nn.Parameter(torch.zeros(num_queries, hidden))  # (T, D)
        self.key_value = nn.Linear(num_tokens, hidden)  # one-hot token -> key = value
        self.norm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, tokens: torch.Tensor) -> ModelOutput:
        """tokens (B, S) -> logits (B, T, C) and weights ``{"encoder-decoder": (B, T, S)}``."""
        hidden, weights = self.read(tokens)  # (B, T, D), (B, T, S)
        logits = self.classifier(hidden)  # (B, T, D) -> (B, T, C)
        return ModelOutput(logits, {"encoder-decoder": weights})

    def read(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What each query reads: hidden states (B, T, D) and the weights (B, T, S) it used."""
        batch = tokens.shape[0]
        one_hot = F.one_hot(tokens, self.num_tokens).float()  # (B, S) -> (B, S, V+1)
        keys = self.key_value(one_hot)  # (B, S, V+1) -> (B, S, D); values = keys
        queries = self.queries.expand(batch, -1, -1)  # (T, D) -> (B, T, D)
        context, weights = scaled_dot_product_attention(queries, keys, keys)  # (B, T, D), (B, T, S)
        return self.norm(context + queries), weights  # residual, then layer norm: (B, T, D)
# --8<-- [end:counting_model]


# --8<-- [start:output_self_attention]
class OutputSelfAttention(nn.Module):
    """Self-attention over the output steps, then a residual and layer norm.

    Every output step's hidden state is compared with every other one's
    (itself included) and replaced by itself plus the weighted average it reads.

    With ``projections=False`` (the original primer's choice) queries, keys
    and values are the hidden states themselves. The score of a step with
    itself is then its squared length. The hidden states come out of a layer
    norm, which gives them all the same length while its gain is 1 and its
    bias 0 (as initialised), and for vectors of equal length the
    Cauchy-Schwarz inequality says no other step can score higher: the
    diagonal is built in, and only the layer norm's learned gain and bias can
    move a step's attention off itself. With ``projections=True`` learned
    maps W_q, W_k, W_v make the comparison itself trainable.

    Args:
        hidden: D.
        projections: learn W_q, W_k, W_v (each D x D, with bias).

    Examples:
        >>> layer = OutputSelfAttention(hidden=8)
        >>> x = F.layer_norm(torch.randn(2, 4, 8), (8,))  # B=2, T=4, D=8, all of equal length
        >>> output, weights = layer(x)
        >>> output.shape, weights.shape                   # (B, T, D), (B, T, T)
        (torch.Size([2, 4, 8]), torch.Size([2, 4, 4]))
        >>> bool((weights.argmax(-1) == torch.arange(4)).all())   # each step's top score: itself
        True
    """

    def __init__(self, hidden: int, *, projections: bool = False) -> None:
        super().__init__()
        self.projections = projections
        if projections:
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
        else:
            self.query = self.key = self.value = nn.Identity()
        self.norm = nn.LayerNorm(hidden)

    def forward(
        self, hidden: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """hidden (B, T, D) -> new hidden (B, T, D) and weights (B, T, T); mask: True = may attend."""
        query, key, value = self.query(hidden), self.key(hidden), self.value(hidden)  # (B, T, D) each
        context, weights = scaled_dot_product_attention(query, key, value, mask)  # (B, T, D), (B, T, T)
        return self.norm(hidden + context), weights  # residual, then layer norm
# --8<-- [end:output_self_attention]


# --8<-- [start:difference_model]
class DifferenceModel(CountingModel):
    """The counting model with an extra output step and optional self-attention over the steps.

    Without self-attention every output step, including the difference step,
    reads only the input. With it, each step's reading of the input passes
    through [`OutputSelfAttention`][attnprimer.models.OutputSelfAttention] before classification.

    Args:
        num_tokens: number of distinct input tokens (letters + blank).
        num_queries: T, the number of output steps (the letters and the difference).
        num_classes: C, the classes per output step.
        hidden: D.
        self_attention: add self-attention over the output steps.
        projections: give that self-attention learned W_q, W_k, W_v.

    Examples:
        >>> model = DifferenceModel(num_tokens=4, num_queries=4, num_classes=11, hidden=16,
        ...                         self_attention=True)
        >>> output = model(torch.tensor([[1, 1, 0, 2, 3]]))
        >>> sorted(output.attention), output.attention["self"].shape
        (['encoder-decoder', 'self'], torch.Size([1, 4, 4]))
    """

    def __init__(
        self,
        num_tokens: int,
        num_queries: int,
        num_classes: int,
        hidden: int,
        *,
        self_attention: bool = False,
        projections: bool = False,
    ) -> None:
        super().__init__(num_tokens, num_queries, num_classes, hidden)
        if projections and not self_attention:
            raise ValueError("projections only exist with self_attention=True")
        self.self_attention = (
            OutputSelfAttention(hidden, projections=projections) if self_attention else None
        )

    def forward(self, tokens: torch.Tensor, self_mask: torch.Tensor | None = None) -> ModelOutput:
        """tokens (B, S) -> logits (B, T, C); weights ``encoder-decoder`` (B, T, S), ``self`` (B, T, T).

        ``self_mask`` (T, T) or (B, T, T), True = may attend, restricts which
        output steps each step may read: the ablations on the site use it.
        """
        hidden, weights = self.read(tokens)  # (B, T, D), (B, T, S)
        attention = {"encoder-decoder": weights}
        if self.self_attention is not None:
            hidden, attention["self"] = self.self_attention(hidden, self_mask)  # (B, T, D), (B, T, T)
        elif self_mask is not None:
            raise ValueError("self_mask needs a model with self-attention")
        return ModelOutput(self.classifier(hidden), attention)
# --8<-- [end:difference_model]


# --8<-- [start:encoder_layer]
class EncoderLayer(nn.Module):
    """Self-attention over the input, then a feed-forward network; residuals and layer norms.

    With ``rotary=False`` the self-attention has no projections (the original
    primer's signal model): queries, keys and values are the inputs. With
    ``rotary=True`` queries and keys get learned maps W_q, W_k and are then
    rotated by their positions ([`apply_rotary`][attnprimer.positional.apply_rotary]):
    without the maps, a query and a key of the same letter would be one vector,
    and their score could not tell "left of me" from "right of me".

    Examples:
        >>> layer = EncoderLayer(hidden=8)
        >>> output, weights = layer(torch.randn(2, 5, 8))
        >>> output.shape, weights.shape                    # (B, L, D), (B, L, L)
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 5]))
    """

    def __init__(self, hidden: int, *, rotary: bool = False) -> None:
        super().__init__()
        self.rotary = rotary
        if rotary:
            self.query, self.key = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.norm_attention = nn.LayerNorm(hidden)
        self.feed_forward = nn.Sequential(
            nn.Linear(hidden, 2 * hidden), nn.ReLU(), nn.Linear(2 * hidden, hidden)
        )
        self.norm_feed_forward = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D) -> (B, L, D) and the self-attention weights (B, L, L)."""
        query, key = x, x
        if self.rotary:
            query = apply_rotary(self.query(x))  # (B, L, D), rotated by position
            key = apply_rotary(self.key(x))
        context, weights = scaled_dot_product_attention(query, key, x)  # (B, L, D), (B, L, L)
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

    Examples:
        >>> model = SignalModel(num_tokens=4, num_classes=11, hidden=16, pos_enc="learned")
        >>> output = model(torch.tensor([[2, 2, 1, 2, 3]]))           # "BBABC"
        >>> output.logits.shape, sorted(output.attention)
        (torch.Size([1, 1, 11]), ['encoder self', 'encoder-decoder'])
    """

    def __init__(self, num_tokens: int, num_classes: int, hidden: int, pos_enc: str = "none",
                 max_positions: int = 64) -> None:
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
        self.encoder = EncoderLayer(hidden, rotary=pos_enc == "rotary")
        self.query = nn.Parameter(torch.zeros(1, hidden))  # one output step
        self.norm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, tokens: torch.Tensor) -> ModelOutput:
        """tokens (B, S) -> logits (B, 1, C); weights ``encoder self`` (B, S, S), ``encoder-decoder`` (B, 1, S)."""
        x = self.embed(F.one_hot(tokens, self.num_tokens).float())  # (B, S, D)
        if self.position is not None:
            x = self.position(x)  # + the encoding of each position
        encoded, self_weights = self.encoder(x)  # (B, S, D), (B, S, S)
        query = self.query.expand(tokens.shape[0], -1, -1)  # (1, D) -> (B, 1, D)
        context, weights = scaled_dot_product_attention(query, encoded, encoded)  # (B, 1, D)
        logits = self.classifier(self.norm(context + query))  # (B, 1, C)
        return ModelOutput(logits, {"encoder self": self_weights, "encoder-decoder": weights})
# --8<-- [end:signal_model]
