"""The counting model: attention with nothing else around it.

Taught in the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

[`CountingModel`][attnprimer.models.counting.CountingModel] has no recurrence, no convolution
and no position information. Each output step owns one learned query vector; the input
tokens become keys and values; the context a query reads is classified into a count.

Shape legend: B batch, S input length, T output steps (= number of queries),
D hidden size, C classes.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.models import ModelOutput

__all__ = ["CountingModel", "StartTokenCountingModel"]


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

    def __init__(self, num_tokens: int, num_queries: int, num_classes: int,
                 hidden: int) -> None:
        super().__init__()
        self.num_tokens = num_tokens
        self.queries = nn.Parameter(torch.zeros(num_queries, hidden))  # (T, D)
        # One-hot token -> its key, which is also its value:
        self.key_value = nn.Linear(num_tokens, hidden)
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
        # (B, S) -> (B, S, V+1)
        one_hot = F.one_hot(tokens, self.num_tokens).float()
        keys = self.key_value(one_hot)  # (B, S, V+1) -> (B, S, D)
        queries = self.queries.expand(batch, -1, -1)  # (T, D) -> (B, T, D)
        # The values are the keys: (B, T, D), (B, T, S)
        context, weights = scaled_dot_product_attention(queries, keys, keys)
        # A residual, then layer norm: (B, T, D)
        return self.norm(context + queries), weights
# --8<-- [end:counting_model]


class StartTokenCountingModel(CountingModel):
    """The counting model with a start token: one extra key (and value) before the input.

    The start token is the same at every length, so its score does not grow with
    the input: a query that scores its own letter ``a``, the start token ``b``
    and every other token far below both puts weight ``n e^a / (n e^a + e^b)`` on
    its ``n`` letters, a function of ``n`` alone, whatever the length. The
    ``encoder-decoder`` weights are those on the input tokens (B, T, S); what is
    missing from a row's sum went to the start token.

    Examples:
        >>> model = StartTokenCountingModel(num_tokens=4, num_queries=3, num_classes=11, hidden=16)
        >>> with torch.no_grad():
        ...     weights = model(torch.tensor([[1, 1, 0, 2, 3]])).attention["encoder-decoder"]
        >>> weights.shape, round(weights.sum(-1)[0, 0].item(), 3)   # 1/6 went to the start
        (torch.Size([1, 3, 5]), 0.833)
    """

    def __init__(self, num_tokens: int, num_queries: int, num_classes: int, hidden: int) -> None:
        super().__init__(num_tokens + 1, num_queries, num_classes, hidden)  # + the start token

    def read(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Prepend the start token (id ``self.num_tokens - 1``, the constructor's ``num_tokens``:
        one past the input's tokens), read, and drop its weight column."""
        start = torch.full_like(tokens[:, :1], self.num_tokens - 1)  # (B, 1)
        hidden, weights = super().read(torch.cat([start, tokens], dim=1))  # (B, T, 1 + S)
        return hidden, weights[..., 1:]  # (B, T, S): the weights on the input tokens
