"""The difference model: the counting model, plus self-attention over its output steps.

Taught in the chapter "Self-attention" (``docs/chapters/self-attention.md``).

[`DifferenceModel`][attnprimer.models.difference.DifferenceModel] has one more output step
than the counting model and, optionally, a self-attention layer over the output steps
([`OutputSelfAttention`][attnprimer.models.difference.OutputSelfAttention]), so that a step
can read what the other steps found.

Shape legend: B batch, S input length, T output steps, D hidden size, C classes.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.models import ModelOutput
from attnprimer.models.counting import CountingModel

__all__ = ["DifferenceModel", "OutputSelfAttention"]


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
        >>> from torch.nn import functional as F
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
        """hidden (B, T, D) -> new hidden (B, T, D) and weights (B, T, T); mask: True = may
        attend."""
        # (B, T, D) each; the hidden states themselves without projections
        query, key, value = (self.query(hidden), self.key(hidden),
                             self.value(hidden))
        # Every step reads every step: (B, T, D), (B, T, T)
        context, weights = scaled_dot_product_attention(
            query, key, value, mask)
        # A residual, then layer norm:
        return self.norm(hidden + context), weights
# --8<-- [end:output_self_attention]


# --8<-- [start:difference_model]
class DifferenceModel(CountingModel):
    """The counting model with an extra output step and optional self-attention over the steps.

    Without self-attention every output step, including the difference step,
    reads only the input. With it, each step's reading of the input passes
    through [`OutputSelfAttention`][attnprimer.models.difference.OutputSelfAttention] before
    classification.

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
            OutputSelfAttention(hidden, projections=projections)
            if self_attention else None
        )

    def forward(
        self, tokens: torch.Tensor, self_mask: torch.Tensor | None = None
    ) -> ModelOutput:
        """tokens (B, S) -> logits (B, T, C); weights ``encoder-decoder`` (B, T, S), ``self``
        (B, T, T).

        ``self_mask`` (T, T) or (B, T, T), True = may attend, restricts which
        output steps each step may read: the ablations on the site use it.
        """
        hidden, weights = self.read(tokens)  # (B, T, D), (B, T, S)
        attention = {"encoder-decoder": weights}
        if self.self_attention is not None:
            # (B, T, D), (B, T, T)
            hidden, attention["self"] = self.self_attention(hidden, self_mask)
        elif self_mask is not None:
            raise ValueError("self_mask needs a model with self-attention")
        return ModelOutput(self.classifier(hidden), attention)
# --8<-- [end:difference_model]
