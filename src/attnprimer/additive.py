"""Additive (Bahdanau) attention.

Taught in the chapters "Bahdanau attention" (``docs/chapters/bahdanau.md``) and "Queries, keys
and values" (``docs/chapters/qkv.md``).

Bahdanau, Cho and Bengio (2015, "Neural machine translation by jointly
learning to align and translate") score a decoder state ``q`` against an
encoder state ``k`` with a one-hidden-layer network, the *alignment model*:

    score(q, k) = v^T tanh(W_q q + W_k k)

W_q (A, Dq) and W_k (A, Dk) map both into a shared space of size A, where they
are added (hence "additive"); ``tanh`` and the vector ``v`` (A,) reduce the
sum to one number. Queries and keys may have different sizes, and the score is
not a plain similarity: the network can learn a much wider family of matching rules than a
dot product (though not every one: with no bias, ``score(-q, -k) = -score(q, k)``).

Shape legend: L query length, S key length, Dq query dim, Dk key dim,
A attention (hidden) dim, Dv value dim; ``...`` is any leading batch dims.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.attention import attend

__all__ = ["AdditiveAttention", "AdditiveScore", "additive_attention_by_hand", "additive_scores"]


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
    # (..., L, Dq) x (Dq, A) -> (..., L, A)
    projected_query = query @ query_weight.T
    # (..., S, Dk) x (Dk, A) -> (..., S, A)
    projected_key = key @ key_weight.T
    # Add every query to every key by broadcasting:
    # (..., L, 1, A) + (..., 1, S, A) -> (..., L, S, A)
    hidden = torch.tanh(projected_query.unsqueeze(-2)
                        + projected_key.unsqueeze(-3))
    return hidden @ v  # (..., L, S, A) x (A,) -> (..., L, S)
# --8<-- [end:additive_scores]


# --8<-- [start:additive_score]
class AdditiveScore(nn.Module):
    """The alignment model as a module: learned W_q (A, Dq), W_k (A, Dk) and v (A,).

    Examples:
        >>> score = AdditiveScore(query_dim=4, key_dim=6, hidden_dim=8)
        >>> score(torch.randn(2, 3, 4), torch.randn(2, 5, 6)).shape
        torch.Size([2, 3, 5])
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        # W_q (A, Dq) and W_k (A, Dk): linear maps without bias
        self.query_proj = nn.Linear(query_dim, hidden_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, hidden_dim, bias=False)
        # v (A,), drawn like a linear layer's weights
        self.v = nn.Parameter(
            torch.empty(hidden_dim).uniform_(-1, 1) / hidden_dim**0.5)

    def forward(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        """(..., L, Dq), (..., S, Dk) -> scores (..., L, S)."""
        return additive_scores(query, key, self.query_proj.weight,
                               self.key_proj.weight, self.v)
# --8<-- [end:additive_score]


# --8<-- [start:additive_by_hand]
def additive_attention_by_hand(
    score: AdditiveScore, state: torch.Tensor, memory: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bahdanau's equations as written, for one decoder state: one encoder state at a time.

    What [`AdditiveAttention`][attnprimer.additive.AdditiveAttention] computes for all pairs
    at once, spelt out with a loop so that each line is one equation of the paper.

    Args:
        score: the alignment model, whose weights W_q (A, D), W_k (A, H) and v (A,) are used.
        state: (D,) the decoder's previous state s, the query.
        memory: (S, H) the encoder's states h_1 ... h_S, the keys and values.

    Returns:
        ``(context, weights)``: (H,) and (S,).

    Examples:
        >>> score = AdditiveScore(query_dim=3, key_dim=4, hidden_dim=5)
        >>> context, weights = additive_attention_by_hand(score, torch.randn(3), torch.randn(6, 4))
        >>> context.shape, weights.shape, bool(torch.isclose(weights.sum(), torch.tensor(1.0)))
        (torch.Size([4]), torch.Size([6]), True)
    """
    if state.dim() != 1 or memory.dim() != 2:
        raise ValueError(f"expected state (D,) and memory (S, H), got state "
                         f"{tuple(state.shape)} and memory {tuple(memory.shape)}")
    # The alignment model's weights: W_q (A, D), W_k (A, H) and v (A,)
    W_q, W_k, v = score.query_proj.weight, score.key_proj.weight, score.v
    # e_j = v^T tanh(W_q s + W_k h_j), one score per encoder state: (S,)
    scores = torch.stack(
        [v @ torch.tanh(W_q @ state + W_k @ h) for h in memory])
    # The softmax, a_j = exp(e_j) / sum_k exp(e_k): (S,)
    weights = torch.exp(scores) / torch.exp(scores).sum()
    # The context, sum_j a_j h_j: (H,)
    context = (weights[:, None] * memory).sum(dim=0)
    return context, weights
# --8<-- [end:additive_by_hand]


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
