r"""Position information for attention: sinusoidal, learned and rotary encodings.

Taught in the chapter "Positional encoding" (``docs/chapters/positional-encoding.md``).

Attention compares contents. Shuffle the positions of a sequence and
self-attention's outputs are shuffled the same way and otherwise unchanged
(it is *permutation-equivariant*), and a weighted average over all positions,
like the counting model's, does not change at all. A task in which position
matters needs position information to reach attention, and there are three ways:

* **absolute** encodings add a vector to each position's embedding: a fixed
  pattern of sines and cosines ([`sinusoidal_encoding`][attnprimer.positional.sinusoidal_encoding],
  Vaswani et al., 2017) or a learned table
  ([`LearnedEncoding`][attnprimer.positional.LearnedEncoding]);
* **relative** encodings make the score of two positions depend on how far
  apart they are. Rotary encoding ([`apply_rotary`][attnprimer.positional.apply_rotary],
  Su et al., 2021) rotates each query and key by an angle proportional to its
  position, so that the dot product of a query at ``m`` and a key at ``n``
  depends on their positions only through ``n - m``;
* **score biases** add a number that depends on the offset straight to the
  scores, one (L, S) table per head: ALiBi's fixed linear penalty
  ([`alibi_bias`][attnprimer.positional.alibi_bias], Press et al., 2022) or a
  learned scalar per clipped offset
  ([`RelativePositionBias`][attnprimer.positional.RelativePositionBias], after
  Shaw et al., 2018 and Raffel et al., 2020). A bias is a float ``attn_mask``
  of ``F.scaled_dot_product_attention``; ``causal=True`` also puts ``-inf`` on
  every key after its query.

Shape legend: B batch, L length (queries), S key length, H heads, D model (or
head) dimension, even for the sinusoidal and rotary encodings.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "POSITIONAL_ENCODINGS",
    "LearnedEncoding",
    "RelativePositionBias",
    "SinusoidalEncoding",
    "alibi_bias",
    "alibi_slopes",
    "apply_rotary",
    "relative_offsets",
    "rotary_angles",
    "sinusoidal_encoding",
]

POSITIONAL_ENCODINGS = ("none", "learned", "sinusoidal", "rotary")
"""The encodings the signal task can use, by name."""


def _check_even(dim: int) -> None:
    if dim <= 0 or dim % 2:
        raise ValueError(f"the dimension must be positive and even, got {dim}")


# --8<-- [start:sinusoidal]
def sinusoidal_encoding(
    length: int, dim: int, base: float = 10_000.0
) -> torch.Tensor:
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
    # One speed per dimension pair, base^(-2i / D): (D/2,)
    speeds = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions * speeds  # (L, D/2)
    # Each pair holds sin and cos of its angle: (L, D/2, 2)
    encoding = torch.stack([angles.sin(), angles.cos()], dim=-1)
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
        # One row per position: (max positions, D)
        self.table = nn.Parameter(torch.zeros(max_positions, dim))

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
    length: int,
    dim: int,
    base: float = 10_000.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The rotation angle of each position and dimension pair: (L, D/2), ``position * speed``.

    Examples:
        >>> rotary_angles(3, 4)[2]                 # position 2: pair 0 turns fast, pair 1 slowly
        tensor([2.0000, 0.0200])
    """
    _check_even(dim)
    # The sinusoidal encoding's speeds: (D/2,)
    speeds = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    # Position times speed: (L, 1) x (D/2,) -> (L, D/2)
    return (torch.arange(length, dtype=torch.float64)[:, None]
            * speeds).to(dtype)


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
    # The two halves of every pair: (..., L, D/2) each
    even, odd = x[..., 0::2], x[..., 1::2]
    # Each pair turned by its angle: (..., L, D/2, 2)
    rotated = torch.stack([even * cos - odd * sin,
                           even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2)  # (..., L, D/2, 2) -> (..., L, D)
# --8<-- [end:rotary]


# --- score biases: ALiBi and learned relative biases --------------------------------------------


def relative_offsets(length: int, key_length: int | None = None) -> torch.Tensor:
    """(L, S) integer table of ``n - m``: key position minus query position.

    Queries sit at positions ``0..L-1`` and keys at ``0..S-1`` (S = L unless given).

    Examples:
        >>> relative_offsets(3)
        tensor([[ 0,  1,  2],
                [-1,  0,  1],
                [-2, -1,  0]])
    """
    key_length = length if key_length is None else key_length
    return torch.arange(key_length)[None, :] - torch.arange(length)[:, None]  # (L, S)


def _causal(bias: torch.Tensor, offsets: torch.Tensor, causal: bool) -> torch.Tensor:
    """``-inf`` on every key after its query (offset > 0) when ``causal``."""
    return bias.masked_fill(offsets > 0, -math.inf) if causal else bias


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """ALiBi's fixed slope of each head (Press et al., 2022): (H,).

    For ``H`` a power of two the slopes are the geometric sequence that starts at
    ``2^(-8/H)`` with that same ratio: 1/2, 1/4, ..., 1/256 for eight heads.
    Otherwise (the paper trains only powers of two) the authors' code's rule: the slopes
    of the largest power of two below ``H``, then every other slope of twice that many
    heads for the rest.

    Examples:
        >>> alibi_slopes(4)
        tensor([0.2500, 0.0625, 0.0156, 0.0039])
        >>> alibi_slopes(8)[[0, -1]] * 256
        tensor([128.,   1.])
    """
    if num_heads <= 0:
        raise ValueError(f"num_heads must be positive, got {num_heads}")
    power = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * head / power) for head in range(1, power + 1)]
    extra = [2.0 ** (-4.0 * head / power) for head in range(1, 2 * (num_heads - power), 2)]
    return torch.tensor(slopes + extra)


