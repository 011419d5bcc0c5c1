"""The checker of the labs' exercises: compare a reader's function with attnprimer's own.

[`check`][attnprimer.site.exercises.checker.check] runs the reader's function on an exercise's
small seeded cases, compares every output with the reference implementation, and when they
disagree says precisely how: which case, which output, its shape against the expected one, how
many entries differ, where, and by how much. Each exercise also knows the mistakes people make
most often, as small wrong implementations; when the reader's output equals one of them, the
message names the mistake. The exercises themselves are in one module per chapter, collected
by name in [`attnprimer.site.exercises`][attnprimer.site.exercises], whose ``check`` the labs
call.

Examples:
    >>> import torch
    >>> def causal_mask(length):
    ...     return torch.ones(length, length, dtype=torch.bool).tril()
    >>> def upside_down(length):
    ...     return torch.ones(length, length, dtype=torch.bool).triu()
    >>> exercise = Exercise(
    ...     name="causal_mask", signature="causal_mask(length) -> (L, L)",
    ...     reference=causal_mask, cases=lambda: [Case({"length": 3})],
    ...     outputs=(("mask", "(L, L)"),),
    ...     mistakes=(Mistake("the mask is upside down.", upside_down),))
    >>> check(exercise, causal_mask)
    ✓ causal_mask matches the reference on 1 cases.
    >>> print(diagnose(exercise, upside_down))  # doctest: +ELLIPSIS
    ✗ causal_mask: 6 of 9 entries differ from the reference, for length = 3.
      ...
      This looks like a known mistake: the mask is upside down.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["RELATIVE_TOLERANCE", "Case", "Exercise", "ExerciseError", "Mistake", "Passed",
           "check", "diagnose", "randn"]


# --- what an exercise is -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One call of the function under test: its positional arguments, by parameter name."""

    arguments: dict[str, Any]

    def describe(self) -> str:
        """``query (2, 3, 4), key (2, 5, 4) and no mask``: shapes for tensors, values otherwise."""
        parts = []
        for name, value in self.arguments.items():
            if value is None:
                parts.append(f"no {name}")
            elif isinstance(value, torch.Tensor):
                parts.append(f"{name} {tuple(value.shape)}")
            else:
                parts.append(f"{name} = {value!r}")
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass(frozen=True)
class Mistake:
    """A common wrong answer: what it gets wrong, and a function that makes the mistake."""

    explanation: str
    function: Callable[..., Any]


@dataclass(frozen=True)
class Exercise:
    """A function for the reader to write, with its reference, test cases and known mistakes.

    Args:
        name: the function's name, as the lab asks for it.
        signature: how it is called and what it returns.
        reference: the correct implementation (from this package).
        cases: builds the (seeded) cases the reader's function is run on.
        outputs: each output's name and shape, e.g. ``("weights", "(..., L, S)")``.
        mistakes: common wrong answers, recognised by their outputs.
        atol: absolute tolerance of the comparison (the relative one is 1e-4).
    """

    name: str
    signature: str
    reference: Callable[..., Any]
    cases: Callable[[], list[Case]]
    outputs: tuple[tuple[str, str], ...]
    mistakes: tuple[Mistake, ...] = ()
    atol: float = 1e-5


class ExerciseError(AssertionError):
    """The reader's function disagrees with the reference; the message says how."""

    def _render_traceback_(self) -> list[str]:
        # IPython (and so Jupyter) shows this instead of a traceback: the message is the
        # whole story, and a traceback into this module would only hide it.
        return str(self).splitlines()


@dataclass(frozen=True)
class Passed:
    """What [`check`][attnprimer.site.exercises.checker.check] returns when every case agrees."""

    name: str
    cases: int

    def __repr__(self) -> str:
        return f"✓ {self.name} matches the reference on {self.cases} cases."


RELATIVE_TOLERANCE = 1e-4


# --- checking ----------------------------------------------------------------------------------


def check(exercise: Exercise, function: Callable[..., Any]) -> Passed:
    """Run ``function`` on the exercise's cases and compare it with the reference.

    Returns:
        A [`Passed`][attnprimer.site.exercises.checker.Passed] that prints one line, when
        every case agrees.

    Raises:
        ExerciseError: at the first disagreement, saying precisely what is wrong.
    """
    problem = _first_problem(exercise, function)
    if problem is not None:
        raise ExerciseError(problem)
    return Passed(exercise.name, len(exercise.cases()))


