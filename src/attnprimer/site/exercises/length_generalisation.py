"""The exercise of the length-generalisation lab: the causal average that NoPE counts with.

The checker is in [`checker`][attnprimer.site.exercises.checker]; the package
[`attnprimer.site.exercises`][attnprimer.site.exercises] collects this module's ``EXERCISES``
with the other labs', so ``exercises.check("causal_average", fn)`` works like every other check.

* ``causal_average(values)``: what a head whose scores are all equal returns under a causal
  mask, for values (L, Dv): row i is the mean of rows 0..i, the first-layer computation behind
  [`nope_position_signal`][attnprimer.position_schemes.nope_position_signal]. The known
  mistakes: no mask (every row the mean of all), the running sum instead of the mean, the sum
  divided by L, the mask upside down (rows i..L-1) and the row's own value left out.

Examples:
    >>> from attnprimer.site.exercises import check
    >>> def causal_average(values):
    ...     return values.cumsum(dim=0) / torch.arange(1, len(values) + 1)[:, None]
    >>> check("causal_average", causal_average)
    ✓ causal_average matches the reference on 4 cases.
"""

from __future__ import annotations

import torch

from attnprimer.attention import attend
from attnprimer.masks import causal_mask
from attnprimer.site.exercises.checker import Case, Exercise, Mistake

__all__ = ["CAUSAL_AVERAGE", "EXERCISES", "causal_average"]


def causal_average(values: torch.Tensor) -> torch.Tensor:
    """The reference: equal scores, the causal mask, the package's attention: (L, Dv)."""
    length = values.shape[0]
    context, _ = attend(torch.zeros(length, length), values, causal_mask(length))
    return context


def _cases() -> list[Case]:
    """The start token's one-hot value (the chapter's argument), then random values."""
    generator = torch.Generator().manual_seed(15)
    start = torch.zeros(5, 1)
    start[0] = 1.0
    return [Case({"values": start}),
            *(Case({"values": torch.randn(length, dim, generator=generator)})
              for length, dim in ((3, 2), (6, 1), (7, 3)))]


def _positions(values: torch.Tensor) -> torch.Tensor:
    return torch.arange(1, values.shape[0] + 1, dtype=values.dtype)[:, None]  # (L, 1): i + 1


def _own_left_out(values: torch.Tensor) -> torch.Tensor:
    earlier = values.cumsum(dim=0) - values  # rows 0..i-1
    return earlier / (_positions(values) - 1).clamp(min=1)


CAUSAL_AVERAGE = Exercise(
    name="causal_average",
    signature="causal_average(values) -> (L, Dv): row i the mean of values[0..i], "
              "from values (L, Dv)",
    reference=causal_average,
    cases=_cases,
    outputs=(("average", "(L, Dv)"),),
    mistakes=(
        Mistake("every row is the mean of all L values: the causal mask is missing, and "
                "without it every position reads the same average (order is invisible).",
                lambda values: values.mean(dim=0, keepdim=True).expand_as(values)),
        Mistake("that is the running sum: the weights of a softmax add up to one, so divide "
                "row i by the i + 1 values it may read.",
                lambda values: values.cumsum(dim=0)),
        Mistake("the running sum was divided by L; row i reads only i + 1 values, so "
                "divide by i + 1.", lambda values: values.cumsum(dim=0) / values.shape[0]),
        Mistake("the mask is upside down: row i averaged rows i..L-1, the later positions; "
                "a causal row reads the earlier ones, 0..i.",
                lambda values: values.flip(0).cumsum(dim=0).flip(0)
                / _positions(values).flip(0)),
        Mistake("row i left out its own value: a causal mask lets position i read itself, "
                "so the mean is over rows 0..i.", _own_left_out),
    ),
)

EXERCISES = (CAUSAL_AVERAGE,)