# --8<-- [start:alibi]
def alibi_bias(num_heads: int, length: int, key_length: int | None = None, *,
               causal: bool = False) -> torch.Tensor:
    """ALiBi: a score bias ``-slope * |n - m|`` per head, (H, L, S); nothing is learned.

    Each head penalises distance linearly, with its own slope from
    [`alibi_slopes`][attnprimer.positional.alibi_slopes]. With ``causal=True``
    (the paper's language models) the keys after the query get ``-inf``.

    Examples:
        >>> alibi_bias(2, 3, causal=True)[0]          # head 0 of two: slope 1/16
        tensor([[ 0.0000,    -inf,    -inf],
                [-0.0625,  0.0000,    -inf],
                [-0.1250, -0.0625,  0.0000]])
    """
    offsets = relative_offsets(length, key_length)  # (L, S): n - m
    slopes = alibi_slopes(num_heads)[:, None, None]  # (H, 1, 1)
    bias = slopes * -offsets.abs()  # (H, L, S): farther keys score lower
    return _causal(bias, offsets, causal)
# --8<-- [end:alibi]


# --8<-- [start:relative]
class RelativePositionBias(nn.Module):
    """A learned score bias per head and offset ``n - m``, clipped to ``±max_offset``: (H, L, S).

    One scalar per head and offset (Shaw et al., 2018 clip offsets the same way;
    T5, Raffel et al., 2020, learns a scalar per bucket of offsets). Offsets
    beyond ``max_offset`` share the last entry, so any length works. Starts at
    zero: no position information until training asks for it.

    Examples:
        >>> bias = RelativePositionBias(num_heads=2, max_offset=1)
        >>> bias(3).shape, bias(3, causal=True)[0, 0, 1]
        (torch.Size([2, 3, 3]), tensor(-inf, grad_fn=<SelectBackward0>))
    """

    def __init__(self, num_heads: int, max_offset: int) -> None:
        super().__init__()
        self.max_offset = max_offset
        # One entry per head and offset -max_offset..max_offset: (H, offsets)
        self.table = nn.Parameter(torch.zeros(num_heads, 2 * max_offset + 1))

    def forward(self, length: int, key_length: int | None = None, *,
                causal: bool = False) -> torch.Tensor:
        """The bias (H, L, S) for L queries and S keys (S = L unless given)."""
        offsets = relative_offsets(length, key_length)  # (L, S): n - m
        # The column of each pair's (clipped) offset: (L, S)
        index = (offsets.clamp(-self.max_offset, self.max_offset)
                 + self.max_offset)
        bias = self.table[:, index]  # (H, L, S)
        return _causal(bias, offsets, causal)
# --8<-- [end:relative]