def diagnose(exercise: Exercise, function: Callable[..., Any]) -> str:
    """What [`check`][attnprimer.site.exercises.checker.check] would say, as text, without
    raising. The labs use it to show what the message for a common mistake looks like."""
    problem = _first_problem(exercise, function)
    return repr(Passed(exercise.name, len(exercise.cases()))) if problem is None else problem


def _first_problem(exercise: Exercise, function: Callable[..., Any]) -> str | None:
    """The message for the first case on which ``function`` goes wrong, or None."""
    problem = _find_problem(exercise, function)
    return None if problem is None else _wrap(problem)


def _wrap(message: str, width: int = 78) -> str:
    """Fold long lines, keeping each line's indent (plus two for its continuations)."""
    lines = []
    for line in message.splitlines():
        indent = " " * (len(line) - len(line.lstrip()))
        lines.append(textwrap.fill(line, width, subsequent_indent=indent + "  ",
                                   break_long_words=False, break_on_hyphens=False))
    return "\n".join(lines)


def _find_problem(exercise: Exercise, function: Callable[..., Any]) -> str | None:
    for case in exercise.cases():
        expected = _as_outputs(exercise.reference(*case.arguments.values()))
        arguments = {name: _copy(value) for name, value in case.arguments.items()}
        try:
            got = function(*arguments.values())
        except NotImplementedError:
            return (f"✗ {exercise.name} is not written yet: replace `raise NotImplementedError` "
                    f"in its cell with your code, run that cell, then run this check again.")
        except Exception as error:  # noqa: BLE001  the reader's code failed: say how and on what
            return (f"✗ {exercise.name} raised {type(error).__name__}: {error}\n"
                    f"  when called with {case.describe()}.{_error_hint(error)}")
        changed = [name for name, value in case.arguments.items()
                   if isinstance(value, torch.Tensor) and not torch.equal(arguments[name], value)]
        if changed:
            return (f"✗ {exercise.name} changed its input {', '.join(changed)} in place; "
                    f"compute new tensors instead (avoid `+=`, `.masked_fill_` and friends).")
        problem = _compare(exercise, case, got, expected)
        if problem is not None:
            return problem + _recognise_mistake(exercise, function)
    return None


