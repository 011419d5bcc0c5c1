"""Dot-product scores and scaled dot-product attention.

Taught in the chapters "Queries, keys and values" (``docs/chapters/qkv.md``) and "Self-
attention" (``docs/chapters/self-attention.md``).

A query asks a question, each key advertises what its position holds, and the
dot product ``q . k`` measures how well they match. Stacking the queries in Q
(L, Dk) and the keys in K (S, Dk) scores every pair at once, ``Q K^T`` (L, S).
Vaswani et al. (2017, "Attention is all you need", section 3.2.1) divide the
scores by sqrt(Dk) before the softmax:

    Attention(Q, K, V) = softmax(Q K^T / sqrt(Dk)) V

Luong et al. (2015) also proposed the *general* score ``q^T W k``, a dot
product after a learned linear map, which lets queries and keys live in
different spaces.

Shape legend: L query length, S key length, Dk query/key dim, Dv value dim;
``...`` is any number of leading batch dimensions.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnprimer.attention import attend

__all__ = [
    "GeneralScore",
    "dot_scores",
    "general_scores",
    "scaled_dot_product_attention",
]


# --8<-- [start:dot_scores]
def dot_scores(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """Score every query against every key with a dot product.

    Args:
        query: (..., L, Dk).
        key: (..., S, Dk).

    Returns:
        Scores (..., L, S); entry ``[i, j]`` is ``query[i] . key[j]``.

    Examples:
        >>> query = torch.tensor([[1.0, 0.0]])
        >>> key = torch.tensor([[2.0, 0.0], [0.0, 3.0]])
        >>> dot_scores(query, key)
        tensor([[2., 0.]])
    """
    _check_query_key(query, key)
    # (..., L, Dk) x (..., Dk, S) -> (..., L, S)
    return query @ key.transpose(-2, -1)
# --8<-- [end:dot_scores]


def general_scores(query: torch.Tensor, key: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Luong's *general* score ``q^T W k``.

    Args:
        query: (..., L, Dq).
        key: (..., S, Dk).
        weight: (Dq, Dk), the learned matrix W.

    Returns:
        Scores (..., L, S).

    Examples:
        >>> query, key = torch.ones(1, 2), torch.ones(3, 4)
        >>> general_scores(query, key, torch.ones(2, 4))
        tensor([[8., 8., 8.]])
    """
    if weight.dim() != 2 or weight.shape != (query.shape[-1], key.shape[-1]):
        raise ValueError(
            f"weight must have shape (Dq, Dk) = ({query.shape[-1]}, {key.shape[-1]}) for "
            f"query {tuple(query.shape)} and key {tuple(key.shape)}, got {tuple(weight.shape)}"
        )
    mapped_query = query @ weight  # (..., L, Dq) x (Dq, Dk) -> (..., L, Dk)
    return dot_scores(mapped_query, key)  # (..., L, S)


class GeneralScore(nn.Module):
    """Luong's general score as a module holding the learned matrix W (Dq, Dk).

    Examples:
        >>> score = GeneralScore(query_dim=4, key_dim=6)
        >>> score(torch.randn(2, 3, 4), torch.randn(2, 5, 6)).shape
        torch.Size([2, 3, 5])
    """

    def __init__(self, query_dim: int, key_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(query_dim, key_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """(..., L, Dq), (..., S, Dk) -> scores (..., L, S)."""
        return general_scores(query, key, self.weight)


# --8<-- [start:sdpa]
def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention, ``softmax(Q K^T / sqrt(Dk)) V``, with its weights.

    Matches ``torch.nn.functional.scaled_dot_product_attention`` (which
    returns only the context) for the same boolean mask and scale.

    Args:
        query: (..., L, Dk).
        key: (..., S, Dk).
        value: (..., S, Dv).
        mask: bool, broadcastable to (..., L, S); True = may attend.
        scale: multiplies the scores; defaults to ``1 / sqrt(Dk)``.

    Returns:
        ``(context, weights)``: context (..., L, Dv) and weights (..., L, S).

    Examples:
        >>> query = torch.tensor([[0.0, 2.0]])                  # L = 1, Dk = 2
        >>> key = torch.tensor([[1.0, 0.0], [0.0, 1.0]])        # S = 2
        >>> value = torch.tensor([[10.0], [20.0]])              # Dv = 1
        >>> context, weights = scaled_dot_product_attention(query, key, value)
        >>> weights                       # scores [0, 2] / sqrt(2), then softmax
        tensor([[0.1956, 0.8044]])
        >>> context                       # 0.19557 * 10 + 0.80443 * 20
        tensor([[18.0443]])
    """
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key (..., S, Dk) and value (..., S, Dv) must have the same S: "
            f"key {tuple(key.shape)}, value {tuple(value.shape)}"
        )
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = dot_scores(query, key) * scale  # (..., L, S)
    return attend(scores, value, mask)  # (..., L, Dv), (..., L, S)
# --8<-- [end:sdpa]


def _check_query_key(query: torch.Tensor, key: torch.Tensor) -> None:
    if query.dim() < 2 or key.dim() < 2:
        raise ValueError(
            f"query (..., L, Dk) and key (..., S, Dk) need at least 2 dimensions: "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query (..., L, Dk) and key (..., S, Dk) must have the same Dk: "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    try:
        torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the batch dimensions of query {tuple(query.shape)} and key "
            f"{tuple(key.shape)} do not broadcast"
        ) from None
