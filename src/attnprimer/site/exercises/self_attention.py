"""The exercises of the self-attention lab: a causal mask, and the multi-head split and merge."""

from __future__ import annotations

import torch

from attnprimer.masks import causal_mask
from attnprimer.multihead import merge_heads, split_heads
from attnprimer.site.exercises.checker import Case, Exercise, Mistake, randn

__all__ = ['CAUSAL_MASK', 'EXERCISES', 'MERGE_HEADS', 'SPLIT_HEADS']


def _mask_cases() -> list[Case]:
    return [Case({"length": length}) for length in (1, 2, 5, 8)]


def _ones(length: int) -> torch.Tensor:
    return torch.ones(length, length, dtype=torch.bool)


CAUSAL_MASK = Exercise(
    name="causal_mask",
    signature="causal_mask(length) -> mask (L, L), bool, True = may attend",
    reference=causal_mask,
    cases=_mask_cases,
    outputs=(("mask", "(L, L)"),),
    mistakes=(
        Mistake("the mask is upside down. Row i is query i and column j is key j; query i may "
                "read keys 0..i, which is on and below the diagonal (torch.tril).",
                lambda length: _ones(length).triu()),
        Mistake("the diagonal is False, but every position may attend to itself.",
                lambda length: _ones(length).tril(-1)),
        Mistake("True marks the blocked keys, which is nn.MultiheadAttention's convention; "
                "attnprimer's masks (and F.scaled_dot_product_attention's) say True = may attend.",
                lambda length: _ones(length).triu(1)),
    ),
)


# Splitting and merging heads -------------------------------------------------------------------


def _split_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(2)
    # Every size distinct in the first case, so that a misplaced dimension shows in the shape.
    shapes = [((2, 3, 8), 4), ((1, 2, 4), 2), ((2, 5, 6), 3), ((1, 3, 4), 1)]
    return [Case({"x": randn(generator, *shape), "num_heads": heads}) for shape, heads in shapes]


def _merge_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(3)
    shapes = [(2, 3, 4, 5), (1, 2, 2, 2), (2, 2, 5, 4)]  # (B, H, L, Dh)
    return [Case({"x": randn(generator, *shape)}) for shape in shapes]


def _split_without_transpose(x, num_heads):
    batch, length, dim = x.shape
    return x.reshape(batch, num_heads, length, dim // num_heads)


def _split_interleaved(x, num_heads):
    batch, length, dim = x.shape
    return x.reshape(batch, length, dim // num_heads, num_heads).permute(0, 3, 1, 2)


def _merge_without_transpose(x):
    batch, heads, length, head_dim = x.shape
    return x.reshape(batch, length, heads * head_dim)


SPLIT_HEADS = Exercise(
    name="split_heads",
    signature="split_heads(x, num_heads) -> (B, H, L, Dh), from x (B, L, D)",
    reference=split_heads,
    cases=_split_cases,
    outputs=(("heads", "(B, H, L, Dh)"),),
    mistakes=(
        Mistake("x was reshaped straight to (B, H, L, Dh). That regroups positions and "
                "columns together; each head must get a slice of D for every position, so "
                "reshape to (B, L, H, Dh) first, then swap L and H with .transpose(1, 2).",
                _split_without_transpose),
        Mistake("D was cut as (Dh, H): head h got every H-th column. Cut it as (H, Dh), so "
                "that head h gets the columns h·Dh to (h+1)·Dh - 1.",
                _split_interleaved),
    ),
)

MERGE_HEADS = Exercise(
    name="merge_heads",
    signature="merge_heads(x) -> (B, L, D), from x (B, H, L, Dh)",
    reference=merge_heads,
    cases=_merge_cases,
    outputs=(("merged", "(B, L, H·Dh)"),),
    mistakes=(
        Mistake("x was reshaped straight to (B, L, D), which mixes positions and heads. Swap "
                "H and L back first (.transpose(1, 2)), then reshape.",
                _merge_without_transpose),
    ),
)


EXERCISES = (CAUSAL_MASK, SPLIT_HEADS, MERGE_HEADS)
