"""The exercise of the attention-at-scale lab: one step of the online softmax.

The checker is in [`checker`][attnprimer.site.exercises.checker]; the package
[`attnprimer.site.exercises`][attnprimer.site.exercises] collects this module's ``EXERCISES``
with the other labs', so ``exercises.check("online_step", fn)`` works like every other check.

* ``online_step(maximum, normaliser, total, scores, values)``: read one block of keys for R
  rows, as [`online_step`][attnprimer.online_softmax.online_step] does, returning the new
  running maximum, sum and weighted total. The known mistakes: the running sum not rescaled
  (nor the total), the total rescaled but not the sum, the sum but not the total, the rescale
  factor upside down, the block shifted by its own maximum instead of the running one, and the
  running maximum replaced by the block's.

Examples:
    >>> from attnprimer.site.exercises import check
    >>> def online_step(maximum, normaliser, total, scores, values):
    ...     new = torch.maximum(maximum, scores.amax(-1, keepdim=True))
    ...     rescale = (maximum - new).exp()
    ...     exponentials = (scores - new).exp()
    ...     return (new, normaliser * rescale + exponentials.sum(-1, keepdim=True),
    ...             total * rescale + exponentials @ values)
    >>> check("online_step", online_step)
    ✓ online_step matches the reference on 4 cases.
"""

from __future__ import annotations

import torch

from attnprimer.online_softmax import RunningAverage
from attnprimer.online_softmax import online_step as reference_step
from attnprimer.site.exercises.checker import Case, Exercise, Mistake

__all__ = ["EXERCISES", "ONLINE_STEP", "online_step"]


def online_step(maximum: torch.Tensor, normaliser: torch.Tensor, total: torch.Tensor,
                scores: torch.Tensor, values: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference: the state (maximum, normaliser, total) after one more block."""
    return tuple(reference_step(RunningAverage(maximum, normaliser, total), scores, values))


def _cases() -> list[Case]:
    """A fresh state (nothing read: maximum -inf), then states after earlier blocks, some
    with a block whose maximum is above the running one and some below."""
    generator = torch.Generator().manual_seed(16)
    cases = []
    for rows, block, value_dim, fresh in ((2, 3, 1, True), (3, 4, 2, False),
                                          (4, 5, 3, False), (2, 6, 2, False)):
        scores = 3 * torch.randn(rows, block, generator=generator)  # (R, block)
        values = torch.randn(block, value_dim, generator=generator)  # (block, Dv)
        if fresh:
            maximum = torch.full((rows, 1), -torch.inf)
            normaliser, total = torch.zeros(rows, 1), torch.zeros(rows, value_dim)
        else:  # earlier keys: half the rows had a larger maximum, half a smaller one
            maximum = scores.amax(-1, keepdim=True) + torch.tensor(
                [[2.0], [-2.0]]).repeat(rows // 2 + 1, 1)[:rows]
            normaliser = 1 + 2 * torch.rand(rows, 1, generator=generator)
            total = torch.randn(rows, value_dim, generator=generator)
        cases.append(Case({"maximum": maximum, "normaliser": normaliser, "total": total,
                           "scores": scores, "values": values}))
    return cases


def _step(maximum, normaliser, total, scores, values, *, sum_factor=True, total_factor=True,
          upside_down=False, shift_by_block=False, keep_maximum=True):
    block_max = scores.amax(-1, keepdim=True)
    new = torch.maximum(maximum, block_max) if keep_maximum else block_max
    rescale = (new - maximum).exp() if upside_down else (maximum - new).exp()
    exponentials = (scores - (block_max if shift_by_block else new)).exp()
    added = exponentials.sum(-1, keepdim=True)
    return (new, normaliser * (rescale if sum_factor else 1) + added,
            total * (rescale if total_factor else 1) + exponentials @ values)


ONLINE_STEP = Exercise(
    name="online_step",
    signature="online_step(maximum, normaliser, total, scores, values) -> (maximum (R, 1), "
              "normaliser (R, 1), total (R, Dv)), from scores (R, block), values (block, Dv)",
    reference=online_step,
    cases=_cases,
    outputs=(("maximum", "(R, 1)"), ("normaliser", "(R, 1)"), ("total", "(R, Dv)")),
    mistakes=(
        Mistake("neither the running sum nor the total was rescaled. Both were sums of "
                "exp(x - m_old); when the maximum grows to m_new, multiply them by "
                "exp(m_old - m_new) before adding the block.",
                lambda *a: _step(*a, sum_factor=False, total_factor=False)),
        Mistake("the total was rescaled but the running sum was not: the sum of "
                "exp(x - m_old) must be multiplied by exp(m_old - m_new) too, or the "
                "weights no longer add up to one.",
                lambda *a: _step(*a, sum_factor=False)),
        Mistake("the running sum was rescaled but the total was not: the weighted total is a "
                "sum of exp(x - m_old) v, and needs the same factor exp(m_old - m_new).",
                lambda *a: _step(*a, total_factor=False)),
        Mistake("the rescale factor is upside down: exp(m_new - m_old) is at least 1; the "
                "kept sums shrink, by exp(m_old - m_new).",
                lambda *a: _step(*a, upside_down=True)),
        Mistake("the block's exponentials were shifted by the block's own maximum; shift "
                "them by the new running maximum, so that they add to sums shifted the same "
                "way.", lambda *a: _step(*a, shift_by_block=True)),
        Mistake("the running maximum was replaced by the block's maximum; it is the larger "
                "of the two, torch.maximum(maximum, block maximum).",
                lambda *a: _step(*a, keep_maximum=False)),
    ),
)

EXERCISES = (ONLINE_STEP,)
