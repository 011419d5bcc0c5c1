"""The labs' self-checking exercises: compare a reader's function with attnprimer's own.

The labs ask the reader to write the pieces the chapters explain. ``check(name, function)``
runs the reader's function on the exercise's small seeded cases and compares it with the
package's own ([`checker`][attnprimer.site.exercises.checker] says how); ``diagnose`` returns
the same message as text. One module per lab holds its exercises, each module's ``EXERCISES``;
[`EXERCISES`][attnprimer.site.exercises.EXERCISES] collects them here, by name, in the labs'
reading order.

Examples:
    >>> import torch
    >>> def causal_mask(length):
    ...     return torch.ones(length, length, dtype=torch.bool).tril()
    >>> check("causal_mask", causal_mask)
    ✓ causal_mask matches the reference on 4 cases.
    >>> def upside_down(length):
    ...     return torch.ones(length, length, dtype=torch.bool).triu()
    >>> print(diagnose("causal_mask", upside_down))  # doctest: +ELLIPSIS
    ✗ causal_mask: 2 of 4 entries differ from the reference, for length = 2.
      ...
      This looks like a known mistake: the mask is upside down. ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnprimer.site.exercises import (
    attention_at_scale,
    attention_over_images,
    bahdanau,
    checker,
    induction_heads,
    length_generalisation,
    positional_encoding,
    qkv,
    self_attention,
    transformer,
)
from attnprimer.site.exercises.checker import Case, Exercise, ExerciseError, Mistake, Passed

__all__ = ["EXERCISES", "Case", "Exercise", "ExerciseError", "Mistake", "Passed", "check",
           "diagnose"]

_LABS = (bahdanau, qkv, self_attention, positional_encoding, transformer, length_generalisation,
         attention_at_scale, attention_over_images, induction_heads)

EXERCISES: dict[str, Exercise] = {
    exercise.name: exercise for lab in _LABS for exercise in lab.EXERCISES}
"""Every exercise of the labs, by the name of the function the reader writes."""


def check(exercise: str | Exercise, function: Callable[..., Any]) -> Passed:
    """Check the reader's ``function`` against the exercise of that name (or that exercise).

    Returns:
        A [`Passed`][attnprimer.site.exercises.checker.Passed] that prints one line, when
        every case agrees.

    Raises:
        ExerciseError: at the first disagreement, saying precisely what is wrong.
        KeyError: for a name no lab has.
    """
    return checker.check(_exercise(exercise), function)


def diagnose(exercise: str | Exercise, function: Callable[..., Any]) -> str:
    """What [`check`][attnprimer.site.exercises.check] would say, as text, without raising.

    The labs use it to show what the message for a common mistake looks like.
    """
    return checker.diagnose(_exercise(exercise), function)


def _exercise(exercise: str | Exercise) -> Exercise:
    if isinstance(exercise, Exercise):
        return exercise
    if exercise not in EXERCISES:
        raise KeyError(f"no exercise {exercise!r}; the exercises are {', '.join(EXERCISES)}")
    return EXERCISES[exercise]
