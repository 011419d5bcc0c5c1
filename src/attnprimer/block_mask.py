"""Masks described by a rule, decided one block of (query, key) pairs at a time.

Taught in the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

Tiled attention ([`attnprimer.tiled`][attnprimer.tiled]) never builds the L x S mask of
[`attnprimer.masks`][attnprimer.masks]: it asks, per block of queries ``[q0, q1)`` and keys
``[k0, k1)``, one of three questions of a rule. Is every pair of the block removed? Then the
block is *skipped*, never computed. Is every pair allowed? Then no mask is applied. Otherwise,
which pairs are allowed: a small (q1 - q0) x (k1 - k0) mask, built from the positions. The
rules are those of [`attnprimer.masks`][attnprimer.masks] (True = may attend), query ``i`` and
key ``j`` counted from 0, aligned top-left:

* causal: ``j <= i``;
* local (sliding window ``w``): ``|i - j| <= w``;
* padding: ``j < length``, one length per sequence of the batch.

Shape legend: B batch, L queries, S keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["BlockMask"]


@dataclass(frozen=True, eq=False)
class BlockMask:
    """Which (query, key) pairs may attend, by rule; combined with *and*.

    Attributes:
        causal: forbid keys after the query (``j <= i``).
        window: if set, allow only ``|i - j| <= window``.
        key_lengths: if set, (B,) the true length of each sequence's keys; later keys are
            padding.

    Examples:
        >>> mask = BlockMask(causal=True)
        >>> mask.skips(0, 4, 4, 8), mask.needs_mask(4, 8, 0, 4)   # above, below the diagonal
        (True, False)
        >>> mask.block(0, 2, 0, 3).int()
        tensor([[1, 0, 0],
                [1, 1, 0]], dtype=torch.int32)
    """

    causal: bool = False
    window: int | None = None
    key_lengths: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.window is not None and self.window < 0:
            raise ValueError(f"window must be >= 0, got {self.window}")
        if self.key_lengths is not None and self.key_lengths.dim() != 1:
            raise ValueError(f"key_lengths must have shape (B,), got "
                             f"{tuple(self.key_lengths.shape)}")

    # --8<-- [start:skips]
    def skips(self, q0: int, q1: int, k0: int, k1: int) -> bool:
        """True if no query of ``[q0, q1)`` may attend to any key of ``[k0, k1)``."""
        last_query, last_key = q1 - 1, k1 - 1
        if self.causal and k0 > last_query:  # every key after every query
            return True
        if self.window is not None and (k0 > last_query + self.window
                                        or last_key < q0 - self.window):
            return True  # every key too far from every query
        lengths = self.key_lengths
        return lengths is not None and k0 >= int(lengths.max())  # all padding
    # --8<-- [end:skips]

    def needs_mask(self, q0: int, q1: int, k0: int, k1: int) -> bool:
        """False if every query of ``[q0, q1)`` may attend to every key of ``[k0, k1)``."""
        last_query, last_key = q1 - 1, k1 - 1
        if self.causal and last_key > q0:
            return True
        if self.window is not None and (last_key > q0 + self.window
                                        or k0 < last_query - self.window):
            return True
        return self.key_lengths is not None and k1 > int(self.key_lengths.min())

    def block(self, q0: int, q1: int, k0: int, k1: int) -> torch.Tensor:
        """The block's mask: bool (q1 - q0, k1 - k0), or (B, 1, q1 - q0, k1 - k0) with
        ``key_lengths``, which broadcasts over the heads of (B, H, L, S) scores."""
        query = torch.arange(q0, q1)[:, None]  # (bq, 1)
        key = torch.arange(k0, k1)[None, :]  # (1, bk)
        allowed = torch.ones(q1 - q0, k1 - k0, dtype=torch.bool)  # (bq, bk)
        if self.causal:
            allowed = allowed & (key <= query)
        if self.window is not None:
            allowed = allowed & ((query - key).abs() <= self.window)
        if self.key_lengths is not None:
            lengths = self.key_lengths.view(-1, 1, 1, 1)  # (B, 1, 1, 1)
            allowed = allowed & (key < lengths)  # (B, 1, bq, bk)
        return allowed

    def dense(self, query_length: int, key_length: int) -> torch.Tensor:
        """The whole mask, (L, S) or (B, 1, L, S): for tests and small pictures only.

        Examples:
            >>> BlockMask(window=1).dense(3, 3).int()
            tensor([[1, 1, 0],
                    [1, 1, 1],
                    [0, 1, 1]], dtype=torch.int32)
        """
        return self.block(0, query_length, 0, key_length)

    def visited(self, query_length: int, key_length: int,
                block_size: int) -> list[tuple[int, int]]:
        """The (q0, k0) of every block a tiled pass computes: those not skipped.

        Examples:
            >>> len(BlockMask(causal=True).visited(8, 8, block_size=2))   # of 16
            10
        """
        return [(q0, k0) for q0 in range(0, query_length, block_size)
                for k0 in range(0, key_length, block_size)
                if not self.skips(q0, min(q0 + block_size, query_length),
                                  k0, min(k0 + block_size, key_length))]
