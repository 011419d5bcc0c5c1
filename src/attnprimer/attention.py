"""From scores to context: the part every attention mechanism shares.

Taught in the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

Whatever scores the queries against the keys (a dot product, a learned
bilinear form, a small network), attention then does the same two things:

1. turn each query's row of scores into weights that are positive and sum to
   one (a softmax over the keys, skipping masked keys), and
2. return the weighted average of the values under those weights.

Shape legend: L query length, S key length, Dv value dim; ``...`` is any
number of leading batch dimensions (B, or B and H).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

__all__ = ["attend", "masked_softmax", "softmax_over_keys"]


# --8<-- [start:attend]
def masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax over the last dimension (the keys), ignoring masked keys.

    Masked keys get a weight of exactly zero. A row whose keys are all masked
    (a query with nothing it may attend to) gets all-zero weights instead of
    the NaNs a plain ``-inf`` fill would give, and its gradients stay finite.

    Args:
        scores: (..., L, S) attention scores.
        mask: bool, broadcastable to (..., L, S); True = may attend.

    Returns:
        Weights (..., L, S); each row sums to 1, or to 0 if fully masked.

    Examples:
        >>> scores = torch.tensor([[1.0, 1.0, 5.0], [0.0, 0.0, 0.0]])
        >>> mask = torch.tensor([[True, True, False], [False, False, False]])
        >>> masked_softmax(scores, mask)
        tensor([[0.5000, 0.5000, 0.0000],
                [0.0000, 0.0000, 0.0000]])
    """
    if mask is None:
        return softmax_over_keys(scores)
    _check_mask(mask, scores.shape)
    has_any_key = mask.any(dim=-1, keepdim=True)  # (..., L, 1)
    scores = scores.masked_fill(~mask, float("-inf"))
    # A fully masked row would be softmax([-inf, ..., -inf]) = NaN: give it
    # harmless finite scores here and zero its weights below.
    scores = scores.masked_fill(~has_any_key, 0.0)
    weights = softmax_over_keys(scores)  # torch.softmax(scores, dim=-1)
    return weights.masked_fill(~mask, 0.0)


def attend(
    scores: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights from scores, then the weighted average of the values.

    Args:
        scores: (..., L, S) how well each query matches each key.
        value: (..., S, Dv) one value per key.
        mask: bool, broadcastable to (..., L, S); True = may attend.

    Returns:
        ``(context, weights)``: context (..., L, Dv), one weighted average of
        the values per query, and weights (..., L, S).

    Examples:
        >>> scores = torch.tensor([[0.0, 0.0]])            # one query, two keys
        >>> value = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # two values, Dv = 2
        >>> context, weights = attend(scores, value)
        >>> weights, context
        (tensor([[0.5000, 0.5000]]), tensor([[0.5000, 0.5000]]))
    """
    if scores.shape[-1] != value.shape[-2]:
        raise ValueError(
            f"scores (..., L, S) and value (..., S, Dv) disagree on S: "
            f"scores {tuple(scores.shape)}, value {tuple(value.shape)}"
        )
    try:
        torch.broadcast_shapes(scores.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the batch dimensions of scores {tuple(scores.shape)} and value "
            f"{tuple(value.shape)} do not broadcast"
        ) from None
    weights = masked_softmax(scores, mask)  # (..., L, S)
    context = weights @ value  # (..., L, S) x (..., S, Dv) -> (..., L, Dv)
    return context, weights
# --8<-- [end:attend]


SHORT_ROW = 16
"""Rows shorter than this are padded by
[`softmax_over_keys`][attnprimer.attention.softmax_over_keys]:
the width, in float32 numbers, of the widest vector registers (AVX-512) torch 2.13 uses on a CPU."""


# --8<-- [start:softmax_over_keys]
def softmax_over_keys(scores: torch.Tensor) -> torch.Tensor:
    """``torch.softmax(scores, dim=-1)``, padded to 16 keys when the rows are shorter.

    On a CPU, torch 2.13 computes the softmax of a row shorter than its vector width (16
    float32 numbers with AVX-512, 8 with AVX2) one number at a time. Measured once, when this
    was written, on a 2-core Intel Xeon with AVX-512 (one thread, 4,000 rows; not re-measured):
    781 µs for rows of 11 keys, 69 µs for rows of 16, and 95 µs for the rows of 11 padded to 16.
    The toy tasks attend over 10 to 15 keys; on that machine the softmax and its gradient were
    then a quarter of the Transformer's training step. ``nox -s bench`` measures yours.

    Padding is exact in the sense that matters: a padded key has the score ``-inf`` and the
    weight ``exp(-inf) = 0``, so the padded row has the same maximum and the same sum. The
    weights differ from ``torch.softmax``'s by rounding only (at most a few units in the last
    place: the sum is added up in a different order), and so do the gradients.

    Args:
        scores: (..., L, S) attention scores.

    Returns:
        Weights (..., L, S): each row sums to 1 (a row of only ``-inf`` is ``NaN``, as in
        ``torch.softmax``).

    Examples:
        >>> scores = torch.tensor([[0.0, 1.0, 2.0]])
        >>> torch.allclose(softmax_over_keys(scores), torch.softmax(scores, dim=-1))
        True
    """
    keys = scores.shape[-1]
    if keys >= SHORT_ROW or scores.device.type != "cpu":
        return torch.softmax(scores, dim=-1)
    # extra keys at -inf: weight exp(-inf) = 0, the same max and sum
    padded = F.pad(scores, (0, SHORT_ROW - keys), value=float("-inf"))
    return torch.softmax(padded, dim=-1)[..., :keys]  # (..., L, S)
# --8<-- [end:softmax_over_keys]


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    """Raise unless ``mask`` is boolean and broadcasts to ``scores_shape``."""
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(
            f"mask {tuple(mask.shape)} does not broadcast to the scores (..., L, S) "
            f"{tuple(scores_shape)}"
        )
