"""The partners model: self-attention in which a token looks for another token.

Taught in the chapter "Self-attention" (``docs/chapters/self-attention.md``).

Each token is a letter carrying a digit. [`PartnersModel`][attnprimer.models.partners.PartnersModel]
embeds both, lets every token attend over all the tokens of its sequence, and reads a digit off
the context. With ``projections`` each token has its own query, key and value, ``x W_q``,
``x W_k``, ``x W_v``; without them its query, key and value are its embedding ``x`` itself.

Shape legend: B batch, S tokens, D hidden size, C digits.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.models import ModelOutput

__all__ = ["PartnersModel"]


# --8<-- [start:partners_model]
class PartnersModel(nn.Module):
    """One self-attention over letter-digit tokens, then a digit from each token's context.

    Args:
        letters: the number of letters.
        digits: C, the number of digits a letter may carry.
        hidden: D.
        projections: learned W_q, W_k, W_v (bias-free); without them q = k = v = x.
    """

    def __init__(self, letters: int, digits: int, hidden: int,
                 projections: bool) -> None:
        super().__init__()
        self.digits = digits
        self.letter = nn.Embedding(letters, hidden)
        self.digit = nn.Embedding(digits, hidden)
        self.projections = projections
        if projections:
            self.query = nn.Linear(hidden, hidden, bias=False)
            self.key = nn.Linear(hidden, hidden, bias=False)
            self.value = nn.Linear(hidden, hidden, bias=False)
        self.readout = nn.Linear(hidden, digits)

    def embed(self, inputs: torch.Tensor) -> torch.Tensor:
        """Token ids (B, S), ``1 + letter * digits + digit``, to vectors (B, S, D)."""
        letter, digit = (inputs - 1) // self.digits, (inputs - 1) % self.digits
        return self.letter(letter) + self.digit(digit)

    def forward(self, inputs: torch.Tensor) -> ModelOutput:
        x = self.embed(inputs)                                  # (B, S, D)
        if self.projections:
            q, k, v = self.query(x), self.key(x), self.value(x)
        else:
            q = k = v = x                  # a token's query is its own key
        # context (B, S, D): each token's weighted average; weights (B, S, S)
        context, weights = scaled_dot_product_attention(q, k, v)
        return ModelOutput(self.readout(context), {"self-attention": weights})
# --8<-- [end:partners_model]
