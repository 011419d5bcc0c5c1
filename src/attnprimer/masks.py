"""Boolean attention masks.

Taught in the chapters "Self-attention" (``docs/chapters/self-attention.md``) and "Queries, keys
and values" (``docs/chapters/qkv.md``).

Convention, used everywhere in attnprimer: a mask is a boolean tensor that
broadcasts to the attention scores, shape (..., L, S), and **True means "this
query may attend to this key"**. It is the convention of
``torch.nn.functional.scaled_dot_product_attention``.

``torch.nn.MultiheadAttention`` uses the opposite polarity (True means
"blocked"); convert with [`to_blocked_mask`][attnprimer.masks.to_blocked_mask] before handing a mask
to it.

Shape legend: B batch, L query length, S key (source) length.
"""

from __future__ import annotations

import torch

__all__ = [
    "causal_mask",
    "combine_masks",
    "local_mask",
    "padding_mask",
    "to_blocked_mask",
]


# --8<-- [start:causal_mask]
def causal_mask(
    query_length: int, key_length: int | None = None
) -> torch.Tensor:
    """Mask that lets query ``i`` attend to keys ``0..i`` only (no peeking ahead).

    When L != S the triangle is aligned *top-left*: query ``i`` is taken to sit at key
    position ``i``, as with ``is_causal=True`` in ``F.scaled_dot_product_attention``. That
    is right when queries and keys start together. Decoding with a key-value cache is the
    other case: the L new queries are the *last* L of the S positions, so query ``i`` sits
    at position ``S - L + i`` and needs the triangle aligned bottom-right,
    ``torch.tril(ones, diagonal=S - L)`` (PyTorch's
    ``torch.nn.attention.bias.causal_lower_right``). The two agree when L = S.

    Args:
        query_length: L, the number of queries.
        key_length: S, the number of keys; defaults to ``query_length``.

    Returns:
        Bool tensor (L, S), lower-triangular: True on and below the diagonal.

    Examples:
        >>> causal_mask(3).int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
        >>> causal_mask(2, 4).int()   # top-left: not the mask for 2 new tokens after 2 cached
        tensor([[1, 0, 0, 0],
                [1, 1, 0, 0]], dtype=torch.int32)
        >>> torch.tril(torch.ones(2, 4, dtype=torch.bool), diagonal=4 - 2).int()  # bottom-right
        tensor([[1, 1, 1, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    key_length = query_length if key_length is None else key_length
    _check_positive(query_length=query_length, key_length=key_length)
    ones = torch.ones(query_length, key_length, dtype=torch.bool)  # (L, S)
    return torch.tril(ones)  # keep j <= i
# --8<-- [end:causal_mask]


def padding_mask(lengths: torch.Tensor | list[int], max_length: int | None = None) -> torch.Tensor:
    """Mask out the padding at the end of each sequence in a batch.

    Args:
        lengths: (B,) the true length of each sequence.
        max_length: S, the padded length; defaults to ``max(lengths)``.

    Returns:
        Bool tensor (B, S): True at real positions, False at padding. Index it
        as ``mask[:, None, :]`` to get (B, 1, S), which broadcasts over the
        queries of scores shaped (B, L, S).

    Examples:
        >>> padding_mask([2, 3]).int()
        tensor([[1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must have shape (B,), got {tuple(lengths.shape)}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_length = longest if max_length is None else max_length
    if max_length < longest:
        raise ValueError(
            f"max_length={max_length} is shorter than the longest sequence ({longest})")
    positions = torch.arange(max_length)  # (S,)
    return positions[None, :] < lengths[:, None]  # (1, S) < (B, 1) -> (B, S)


def local_mask(length: int, window: int, *, causal: bool = False) -> torch.Tensor:
    """Mask that lets each position attend only to neighbours within ``window`` steps.

    Args:
        length: L = S, the sequence length (self-attention).
        window: how far a query may look; ``|i - j| <= window`` is allowed.
        causal: if True, also forbid looking ahead (``j <= i``).

    Returns:
        Bool tensor (L, L), a band around the diagonal.

    Examples:
        >>> local_mask(4, window=1).int()
        tensor([[1, 1, 0, 0],
                [1, 1, 1, 0],
                [0, 1, 1, 1],
                [0, 0, 1, 1]], dtype=torch.int32)
    """
    _check_positive(length=length)
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    positions = torch.arange(length)
    offset = positions[:, None] - positions[None, :]  # (L, 1) - (1, L) -> (L, L), i - j
    mask = offset.abs() <= window
    if causal:
        mask = mask & (offset >= 0)
    return mask


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Combine masks so that a key is allowed only where every mask allows it.

    ``None`` entries (no mask) are skipped; shapes must broadcast together.

    Examples:
        >>> combine_masks(causal_mask(3), padding_mask([2], max_length=3)[:, None, :]).int()
        tensor([[[1, 0, 0],
                 [1, 1, 0],
                 [1, 1, 0]]], dtype=torch.int32)
    """
    combined = None
    for mask in masks:
        if mask is None:
            continue
        _check_bool(mask)
        combined = mask if combined is None else combined & mask
    return combined


def to_blocked_mask(mask: torch.Tensor) -> torch.Tensor:
    """Convert an attnprimer mask (True = may attend) to PyTorch's ``nn.MultiheadAttention`` one.

    ``nn.MultiheadAttention`` reads a boolean ``attn_mask`` or ``key_padding_mask``
    as True = *not* allowed to attend, the opposite of ours, so the conversion
    is a logical not. It is its own inverse.

    Examples:
        >>> to_blocked_mask(causal_mask(2)).int()
        tensor([[0, 1],
                [0, 0]], dtype=torch.int32)
    """
    _check_bool(mask)
    return ~mask


def _check_bool(mask: torch.Tensor) -> None:
    if mask.dtype != torch.bool:
        raise TypeError(f"masks must be boolean (True = may attend), got dtype {mask.dtype}")


def _check_positive(**sizes: int) -> None:
    for name, size in sizes.items():
        if size <= 0:
            raise ValueError(f"{name} must be positive, got {size}")
