"""Self-checking exercises: compare a reader's function with attnprimer's own.

The labs ask the reader to write the pieces the chapters explain: additive
attention, scaled dot-product attention, a causal mask, the multi-head split
and merge, and the sinusoidal encoding. [`check`][attnprimer.exercises.check]
runs the reader's function on a few small seeded cases, compares every output
with the reference implementation in this package, and when they disagree says
precisely how: which case, which output, its shape against the expected one,
how many entries differ, where, and by how much. Each exercise also knows the
mistakes people make most often, as small wrong implementations; when the
reader's output equals one of them, the message names the mistake.

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

import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attnprimer.additive import additive_scores
from attnprimer.attention import attend
from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import causal_mask, padding_mask
from attnprimer.multihead import merge_heads, split_heads
from attnprimer.positional import sinusoidal_encoding

__all__ = ["EXERCISES", "Case", "Exercise", "ExerciseError", "Mistake", "Passed", "check",
           "diagnose"]


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
    """What [`check`][attnprimer.exercises.check] returns when every case agrees."""

    name: str
    cases: int

    def __repr__(self) -> str:
        return f"✓ {self.name} matches the reference on {self.cases} cases."


RELATIVE_TOLERANCE = 1e-4


# --- checking ----------------------------------------------------------------------------------


def check(exercise: str | Exercise, function: Callable[..., Any]) -> Passed:
    """Run ``function`` on the exercise's cases and compare it with the reference.

    Returns:
        A [`Passed`][attnprimer.exercises.Passed] that prints one line, when every case agrees.

    Raises:
        ExerciseError: at the first disagreement, saying precisely what is wrong.
    """
    exercise = _exercise(exercise)
    problem = _first_problem(exercise, function)
    if problem is not None:
        raise ExerciseError(problem)
    return Passed(exercise.name, len(exercise.cases()))


def diagnose(exercise: str | Exercise, function: Callable[..., Any]) -> str:
    """What [`check`][attnprimer.exercises.check] would say, as text, without raising.

    The labs use it to show what the message for a common mistake looks like.
    """
    exercise = _exercise(exercise)
    problem = _first_problem(exercise, function)
    return repr(Passed(exercise.name, len(exercise.cases()))) if problem is None else problem


def _exercise(exercise: str | Exercise) -> Exercise:
    if isinstance(exercise, Exercise):
        return exercise
    if exercise not in EXERCISES:
        raise KeyError(f"no exercise {exercise!r}; the exercises are {', '.join(EXERCISES)}")
    return EXERCISES[exercise]


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


# --- the exercises -----------------------------------------------------------------------------


def _randn(generator: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator)


# Scaled dot-product attention ------------------------------------------------------------------


def _attention_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(0)

    def case(query_shape, key_shape, value_dim, mask=None) -> Case:
        key = _randn(generator, *key_shape)
        value = _randn(generator, *key_shape[:-1], value_dim)
        return Case({"query": _randn(generator, *query_shape), "key": key, "value": value,
                     "mask": mask})

    heads_padding = padding_mask([4, 2])[:, None, None, :]  # (B, 1, 1, S): one per sequence
    return [
        case((1, 4), (3, 4), 2),  # one query, three keys
        case((2, 3, 4), (2, 5, 4), 6),  # a batch, L != S, Dk != Dv
        case((2, 4, 8), (2, 4, 8), 8, mask=causal_mask(4)),  # self-attention, causal
        case((2, 3, 4, 8), (2, 3, 4, 8), 5, mask=heads_padding),  # heads, padded keys
    ]


def _sdpa(query, key, value, mask=None):
    return scaled_dot_product_attention(query, key, value, mask)


def _dot_attention_with(scale: Callable[[int], float], *, softmax_dim: int = -1,
                        flip_mask: bool = False, use_mask: bool = True) -> Callable[..., Any]:
    """A hand-written dot-product attention with one thing changed, for the mistakes below."""

    def attention(query, key, value, mask=None):
        scores = query @ key.transpose(-2, -1) * scale(query.shape[-1])  # (..., L, S)
        if mask is not None and use_mask:
            scores = scores.masked_fill(mask if flip_mask else ~mask, float("-inf"))
        weights = torch.softmax(scores, dim=softmax_dim)
        return weights @ value, weights

    return attention


def _root(dim: int) -> float:
    return 1 / math.sqrt(dim)


SCALED_DOT_PRODUCT_ATTENTION = Exercise(
    name="scaled_dot_product_attention",
    signature="scaled_dot_product_attention(query, key, value, mask=None) -> (context, weights)",
    reference=_sdpa,
    cases=_attention_cases,
    outputs=(("context", "(..., L, Dv)"), ("weights", "(..., L, S)")),
    mistakes=(
        Mistake("the scores are not divided by √Dk.", _dot_attention_with(lambda dim: 1.0)),
        Mistake("the scores are divided by Dk; the scale is 1/√Dk.",
                _dot_attention_with(lambda dim: 1 / dim)),
        Mistake("the softmax runs over the queries (dim=-2); each query's weights over the "
                "keys must sum to 1, so it runs over the last dimension.",
                _dot_attention_with(_root, softmax_dim=-2)),
        Mistake("the mask is ignored.", _dot_attention_with(_root, use_mask=False)),
        Mistake("the mask is read backwards: True means *may attend*, so the scores to fill "
                "with -inf are where the mask is False (`~mask`).",
                _dot_attention_with(_root, flip_mask=True)),
    ),
)


# Additive attention ----------------------------------------------------------------------------


def _additive_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(1)

    def case(query_shape, key_shape, value_dim, hidden, mask=None) -> Case:
        return Case({
            "query": _randn(generator, *query_shape),
            "key": _randn(generator, *key_shape),
            "value": _randn(generator, *key_shape[:-1], value_dim),
            "W_q": _randn(generator, hidden, query_shape[-1]),
            "W_k": _randn(generator, hidden, key_shape[-1]),
            "v": _randn(generator, hidden),
            "mask": mask,
        })

    return [
        case((1, 3), (4, 5), 2, hidden=6),  # one decoder state, four encoder states
        case((2, 3, 3), (2, 4, 5), 2, hidden=6),  # a batch of three queries each
        case((2, 2, 4), (2, 5, 4), 3, hidden=8, mask=padding_mask([5, 3])[:, None, :]),
    ]


def _additive(query, key, value, W_q, W_k, v, mask=None):
    return attend(additive_scores(query, key, W_q, W_k, v), value, mask)


def _additive_with(*, squash: Callable[[torch.Tensor], torch.Tensor] = torch.tanh,
                   squash_after: bool = False, softmax_dim: int = -1,
                   use_mask: bool = True) -> Callable[..., Any]:
    """A hand-written additive attention with one thing changed, for the mistakes below."""

    def attention(query, key, value, W_q, W_k, v, mask=None):
        summed = (query @ W_q.T).unsqueeze(-2) + (key @ W_k.T).unsqueeze(-3)  # (..., L, S, A)
        scores = squash(summed @ v) if squash_after else squash(summed) @ v  # (..., L, S)
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=softmax_dim)
        return weights @ value, weights

    return attention


ADDITIVE_ATTENTION = Exercise(
    name="additive_attention",
    signature="additive_attention(query, key, value, W_q, W_k, v, mask=None) -> (context, weights)",
    reference=_additive,
    cases=_additive_cases,
    outputs=(("context", "(..., L, Dv)"), ("weights", "(..., L, S)")),
    mistakes=(
        Mistake("there is no tanh: v^T (W_q q + W_k k) is linear, and then the query adds the "
                "same amount to every key's score and cannot change the weights at all.",
                _additive_with(squash=lambda x: x)),
        Mistake("the tanh comes after v; it goes around W_q q + W_k k, before v.",
                _additive_with(squash_after=True)),
        Mistake("the softmax runs over the queries (dim=-2); it runs over the keys.",
                _additive_with(softmax_dim=-2)),
        Mistake("the mask is ignored.", _additive_with(use_mask=False)),
    ),
)


# A causal mask ---------------------------------------------------------------------------------


def _mask_cases() -> list[Case]:
    return [Case({"length": length}) for length in (1, 2, 5, 8)]


def _ones(length: int) -> torch.Tensor:
    return torch.ones(length, length, dtype=torch.bool)


CAUSAL_MASK = Exercise(
    name="causal_mask",
    signature="causal_mask(length) -> mask (L, L), bool, True = may attend",
    reference=causal_mask,
    cases=_mask_cases,
    outputs=(("mask", "(L, L)"),),
    mistakes=(
        Mistake("the mask is upside down. Row i is query i and column j is key j; query i may "
                "read keys 0..i, which is on and below the diagonal (torch.tril).",
                lambda length: _ones(length).triu()),
        Mistake("the diagonal is False, but every position may attend to itself.",
                lambda length: _ones(length).tril(-1)),
        Mistake("True marks the blocked keys, which is nn.MultiheadAttention's convention; "
                "attnprimer's masks (and F.scaled_dot_product_attention's) say True = may attend.",
                lambda length: _ones(length).triu(1)),
    ),
)


# Splitting and merging heads -------------------------------------------------------------------


def _split_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(2)
    # Every size distinct in the first case, so that a misplaced dimension shows in the shape.
    shapes = [((2, 3, 8), 4), ((1, 2, 4), 2), ((2, 5, 6), 3), ((1, 3, 4), 1)]
    return [Case({"x": _randn(generator, *shape), "num_heads": heads}) for shape, heads in shapes]


def _merge_cases() -> list[Case]:
    generator = torch.Generator().manual_seed(3)
    shapes = [(2, 3, 4, 5), (1, 2, 2, 2), (2, 2, 5, 4)]  # (B, H, L, Dh)
    return [Case({"x": _randn(generator, *shape)}) for shape in shapes]


def _split_without_transpose(x, num_heads):
    batch, length, dim = x.shape
    return x.reshape(batch, num_heads, length, dim // num_heads)


def _split_interleaved(x, num_heads):
    batch, length, dim = x.shape
    return x.reshape(batch, length, dim // num_heads, num_heads).permute(0, 3, 1, 2)


def _merge_without_transpose(x):
    batch, heads, length, head_dim = x.shape
    return x.reshape(batch, length, heads * head_dim)


SPLIT_HEADS = Exercise(
    name="split_heads",
    signature="split_heads(x, num_heads) -> (B, H, L, Dh), from x (B, L, D)",
    reference=split_heads,
    cases=_split_cases,
    outputs=(("heads", "(B, H, L, Dh)"),),
    mistakes=(
        Mistake("x was reshaped straight to (B, H, L, Dh). That regroups positions and "
                "columns together; each head must get a slice of D for every position, so "
                "reshape to (B, L, H, Dh) first, then swap L and H with .transpose(1, 2).",
                _split_without_transpose),
        Mistake("D was cut as (Dh, H): head h got every H-th column. Cut it as (H, Dh), so "
                "that head h gets the columns h·Dh to (h+1)·Dh - 1.",
                _split_interleaved),
    ),
)

MERGE_HEADS = Exercise(
    name="merge_heads",
    signature="merge_heads(x) -> (B, L, D), from x (B, H, L, Dh)",
    reference=merge_heads,
    cases=_merge_cases,
    outputs=(("merged", "(B, L, H·Dh)"),),
    mistakes=(
        Mistake("x was reshaped straight to (B, L, D), which mixes positions and heads. Swap "
                "H and L back first (.transpose(1, 2)), then reshape.",
                _merge_without_transpose),
    ),
)


# The sinusoidal encoding -----------------------------------------------------------------------


def _encoding_cases() -> list[Case]:
    return [Case({"length": length, "dim": dim}) for length, dim in ((1, 2), (4, 6), (10, 16),
                                                                      (50, 64))]


def _angles(length: int, dim: int, exponent: Callable[[torch.Tensor], torch.Tensor]):
    pairs = torch.arange(0, dim, 2, dtype=torch.float64)  # 2i, for i = 0 .. D/2 - 1
    positions = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    return positions * 10_000.0 ** exponent(pairs / dim)  # (L, D/2)


def _interleave(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    return torch.stack([first, second], dim=-1).flatten(-2).float()  # (L, D/2, 2) -> (L, D)


def _halves(length, dim):
    angles = _angles(length, dim, lambda share: -share)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).float()


def _cos_first(length, dim):
    angles = _angles(length, dim, lambda share: -share)
    return _interleave(angles.cos(), angles.sin())


def _half_exponent(length, dim):
    angles = _angles(length, dim, lambda share: -share / 2)
    return _interleave(angles.sin(), angles.cos())


def _speeding_up(length, dim):
    angles = _angles(length, dim, lambda share: share)
    return _interleave(angles.sin(), angles.cos())


SINUSOIDAL_ENCODING = Exercise(
    name="sinusoidal_encoding",
    signature="sinusoidal_encoding(length, dim) -> (L, D), float32",
    reference=lambda length, dim: sinusoidal_encoding(length, dim),
    cases=_encoding_cases,
    outputs=(("encoding", "(L, D)"),),
    mistakes=(
        Mistake("the sines fill the first half of each row and the cosines the second. That "
                "layout works as well (some libraries use it), but here dimensions 2i and "
                "2i + 1 hold the sine and the cosine of the same angle.", _halves),
        Mistake("cosine and sine are swapped: dimension 2i holds the sine, 2i + 1 the cosine.",
                _cos_first),
        Mistake("the exponent is i/D; it is 2i/D, with i counting dimension pairs "
                "(equivalently, the even dimension index over D).", _half_exponent),
        Mistake("the speeds grow along the row; position / 10000^(2i/D) divides, so they "
                "shrink from 1 radian per position down to nearly 0.", _speeding_up),
    ),
    atol=1e-4,  # an angle of 49 radians computed in float32 is off by a few 1e-6
)


EXERCISES: dict[str, Exercise] = {
    exercise.name: exercise
    for exercise in (ADDITIVE_ATTENTION, SCALED_DOT_PRODUCT_ATTENTION, CAUSAL_MASK, SPLIT_HEADS,
                     MERGE_HEADS, SINUSOIDAL_ENCODING)
}
"""Every exercise of the labs, by the name of the function the reader writes."""

# The Transformer lab's exercises live in their own module, which adds them to EXERCISES when
# it is imported; importing it here makes `check("encoder_block", ...)` work from this module
# alone, whichever of the two is imported first.
import attnprimer.exercises_attention_at_scale  # noqa: E402  (the same, for its lab)
import attnprimer.exercises_length_generalisation  # noqa: E402  (and for its lab)
import attnprimer.exercises_transformer  # noqa: E402, F401
