"""The exercise of the Bahdanau lab: additive attention."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from attnprimer.additive import additive_scores
from attnprimer.attention import attend
from attnprimer.masks import padding_mask
from attnprimer.site.exercises.checker import Case, Exercise, Mistake, randn

__all__ = ['ADDITIVE_ATTENTION', 'EXERCISES']


def _additive_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(1)

    def case(query_shape, key_shape, value_dim, hidden, mask=None) -> Case:
        return Case({
            "query": randn(generator, *query_shape),
            "key": randn(generator, *key_shape),
            "value": randn(generator, *key_shape[:-1], value_dim),
            "W_q": randn(generator, hidden, query_shape[-1]),
            "W_k": randn(generator, hidden, key_shape[-1]),
            "v": randn(generator, hidden),
            "mask": mask,
        })

    return [
        case((1, 3), (4, 5), 2, hidden=6),  # one decoder state, four encoder states
        case((2, 3, 3), (2, 4, 5), 2, hidden=6),  # a batch of three queries each
        case((2, 2, 4), (2, 5, 4), 3, hidden=8, mask=padding_mask([5, 3])[:, None, :]),
    ]


def _additive(query, key, value, W_q, W_k, v, mask=None):
    return attend(additive_scores(query, key, W_q, W_k, v), value, mask)


def _additive_with(*, squash: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
                   squash_after: bool = False, softmax_dim: int = -1,
                   use_mask: bool = True) -> Callable[..., Any]:
    """A hand-written additive attention with one thing changed, for the mistakes below."""

    def attention(query, key, value, W_q, W_k, v, mask=None):
        summed = (query @ W_q.T).unsqueeze(-2) + (key @ W_k.T).unsqueeze(-3)  # (..., L, S, A)
        scores = squash(summed @ v) if squash_after else squash(summed) @ v  # (..., L, S)
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=softmax_dim)
        return weights @ value, weights

    return attention


ADDITIVE_ATTENTION = Exercise(
    name="additive_attention",
    signature="additive_attention(query, key, value, W_q, W_k, v, mask=None) -> (context, weights)",
    reference=_additive,
    cases=_additive_cases,
    outputs=(("context", "(..., L, Dv)"), ("weights", "(..., L, S)")),
    mistakes=(
        Mistake("there is no tanh: v^T (W_q q + W_k k) is linear, and then the query adds the "
                "same amount to every key's score and cannot change the weights at all.",
                _additive_with(squash=lambda x: x)),
        Mistake("the tanh comes after v; it goes around W_q q + W_k k, before v.",
                _additive_with(squash_after=True)),
        Mistake("the softmax runs over the queries (dim=-2); it runs over the keys.",
                _additive_with(softmax_dim=-2)),
        Mistake("the mask is ignored.", _additive_with(use_mask=False)),
    ),
)


EXERCISES = (ADDITIVE_ATTENTION,)