def _as_outputs(result: Any) -> tuple[Any, ...]:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _copy(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _error_hint(error: Exception) -> str:
    if "view size is not compatible" in str(error):
        return ("\n  After a transpose the tensor's memory is no longer in order, and `.view` "
                "cannot regroup it: use `.reshape` (or `.contiguous().view`).")
    return ""


def _compare(exercise: Exercise, case: Case, got: Any, expected: tuple[Any, ...]) -> str | None:
    """Compare one call's outputs with the reference's; the message, or None if they agree."""
    head = f"✗ {exercise.name}"
    where = f"for {case.describe()}"
    names = [name for name, _ in exercise.outputs]
    if len(expected) > 1 and (not isinstance(got, tuple | list) or len(got) != len(expected)):
        kind = (f"{len(got)} values" if isinstance(got, tuple | list)
                else f"a {type(got).__name__}")
        return f"{head} should return a tuple ({', '.join(names)}); it returned {kind}."
    got = _as_outputs(got)[:len(expected)]  # a single output's extra return values are not read
    for (name, shape), mine, reference in zip(exercise.outputs, got, expected, strict=True):
        label = f"{head}: {name}" if len(expected) > 1 else head
        if not isinstance(mine, torch.Tensor):
            return f"{label} should be a torch.Tensor; it is a {type(mine).__name__}."
        if mine.shape != reference.shape:
            return (f"{label} has shape {tuple(mine.shape)}; expected {tuple(reference.shape)}, "
                    f"that is {shape}, {where}.{_shape_hint(mine.shape, reference.shape)}")
        if mine.dtype != reference.dtype:
            return (f"{label} has dtype {mine.dtype}; expected {reference.dtype}."
                    f"{_dtype_hint(mine, reference.dtype)}")
        problem = _compare_values(mine, reference, exercise.atol)
        if problem is not None:
            return f"{label}: {problem}, {where}.\n" + _examples(mine, reference, exercise.atol)
    return None


def _shape_hint(got: torch.Size, expected: torch.Size) -> str:
    if sorted(got) == sorted(expected):
        return "\n  The right sizes in another order: a transpose missing, or one too many?"
    if math.prod(got) == math.prod(expected):
        return "\n  The right number of entries, grouped differently: check each reshape."
    return ""


def _dtype_hint(got: torch.Tensor, expected: torch.dtype) -> str:
    if expected == torch.bool and got.is_floating_point() and ((got == 0) | got.isneginf()).all():
        return (" A float mask of 0 and -inf is an additive mask, added to the scores;"
                " this one is boolean: True = may attend.")
    if expected == torch.bool:
        return " Masks are boolean: True = may attend (compare, or call .bool())."
    if expected == torch.float32:
        return " Models compute in float32, torch's default: convert with .float()."
    return ""


def _differs(got: torch.Tensor, expected: torch.Tensor, atol: float) -> torch.Tensor:
    """Where ``got`` is not close to ``expected`` (a NaN matches only a NaN)."""
    if expected.dtype == torch.bool:
        return got != expected
    return ~torch.isclose(got, expected, rtol=RELATIVE_TOLERANCE, atol=atol, equal_nan=True)


def _compare_values(got: torch.Tensor, expected: torch.Tensor, atol: float) -> str | None:
    wrong = _differs(got, expected, atol)
    count = int(wrong.sum())
    if count == 0:
        return None
    nans = int((got.isnan() & ~expected.isnan()).sum()) if got.is_floating_point() else 0
    if nans:
        return (f"{nans} of {got.numel()} entries are NaN (inf - inf and 0 * inf give NaN: "
                f"a softmax over a fully masked row, or an exp() of an infinite difference?)")
    return f"{count} of {got.numel()} entries differ from the reference"


def _examples(got: torch.Tensor, expected: torch.Tensor, atol: float, shown: int = 3) -> str:
    """A few wrong entries, the worst first, and a constant ratio if there is one."""
    wrong = _differs(got, expected, atol)
    if expected.dtype == torch.bool:
        lines = []
        for value in (True, False):
            where = (wrong & (expected == value)).nonzero().tolist()
            if where:
                places = ", ".join(str(index) for index in where[:shown])
                more = f" and {len(where) - shown} more" if len(where) > shown else ""
                lines.append(f"  {value} in the reference, {not value} in yours at {places}{more}")
        return "\n".join(lines)
    difference = (got.double() - expected.double()).abs().nan_to_num(nan=math.inf)
    order = difference.flatten().argsort(descending=True)[:shown]
    lines = []
    for flat in order.tolist():
        index = list(torch.unravel_index(torch.tensor(flat), got.shape)) if got.dim() else []
        position = [int(i) for i in index]
        mine, reference = got.flatten()[flat].item(), expected.flatten()[flat].item()
        off = "" if math.isnan(mine) else f" (off by {abs(mine - reference):.3g})"
        lines.append(f"  at {position}: yours {mine:.6g}, reference {reference:.6g}{off}")
    ratio = _constant_ratio(got, expected)
    if ratio is not None:
        lines.append(f"  Every entry is {ratio:.4g} × the reference: "
                     "a scale factor missing or extra?")
    return "\n".join(lines)


def _constant_ratio(got: torch.Tensor, expected: torch.Tensor) -> float | None:
    usable = expected.abs() > 1e-3
    if not usable.any() or not got.isfinite().all():
        return None
    ratios = got[usable].double() / expected[usable].double()
    ratio = ratios.median().item()
    if abs(ratio - 1) > 1e-3 and torch.allclose(ratios, torch.full_like(ratios, ratio), rtol=1e-3):
        return ratio
    return None


def _recognise_mistake(exercise: Exercise, function: Callable[..., Any]) -> str:
    """Name the known mistake whose outputs equal the function's on every case, if one does.

    One case can fit several mistakes (a 1 x 1 mask has no upper or lower triangle to get
    wrong), so a mistake is named only when it agrees with the reader's function on all of them.
    """
    cases = exercise.cases()
    readers = [_try(function, case) for case in cases]
    for mistake in exercise.mistakes:
        if all(_same(mine, _try(mistake.function, case))
               for mine, case in zip(readers, cases, strict=True)):
            return f"\n  This looks like a known mistake: {mistake.explanation}"
    return ""


def _try(function: Callable[..., Any], case: Case) -> tuple[Any, ...] | None:
    try:
        return _as_outputs(function(*(_copy(value) for value in case.arguments.values())))
    except Exception:  # noqa: BLE001  a function that fails on a case matches no mistake there
        return None


def _same(mine: tuple[Any, ...] | None, theirs: tuple[Any, ...] | None) -> bool:
    if mine is None or theirs is None or len(mine) != len(theirs):
        return False
    return all(isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
               and a.dtype == b.dtype and not _differs(a, b, 1e-5).any()
               for a, b in zip(mine, theirs, strict=True))


def randn(generator: torch.Generator, *shape: int) -> torch.Tensor:
    """Standard normal entries of ``shape`` from ``generator``: the exercises' seeded cases."""
    return torch.randn(*shape, generator=generator)

