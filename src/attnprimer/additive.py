"""Additive (Bahdanau) attention.

Bahdanau, Cho and Bengio (2015, "Neural machine translation by jointly
learning to align and translate") score a decoder state ``q`` against an
encoder state ``k`` with a one-hidden-layer network, the *alignment model*:

    score(q, k) = v^T tanh(W_q q + W_k k)

W_q (A, Dq) and W_k (A, Dk) map both into a shared space of size A, where they
are added (hence "additive"); ``tanh`` and the vector ``v`` (A,) reduce the
sum to one number. Queries and keys may have different sizes, and the score is
not a plain similarity: the network can learn any matching rule it needs.

Shape legend: L query length, S key length, Dq query dim, Dk key dim,
A attention (hidden) dim, Dv value dim; ``...`` is any leading batch dims.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.attention import attend

__all__ = ["AdditiveAttention", "AdditiveScore", "additive_scores"]


# --8<-- [start:additive_scores]
def additive_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    query_weight: torch.Tensor,
    key_weight: torch.Tensor,
    v: torch.Tensor,
) -> torch.Tensor:
    """Bahdanau's score ``v^T tanh(W_q q + W_k k)`` for every query-key pair.

    Args:
        query: (..., L, Dq).
        key: (..., S, Dk).
        query_weight: W_q, (A, Dq).
        key_weight: W_k, (A, Dk).
        v: (A,).

    Returns:
        Scores (..., L, S).

    Examples:
        >>> query, key = torch.zeros(1, 2), torch.ones(3, 2)
        >>> eye = torch.eye(2)
        >>> additive_scores(query, key, eye, eye, torch.ones(2))  # 2 * tanh(1)
        tensor([[1.5232, 1.5232, 1.5232]])
    """
    _check_additive_shapes(query, key, query_weight, key_weight, v)
    projected_query = query @ query_weight.T  # (..., L, Dq) x (Dq, A) -> (..., L, A)
    projected_key = key @ key_weight.T  # (..., S, Dk) x (Dk, A) -> (..., S, A)
    # Add every query to every key by broadcasting:
    # (..., L, 1, A) + (..., 1, S, A) -> (..., L, S, A)
    hidden = torch.tanh(projected_query.unsqueeze(-2) + projected_key.unsqueeze(-3))
    return hidden @ v  # (..., L, S, A) x (A,) -> (..., L, S)
# --8<-- [end:additive_scores]


class AdditiveScore(nn.Module):
    """The alignment model as a module: learned W_q (A, Dq), W_k (A, Dk) and v (A,).

    Examples:
        >>> score = AdditiveScore(query_dim=4, key_dim=6, hidden_dim=8)
        >>> score(torch.randn(2, 3, 4), torch.randn(2, 5, 6)).shape
        torch.Size([2, 3, 5])
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Parameter(torch.empty(hidden_dim).uniform_(-1, 1) / hidden_dim**0.5)

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """(..., L, Dq), (..., S, Dk) -> scores (..., L, S)."""
        return additive_scores(query, key, self.query_proj.weight, self.key_proj.weight, self.v)


class AdditiveAttention(nn.Module):
    """Additive attention: Bahdanau scores, then a softmax-weighted average of the values.

    Examples:
        >>> attention = AdditiveAttention(query_dim=4, key_dim=6, hidden_dim=8)
        >>> query, key = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
        >>> context, weights = attention(query, key, key)
        >>> context.shape, weights.shape
        (torch.Size([2, 3, 6]), torch.Size([2, 3, 5]))
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.score = AdditiveScore(query_dim, key_dim, hidden_dim)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from each query over the keys.

        Args:
            query: (..., L, Dq).
            key: (..., S, Dk).
            value: (..., S, Dv).
            mask: bool, broadcastable to (..., L, S); True = may attend.

        Returns:
            ``(context, weights)``: (..., L, Dv) and (..., L, S).
        """
        scores = self.score(query, key)  # (..., L, S)
        return attend(scores, value, mask)


def _check_additive_shapes(query, key, query_weight, key_weight, v) -> None:
    if query.dim() < 2 or key.dim() < 2:
        raise ValueError(
            f"query (..., L, Dq) and key (..., S, Dk) need at least 2 dimensions: "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
    hidden = v.shape[0] if v.dim() == 1 else None
    expected = {
        "query_weight": (hidden, query.shape[-1]),
        "key_weight": (hidden, key.shape[-1]),
    }
    actual = {"query_weight": tuple(query_weight.shape), "key_weight": tuple(key_weight.shape)}
    if hidden is None or any(expected[name] != actual[name] for name in expected):
        raise ValueError(
            f"for query {tuple(query.shape)} and key {tuple(key.shape)}, expected "
            f"query_weight (A, Dq), key_weight (A, Dk) and v (A,); got query_weight "
            f"{actual['query_weight']}, key_weight {actual['key_weight']}, v {tuple(v.shape)}"
        )
