r"""Position information for attention: sinusoidal, learned and rotary encodings.

Attention compares contents. Shuffle the positions of a sequence and
self-attention's outputs are shuffled the same way and otherwise unchanged
(it is *permutation-equivariant*), and a weighted average over all positions,
like the counting model's, does not change at all. A task in which position
matters needs position written into the vectors, and there are two ways:

* **absolute** encodings add a vector to each position's embedding: a fixed
  pattern of sines and cosines ([`sinusoidal_encoding`][attnprimer.positional.sinusoidal_encoding],
  Vaswani et al., 2017) or a learned table ([`LearnedEncoding`][attnprimer.positional.LearnedEncoding]);
* **relative** encodings make the score of two positions depend on how far
  apart they are. Rotary encoding ([`apply_rotary`][attnprimer.positional.apply_rotary],
  Su et al., 2021) rotates each query and key by an angle proportional to its
  position, so that the dot product of a query at ``m`` and a key at ``n``
  depends on ``n - m`` only.

Shape legend: B batch, L length, D model (or head) dimension, even for the
sinusoidal and rotary encodings.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = [
    "POSITIONAL_ENCODINGS",
    "LearnedEncoding",
    "SinusoidalEncoding",
    "apply_rotary",
    "rotary_angles",
    "sinusoidal_encoding",
]

POSITIONAL_ENCODINGS = ("none", "learned", "sinusoidal", "rotary")
"""The encodings the signal task can use, by name."""


def _check_even(dim: int) -> None:
    if dim <= 0 or dim % 2:
        raise ValueError(f"the dimension must be positive and even, got {dim}")


# --8<-- [start:sinusoidal]
def sinusoidal_encoding(length: int, dim: int, base: float = 10_000.0) -> torch.Tensor:
    r"""The fixed encodings of Vaswani et al. (2017): (L, D), one row per position.

    Dimension pair ``(2i, 2i + 1)`` holds ``sin`` and ``cos`` of
    ``position / base^(2i / D)``: a pair of clock hands turning at their own
    speed, fast for the first pairs and slower and slower after. Every row has
    norm ``sqrt(D / 2)``, and the dot product of two rows depends only on their
    offset.

    Examples:
        >>> sinusoidal_encoding(3, 4)
        tensor([[ 0.0000,  1.0000,  0.0000,  1.0000],
                [ 0.8415,  0.5403,  0.0100,  0.9999],
                [ 0.9093, -0.4161,  0.0200,  0.9998]])
    """
    _check_even(dim)
    positions = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    speeds = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (D/2,)
    angles = positions * speeds  # (L, D/2)
    encoding = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (L, D/2, 2): sin, cos pairs
    return encoding.flatten(-2).float()  # (L, D)
# --8<-- [end:sinusoidal]


class SinusoidalEncoding(nn.Module):
    """Add [`sinusoidal_encoding`][attnprimer.positional.sinusoidal_encoding] to (B, L, D) inputs.

    Nothing is learned; the table is a buffer, computed for ``max_positions``.

    Examples:
        >>> encode = SinusoidalEncoding(dim=4, max_positions=8)
        >>> x = torch.zeros(1, 3, 4)
        >>> torch.equal(encode(x)[0], sinusoidal_encoding(3, 4))
        True
    """

    def __init__(self, dim: int, max_positions: int = 64) -> None:
        super().__init__()
        self.register_buffer("table", sinusoidal_encoding(max_positions, dim), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, L, D) -> x + encoding[:L]."""
        return x + _rows(self.table, x.shape[-2])


# --8<-- [start:learned]
class LearnedEncoding(nn.Module):
    """A learned vector per position, added to (B, L, D) inputs; starts at zero.

    Zero initialisation (the original primer's choice) means the model starts
    without any position information and adds only what training asks for.
    Positions never seen in training keep a zero vector.

    Examples:
        >>> encode = LearnedEncoding(dim=4, max_positions=8)
        >>> encode.norms()[:3]                    # nothing learned yet
        tensor([0., 0., 0.])
    """

    def __init__(self, dim: int, max_positions: int = 64) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.zeros(max_positions, dim))  # (max positions, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, L, D) -> x + table[:L]."""
        return x + _rows(self.table, x.shape[-2])

    def norms(self) -> torch.Tensor:
        """The L2 norm of each position's vector: (max positions,)."""
        return self.table.detach().norm(dim=-1)
# --8<-- [end:learned]


def _rows(table: torch.Tensor, length: int) -> torch.Tensor:
    if length > table.shape[0]:
        raise ValueError(f"sequence of length {length} is longer than the {table.shape[0]} "
                         f"positions this encoding has")
    return table[:length]  # (L, D), broadcasts over the batch


# --8<-- [start:rotary]
def rotary_angles(
    length: int, dim: int, base: float = 10_000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The rotation angle of each position and dimension pair: (L, D/2), ``position * speed``.

    Examples:
        >>> rotary_angles(3, 4)[2]                 # position 2: pair 0 turns fast, pair 1 slowly
        tensor([2.0000, 0.0200])
    """
    _check_even(dim)
    speeds = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (D/2,)
    return (torch.arange(length, dtype=torch.float64)[:, None] * speeds).to(dtype)  # (L, D/2)


def apply_rotary(x: torch.Tensor, base: float = 10_000.0) -> torch.Tensor:
    r"""Rotate each dimension pair of x (..., L, D) by the angle of its position.

    Applied to queries and keys (never to values), it makes their dot product
    depend on positions only through the offset, because rotations compose:
    ``(R_m q) . (R_n k) = q . (R_{n-m} k)``. Lengths are unchanged.

    Examples:
        >>> q, k = torch.randn(1, 4), torch.randn(1, 4)
        >>> at = lambda v, p: apply_rotary(torch.cat([torch.zeros(p, 4), v]))[p]   # v at p
        >>> torch.allclose(at(q, 2) @ at(k, 5), at(q, 0) @ at(k, 3), atol=1e-5)    # offset 3
        True
    """
    length, dim = x.shape[-2], x.shape[-1]
    angles = rotary_angles(length, dim, base, dtype=x.dtype)  # (L, D/2)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, D/2) each: the two halves of every pair
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2)  # (..., L, D/2, 2) -> (..., L, D)
# --8<-- [end:rotary]
