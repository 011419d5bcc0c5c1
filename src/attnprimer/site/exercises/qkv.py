"""The exercise of the queries, keys and values lab: scaled dot-product attention."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import causal_mask, padding_mask
from attnprimer.site.exercises.checker import Case, Exercise, Mistake, randn

__all__ = ['EXERCISES', 'SCALED_DOT_PRODUCT_ATTENTION']


def _attention_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(0)

    def case(query_shape, key_shape, value_dim, mask=None) -> Case:
        key = randn(generator, *key_shape)
        value = randn(generator, *key_shape[:-1], value_dim)
        return Case({"query": randn(generator, *query_shape), "key": key, "value": value,
                     "mask": mask})

    heads_padding = padding_mask([4, 2])[:, None, None, :]  # (B, 1, 1, S): one per sequence
    return [
        case((1, 4), (3, 4), 2),  # one query, three keys
        case((2, 3, 4), (2, 5, 4), 6),  # a batch, L != S, Dk != Dv
        case((2, 4, 8), (2, 4, 8), 8, mask=causal_mask(4)),  # self-attention, causal
        case((2, 3, 4, 8), (2, 3, 4, 8), 5, mask=heads_padding),  # heads, padded keys
    ]


def reference_attention(query, key, value, mask=None):
    """The package's scaled dot-product attention, called as the lab calls it."""
    return scaled_dot_product_attention(query, key, value, mask)


def _dot_attention_with(scale: Callable[[int], float], *, softmax_dim: int = -1,
                        flip_mask: bool = False, use_mask: bool = True) -> Callable[..., Any]:
    """A hand-written dot-product attention with one thing changed, for the mistakes below."""

    def attention(query, key, value, mask=None):
        scores = query @ key.transpose(-2, -1) * scale(query.shape[-1])  # (..., L, S)
        if mask is not None and use_mask:
            scores = scores.masked_fill(mask if flip_mask else ~mask, float("-inf"))
        weights = torch.softmax(scores, dim=softmax_dim)
        return weights @ value, weights

    return attention


def _root(dim: int) -> float:
    return 1 / math.sqrt(dim)


SCALED_DOT_PRODUCT_ATTENTION = Exercise(
    name="scaled_dot_product_attention",
    signature="scaled_dot_product_attention(query, key, value, mask=None) -> (context, weights)",
    reference=reference_attention,
    cases=_attention_cases,
    outputs=(("context", "(..., L, Dv)"), ("weights", "(..., L, S)")),
    mistakes=(
        Mistake("the scores are not divided by √Dk.", _dot_attention_with(lambda dim: 1.0)),
        Mistake("the scores are divided by Dk; the scale is 1/√Dk.",
                _dot_attention_with(lambda dim: 1 / dim)),
        Mistake("the softmax runs over the queries (dim=-2); each query's weights over the "
                "keys must sum to 1, so it runs over the last dimension.",
                _dot_attention_with(_root, softmax_dim=-2)),
        Mistake("the mask is ignored.", _dot_attention_with(_root, use_mask=False)),
        Mistake("the mask is read backwards: True means *may attend*, so the scores to fill "
                "with -inf are where the mask is False (`~mask`).",
                _dot_attention_with(_root, flip_mask=True)),
    ),
)


EXERCISES = (SCALED_DOT_PRODUCT_ATTENTION,)
