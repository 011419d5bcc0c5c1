"""The worked example: three tokens with 2-D vectors, small enough to check by hand.

The chapter on queries, keys and values sends one query through scaled dot-product attention
over three keys and their values; the chapter on self-attention sends the same three vectors
through small integer projections, so that each token makes its own query, key and value. Every
number those pages print comes from here, through the package's own
[`dot_scores`][attnprimer.dot_product.dot_scores] and [`attend`][attnprimer.attention.attend].

Vectors are rows, as in the chapters' formulas: a token ``x`` is projected to ``x @ W``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnprimer.attention import attend
from attnprimer.dot_product import dot_scores

__all__ = ["KEYS", "QUERY", "SELF_PROJECTIONS", "TOKENS", "VALUES", "WorkedAttention",
           "attention_by_hand", "qkv_example", "self_attention_example"]

TOKENS = ("a", "b", "c")
KEYS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
"""The three tokens' vectors: the keys of the QKV example, the inputs of self-attention's."""
QUERY = (2.0, 1.0)
"""The QKV example's one query: it agrees most with ``c`` = (1, 1), least with ``b`` = (0, 1)."""
VALUES = ((10.0, 0.0), (0.0, 10.0), (5.0, 5.0))
"""The QKV example's values, one per key: what each token hands over when it is looked at."""

SELF_PROJECTIONS = {
    "W_q": ((0.0, 1.0), (1.0, 0.0)),   # swap the two coordinates: a looks for what b is
    "W_k": ((1.0, 0.0), (0.0, 1.0)),   # the identity: each token is keyed by its own vector
    "W_v": ((2.0, 0.0), (0.0, 1.0)),   # double the first coordinate of what is handed over
}
"""Self-attention's projections: small integers, so that every product is checkable by hand."""


@dataclass(frozen=True)
class WorkedAttention:
    """Every intermediate of one scaled dot-product attention, shaped (queries, keys) or
    (rows, dimensions)."""

    queries: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    scores: torch.Tensor   # q . k
    scaled: torch.Tensor   # q . k / sqrt(d)
    weights: torch.Tensor  # softmax over the keys, each row sums to 1
    context: torch.Tensor  # the weighted average of the values


def attention_by_hand(queries: torch.Tensor, keys: torch.Tensor,
                      values: torch.Tensor) -> WorkedAttention:
    """Scaled dot-product attention, keeping each step for the page to print.

    Examples:
        >>> worked = qkv_example()
        >>> worked.scores
        tensor([[2., 1., 3.]])
        >>> worked.weights
        tensor([[0.2840, 0.1400, 0.5760]])
    """
    scores = dot_scores(queries, keys)
    scaled = scores / math.sqrt(keys.shape[-1])
    context, weights = attend(scaled, values)
    return WorkedAttention(queries, keys, values, scores, scaled, weights, context)


def qkv_example() -> WorkedAttention:
    """One query, :data:`QUERY`, over the three :data:`KEYS` and their :data:`VALUES`."""
    return attention_by_hand(torch.tensor([QUERY]), torch.tensor(KEYS), torch.tensor(VALUES))


def self_attention_example(projections: bool = True) -> WorkedAttention:
    """The three tokens attending to one another: with :data:`SELF_PROJECTIONS`, or with
    none, when each token's query, key and value are its own vector.

    Examples:
        >>> plain = self_attention_example(projections=False)
        >>> plain.scores  # each token scores itself at least as high as any other
        tensor([[1., 0., 1.],
                [0., 1., 1.],
                [1., 1., 2.]])
    """
    x = torch.tensor(KEYS)
    if not projections:
        return attention_by_hand(x, x, x)
    w = {name: torch.tensor(matrix) for name, matrix in SELF_PROJECTIONS.items()}
    return attention_by_hand(x @ w["W_q"], x @ w["W_k"], x @ w["W_v"])
