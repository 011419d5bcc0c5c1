"""The numerically stable softmax and log-sum-exp.

Taught in the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

The softmax of a row of scores ``x`` is ``exp(x_j) / sum_k exp(x_k)``. Computed as written, it
fails on ordinary inputs: in float32, ``exp`` overflows to ``inf`` above about 88.7, and
``inf / inf`` is ``NaN``; far below zero every ``exp`` underflows to 0, and ``0 / 0`` is
``NaN`` too. Subtracting any constant ``c`` from every score of a row changes nothing,

    exp(x_j - c) / sum_k exp(x_k - c) = exp(x_j) / sum_k exp(x_k),

so the stable softmax subtracts the row's maximum ``m``: the largest exponent is then
``exp(0) = 1``, nothing overflows, and the sum is at least 1. The same two numbers give the
log-sum-exp, the log of the softmax's denominator,

    logsumexp(x) = m + log(sum_k exp(x_k - m)),

which is what a cross-entropy loss needs and what the online softmax of the chapter on
efficient attention keeps per row while it reads the keys block by block:
[`softmax_statistics`][attnprimer.softmax.softmax_statistics] returns exactly that pair, the
row maximum and the sum of the shifted exponentials.

Masked keys are scores of ``-inf`` (weight ``exp(-inf) = 0``). A row whose scores are *all*
``-inf`` (a query that may attend to nothing) has no finite maximum; here its maximum is
taken as 0, so its log-sum-exp is ``-inf`` (as ``torch.logsumexp`` gives) and its softmax
weights are all 0 (where ``torch.softmax`` gives ``NaN``; the site's convention, as in
[`masked_softmax`][attnprimer.attention.masked_softmax]). Scores of ``+inf`` or ``NaN`` are
not supported.

Shape legend: ``...`` any leading dimensions; the softmax runs along ``dim`` (the keys, S,
by default the last).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["SoftmaxStatistics", "logsumexp", "naive_softmax", "softmax_statistics",
           "stable_softmax"]


class SoftmaxStatistics(NamedTuple):
    """The two numbers per row from which a softmax and its log-sum-exp are made.

    Attributes:
        maximum: the row maximum ``m`` (0 for a row of only ``-inf``), with ``dim`` kept
            (size 1).
        normaliser: ``sum_k exp(x_k - m)``, with ``dim`` kept; at least 1 unless the row is
            all ``-inf`` (then 0).
    """

    maximum: torch.Tensor
    normaliser: torch.Tensor


def naive_softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """The softmax as written, ``exp(x) / sum(exp(x))``: correct for small scores only.

    Kept to show what goes wrong: large scores overflow ``exp`` and give ``NaN``.

    Examples:
        >>> naive_softmax(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.0900, 0.2447, 0.6652])
        >>> naive_softmax(torch.tensor([1000.0, 999.0, 998.0]))   # exp(1000) = inf
        tensor([nan, nan, nan])
    """
    exponentials = scores.exp()
    return exponentials / exponentials.sum(dim=dim, keepdim=True)


# --8<-- [start:statistics]
def softmax_statistics(
    scores: torch.Tensor, dim: int = -1
) -> SoftmaxStatistics:
    """The row maximum and the sum of the exponentials shifted by it.

    Args:
        scores: any shape; finite or ``-inf`` (masked).
        dim: the dimension to normalise over.

    Returns:
        ``SoftmaxStatistics(maximum, normaliser)``, each with ``dim`` kept (size 1).

    Examples:
        >>> softmax_statistics(torch.tensor([1000.0, 999.0, 998.0]))
        SoftmaxStatistics(maximum=tensor([1000.]), normaliser=tensor([1.5032]))
        >>> softmax_statistics(torch.tensor([-torch.inf, -torch.inf]))
        SoftmaxStatistics(maximum=tensor([0.]), normaliser=tensor([0.]))
    """
    maximum = scores.amax(dim=dim, keepdim=True)  # the row maxima
    # Every key masked (-inf): no finite maximum, so shift by 0.
    maximum = torch.where(maximum.isfinite(), maximum, 0.0)
    normaliser = (scores - maximum).exp().sum(dim=dim, keepdim=True)
    return SoftmaxStatistics(maximum, normaliser)
# --8<-- [end:statistics]


# --8<-- [start:stable_softmax]
def stable_softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax along ``dim`` after subtracting each row's maximum: nothing overflows.

    Args:
        scores: any shape; finite or ``-inf`` (masked).
        dim: the dimension to normalise over.

    Returns:
        Weights of the shape of ``scores``; each row sums to 1, or is all 0 if all ``-inf``.

    Examples:
        >>> stable_softmax(torch.tensor([1000.0, 999.0, 998.0]))
        tensor([0.6652, 0.2447, 0.0900])
        >>> stable_softmax(torch.tensor([[0.0, -torch.inf], [-torch.inf, -torch.inf]]))
        tensor([[1., 0.],
                [0., 0.]])
    """
    maximum, normaliser = softmax_statistics(scores, dim)
    exponentials = (scores - maximum).exp()  # in [0, 1]
    # Every key masked: normaliser 0, exponentials 0; divide by 1.
    return exponentials / torch.where(normaliser > 0, normaliser, 1.0)
# --8<-- [end:stable_softmax]


# --8<-- [start:logsumexp]
def logsumexp(
    scores: torch.Tensor, dim: int = -1, keepdim: bool = False
) -> torch.Tensor:
    """``log(sum(exp(scores)))`` along ``dim``, computed as ``m + log(sum(exp(x - m)))``.

    Args:
        scores: any shape; finite or ``-inf`` (masked).
        dim: the dimension to reduce.
        keepdim: keep ``dim`` with size 1.

    Returns:
        The log-sum-exp of each row; ``-inf`` for a row of only ``-inf``.

    Examples:
        >>> logsumexp(torch.tensor([1000.0, 999.0, 998.0]))      # 1000 + log(1.5032)
        tensor(1000.4076)
        >>> logsumexp(torch.tensor([[0.0, 0.0], [-torch.inf, -torch.inf]]))
        tensor([0.6931,   -inf])
    """
    maximum, normaliser = softmax_statistics(scores, dim)
    # log(0) = -inf for a fully masked row
    result = maximum + normaliser.log()
    return result if keepdim else result.squeeze(dim)
# --8<-- [end:logsumexp]
