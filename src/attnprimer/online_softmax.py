"""The online softmax: one pass over the keys, block by block.

Taught in the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

The stable softmax ([`attnprimer.softmax`][attnprimer.softmax]) reads a row of scores three
times: once for its maximum ``m``, once for the sum ``s = sum_k exp(x_k - m)`` (which needs
``m``), once more to divide. Its statistics need not come from the whole row at once. Two
blocks of one row, with statistics ``(m1, s1)`` and ``(m2, s2)``, combine into those of the
whole row:

    m = max(m1, m2),    s = s1 * exp(m1 - m) + s2 * exp(m2 - m),

because each sum was shifted by its own block's maximum and is shifted again to the common one
([`combine`][attnprimer.online_softmax.combine]). Folding the blocks in one at a time gives the
*online* softmax of Milakov and Gimelshein (2018, "Online normalizer calculation for
softmax"): one pass for the statistics, whatever the length of the row
([`online_statistics`][attnprimer.online_softmax.online_statistics]).

Attention needs the softmax only to average the values, and the average can run along in the
same pass: keep ``total = sum_k exp(x_k - m) v_k`` with the running maximum, and rescale it by
``exp(m_old - m_new)`` whenever the maximum grows
([`online_step`][attnprimer.online_softmax.online_step]). After the last block
``total / s`` is the softmax-weighted average, and ``m + log(s)`` the row's log-sum-exp: no
row of weights was ever held whole. That step is the inner loop of FlashAttention
([`attnprimer.tiled`][attnprimer.tiled]).

Masked keys are scores of ``-inf``. A block whose keys are all masked contributes nothing; a
row whose keys are *all* masked keeps a running maximum of ``-inf`` and a sum of 0, and its
average is 0, as everywhere on this site.

Shape legend: ``...`` any leading dimensions, S keys along the last dimension of the scores,
Dv value dim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import torch

from attnprimer.softmax import SoftmaxStatistics, softmax_statistics

__all__ = [
    "RunningAverage",
    "combine",
    "finish",
    "online_logsumexp",
    "online_softmax",
    "online_statistics",
    "online_step",
    "online_steps",
    "online_weighted_average",
    "start",
]


# --8<-- [start:combine]
def combine(
    first: SoftmaxStatistics, second: SoftmaxStatistics
) -> SoftmaxStatistics:
    """The statistics of a row from those of two blocks of it.

    Args:
        first: [`SoftmaxStatistics`][attnprimer.softmax.SoftmaxStatistics] of one block of
            the rows, as [`softmax_statistics`][attnprimer.softmax.softmax_statistics] returns
            them (maximum 0 and normaliser 0 for a block of only ``-inf``).
        second: the same, of another block of the same rows.

    Returns:
        The statistics of the two blocks together.

    Examples:
        >>> row = torch.tensor([1.0, 3.0, 2.0, 5.0])
        >>> combine(softmax_statistics(row[:2]), softmax_statistics(row[2:]))
        SoftmaxStatistics(maximum=tensor([5.]), normaliser=tensor([1.2034]))
        >>> softmax_statistics(row)
        SoftmaxStatistics(maximum=tensor([5.]), normaliser=tensor([1.2034]))
    """
    # A block with every key masked has no maximum: count it as -inf.
    first_max = torch.where(first.normaliser > 0, first.maximum, -torch.inf)
    second_max = torch.where(second.normaliser > 0, second.maximum, -torch.inf)
    maximum = torch.maximum(first_max, second_max)
    maximum = torch.where(maximum.isfinite(), maximum, 0.0)
    # Each sum was shifted by its own maximum: shift both to the new one.
    normaliser = (first.normaliser * (first_max - maximum).exp()
                  + second.normaliser * (second_max - maximum).exp())
    return SoftmaxStatistics(maximum, normaliser)
# --8<-- [end:combine]


# --8<-- [start:online_statistics]
def online_statistics(
    scores: torch.Tensor, block_size: int
) -> SoftmaxStatistics:
    """The softmax statistics of each row, reading ``block_size`` keys at a time.

    Args:
        scores: (..., S), finite or ``-inf``.
        block_size: keys per block.

    Returns:
        ``SoftmaxStatistics`` with shapes (..., 1), equal to ``softmax_statistics(scores)``.

    Examples:
        >>> online_statistics(torch.tensor([1.0, 3.0, 2.0, 5.0]), block_size=1)
        SoftmaxStatistics(maximum=tensor([5.]), normaliser=tensor([1.2034]))
    """
    _check_block_size(block_size)
    empty = scores.new_zeros(*scores.shape[:-1], 1)  # (..., 1)
    running = SoftmaxStatistics(empty, empty)  # no key read yet
    for begin in range(0, scores.shape[-1], block_size):
        block = scores[..., begin:begin + block_size]  # (..., block)
        running = combine(running, softmax_statistics(block))
    return running
# --8<-- [end:online_statistics]


def online_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    """The softmax of each row, its statistics gathered online (one pass), then one pass to divide.

    Args:
        scores: (..., S), finite or ``-inf``.
        block_size: keys per block.

    Returns:
        Weights (..., S); a row of only ``-inf`` gives zeros.

    Examples:
        >>> online_softmax(torch.tensor([1000.0, 999.0, 998.0]), block_size=2)
        tensor([0.6652, 0.2447, 0.0900])
    """
    maximum, normaliser = online_statistics(scores, block_size)
    return (scores - maximum).exp() / torch.where(normaliser > 0, normaliser, 1.0)


def online_logsumexp(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    """``log(sum(exp(scores)))`` of each row, read in blocks: ``m + log(s)``.

    Args:
        scores: (..., S), finite or ``-inf``.
        block_size: keys per block.

    Returns:
        (...); ``-inf`` for a row of only ``-inf``, as ``torch.logsumexp`` gives.

    Examples:
        >>> online_logsumexp(torch.tensor([1000.0, 999.0, 998.0]), block_size=1)
        tensor(1000.4076)
    """
    maximum, normaliser = online_statistics(scores, block_size)
    return (maximum + normaliser.log()).squeeze(-1)


class RunningAverage(NamedTuple):
    """What the online softmax carries from block to block when it averages values.

    One running average per row of scores (per query, in attention), R rows.

    Attributes:
        maximum: (..., R, 1) the largest score read so far; ``-inf`` while every key read
            was masked.
        normaliser: (..., R, 1) ``sum_k exp(x_k - maximum)`` over the keys read.
        total: (..., R, Dv) ``sum_k exp(x_k - maximum) v_k`` over the keys read.
    """

    maximum: torch.Tensor
    normaliser: torch.Tensor
    total: torch.Tensor


def start(rows: torch.Size | tuple[int, ...], value_dim: int,
          like: torch.Tensor) -> RunningAverage:
    """The running average before any key is read: maximum ``-inf``, sums 0.

    Args:
        rows: the leading shape (..., R) of the scores, one running average per row.
        value_dim: Dv.
        like: a tensor whose dtype and device the state takes.

    Examples:
        >>> start((2,), 3, torch.zeros(1)).total.shape
        torch.Size([2, 3])
    """
    maximum = like.new_full((*rows, 1), -torch.inf)  # (..., R, 1)
    return RunningAverage(maximum, like.new_zeros((*rows, 1)),
                          like.new_zeros((*rows, value_dim)))


# --8<-- [start:online_step]
def online_step(
    running: RunningAverage, scores: torch.Tensor, values: torch.Tensor
) -> RunningAverage:
    """Read one block of keys for R rows: rescale what was kept, add the block.

    Args:
        running: the state after the blocks before.
        scores: (..., R, block) this block's scores, ``-inf`` where masked.
        values: (..., block, Dv) this block's values.

    Returns:
        The state after this block.

    Examples:
        >>> state = start((1,), 1, torch.zeros(1))
        >>> state = online_step(state, torch.tensor([[0.0]]), torch.tensor([[4.0]]))
        >>> online_step(state, torch.tensor([[0.0]]), torch.tensor([[2.0]])).total
        tensor([[6.]])
    """
    block_max = scores.amax(dim=-1, keepdim=True)  # (..., R, 1)
    maximum = torch.maximum(running.maximum, block_max)
    # Nothing unmasked read yet: shift by 0, so exp(-inf - 0) = 0.
    shift = torch.where(maximum.isfinite(), maximum, 0.0)
    rescale = (running.maximum - shift).exp()  # (..., R, 1), <= 1
    exponentials = (scores - shift).exp_()  # (..., R, block), in [0, 1]
    normaliser = running.normaliser * rescale + exponentials.sum(
        dim=-1, keepdim=True)
    # (..., R, block) x (..., block, Dv) -> (..., R, Dv)
    total = running.total * rescale + exponentials @ values
    return RunningAverage(maximum, normaliser, total)
# --8<-- [end:online_step]


# --8<-- [start:finish]
def finish(running: RunningAverage) -> tuple[torch.Tensor, torch.Tensor]:
    """The weighted average and the log-sum-exp of each row, after its last block.

    Returns:
        ``(average, logsumexp)``: (..., Dv) and (...); a row with every key masked gives
        an average of zeros and a log-sum-exp of ``-inf``.

    Examples:
        >>> state = RunningAverage(torch.tensor([[0.0]]), torch.tensor([[2.0]]),
        ...                        torch.tensor([[6.0]]))
        >>> finish(state)
        (tensor([[3.]]), tensor([0.6931]))
    """
    seen = running.normaliser > 0  # (..., 1): False if every key was masked
    average = running.total / torch.where(seen, running.normaliser, 1.0)
    logsumexp = running.maximum + running.normaliser.log()  # -inf if none
    return average, logsumexp.squeeze(-1)
# --8<-- [end:finish]


def online_steps(scores: torch.Tensor, values: torch.Tensor,
                 block_size: int) -> Iterator[RunningAverage]:
    """The running state after each block of keys: what the chapter's walk-through draws.

    Args:
        scores: (..., S), finite or ``-inf``.
        values: (..., S, Dv); leading dims broadcast with those of ``scores``.
        block_size: keys per block.

    Yields:
        The [`RunningAverage`][attnprimer.online_softmax.RunningAverage] after blocks 1, 2,
        ..., each row of ``scores`` as one row R = 1: maximum (..., 1, 1), total (..., 1, Dv).

    Examples:
        >>> states = list(online_steps(torch.zeros(5), torch.ones(5, 1), block_size=2))
        >>> [float(state.normaliser) for state in states]
        [2.0, 4.0, 5.0]
    """
    _check_block_size(block_size)
    if scores.shape[-1] != values.shape[-2]:
        raise ValueError(f"scores (..., S) and values (..., S, Dv) disagree on S: scores "
                         f"{tuple(scores.shape)}, values {tuple(values.shape)}")
    rows = torch.broadcast_shapes(scores.shape[:-1], values.shape[:-2])
    running = start((*rows, 1), values.shape[-1], scores)  # R = 1 row each
    for begin in range(0, scores.shape[-1], block_size):
        end = begin + block_size
        # one row per score row: (..., 1, block) and (..., block, Dv)
        yield (running := online_step(running, scores[..., None, begin:end],
                                      values[..., begin:end, :]))


def online_weighted_average(scores: torch.Tensor, values: torch.Tensor,
                            block_size: int) -> torch.Tensor:
    """``softmax(scores) @ values``, in one pass over blocks of keys.

    Args:
        scores: (..., S), finite or ``-inf``.
        values: (..., S, Dv).
        block_size: keys per block.

    Returns:
        (..., Dv); zeros for a row of only ``-inf``.

    Examples:
        >>> scores = torch.tensor([0.0, 0.0, 1000.0])
        >>> online_weighted_average(scores, torch.tensor([[1.0], [2.0], [3.0]]), block_size=2)
        tensor([3.])
    """
    *_, last = online_steps(scores, values, block_size)
    return finish(last)[0].squeeze(-2)  # (..., 1, Dv) -> (..., Dv)


def _check_block_size(block_size: int) -> None:
    if block_size < 1:
        raise ValueError(f"block_size must be a positive number of keys, got {block_size}")
