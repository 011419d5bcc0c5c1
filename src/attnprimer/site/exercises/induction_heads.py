"""The exercise of the induction-heads lab: the induction score of a head, from its weights.

The checker is in [`checker`][attnprimer.site.exercises.checker]; the package
[`attnprimer.site.exercises`][attnprimer.site.exercises] collects this module's ``EXERCISES``
with the other labs', so ``exercises.check("induction_score", fn)`` works like every other check.

* ``induction_score(weights, first, repeat, length)``: one head's weights (B, L, L) over
  sequences whose segment of ``length`` letters starts at ``first`` and again at ``repeat``
  (each (B,)); the mean weight that a query in the repeat, at ``repeat + j`` for j = 0 ..
  length - 2, puts on the position after its letter's earlier occurrence, ``first + j + 1``
  ([`induction_score`][attnprimer.site.experiments.induction_heads.induction_score]). The known
  mistakes: the offset one short (the earlier occurrence itself, not the letter after it), the
  queries of the first occurrence instead of the repeat, and the repeat's last letter counted
  (whose next letter is not in the segment).

Examples:
    >>> from attnprimer.site.exercises import check
    >>> def induction_score(weights, first, repeat, length):
    ...     scores = []
    ...     for b in range(weights.shape[0]):
    ...         for j in range(int(length[b]) - 1):
    ...             query = int(repeat[b]) + j
    ...             scores.append(weights[b, query, int(first[b]) + j + 1])
    ...     return torch.stack(scores).mean()
    >>> check("induction_score", induction_score)
    ✓ induction_score matches the reference on 4 cases.
"""

from __future__ import annotations

import torch

from attnprimer.site.exercises.checker import Case, Exercise, Mistake
from attnprimer.site.experiments.induction_heads import induction_score as reference_score
from attnprimer.tasks.induction import Repeats

__all__ = ["EXERCISES", "INDUCTION_SCORE", "induction_score"]


def _repeats(weights, first, repeat, length) -> Repeats:
    tokens = torch.zeros(weights.shape[0], weights.shape[1] + 1, dtype=torch.long)
    return Repeats(tokens, first, repeat, length)


def induction_score(weights: torch.Tensor, first: torch.Tensor, repeat: torch.Tensor,
                    length: torch.Tensor) -> torch.Tensor:
    """The reference: the package's score, as a tensor ()."""
    return torch.tensor(reference_score(weights, _repeats(weights, first, repeat, length)))


def _cases() -> list[Case]:
    """Random causal weights over sequences with a segment repeated, at several places."""
    generator = torch.Generator().manual_seed(39)
    cases = []
    for batch, size in ((1, 10), (3, 16), (4, 20), (2, 31)):
        length = torch.randint(3, size // 2 + 1, (batch,), generator=generator)
        first = (torch.rand(batch, generator=generator) * (size + 1 - 2 * length)).long()
        room = size + 1 - length - (first + length) + 1
        repeat = first + length + (torch.rand(batch, generator=generator) * room).long()
        scores = torch.randn(batch, size, size, generator=generator)
        mask = torch.ones(size, size, dtype=torch.bool).tril()
        weights = scores.masked_fill(~mask, -torch.inf).softmax(dim=-1)  # (B, L, L)
        cases.append(Case({"weights": weights, "first": first, "repeat": repeat,
                           "length": length}))
    return cases


def _score(weights, first, repeat, length, *, shift=1, start="repeat", last=False):
    """The score with one thing changed: the offset, the queries' occurrence, the last letter."""
    values = []
    for b in range(weights.shape[0]):
        begin = int(repeat[b] if start == "repeat" else first[b])
        for j in range(int(length[b]) - (0 if last else 1)):
            query = begin + j
            if query >= weights.shape[1]:
                continue
            key = max(0, query - int(repeat[b] - first[b]) + shift)
            values.append(weights[b, query, key])
    return torch.stack(values).mean()


INDUCTION_SCORE = Exercise(
    name="induction_score",
    signature="induction_score(weights, first, repeat, length) -> () the mean weight on the "
              "letter after the earlier occurrence, from weights (B, L, L), first, repeat, "
              "length (B,)",
    reference=induction_score,
    cases=_cases,
    outputs=(("score", "()"),),
    mistakes=(
        Mistake("the offset is one short: the query at repeat + j looked at first + j, the "
                "earlier occurrence of its own letter. An induction head looks one further, at "
                "first + j + 1, the letter that came next: that is the one to copy.",
                lambda *a: _score(*a, shift=0)),
        Mistake("the queries were taken in the first occurrence; the letters there have no "
                "earlier occurrence to copy from. Score the queries of the repeat, repeat + j.",
                lambda *a: _score(*a, start="first")),
        Mistake("the repeat's last letter was counted: at repeat + length - 1 the next letter "
                "is no longer part of the segment, so j runs from 0 to length - 2.",
                lambda *a: _score(*a, last=True)),
    ),
)

EXERCISES = (INDUCTION_SCORE,)
