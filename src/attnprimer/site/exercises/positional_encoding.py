"""The exercise of the positional-encoding lab: the sinusoidal encoding."""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnprimer.positional import sinusoidal_encoding
from attnprimer.site.exercises.checker import Case, Exercise, Mistake

__all__ = ['EXERCISES', 'SINUSOIDAL_ENCODING']


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


EXERCISES = (SINUSOIDAL_ENCODING,)
