"""The exercise of the attention-over-images lab: cut images into patches.

The checker is in [`checker`][attnprimer.site.exercises.checker]; the package
[`attnprimer.site.exercises`][attnprimer.site.exercises] collects this module's ``EXERCISES``
with the other labs', so ``exercises.check("patchify", fn)`` works like every other check.

* ``patchify(images, patch)``: images (B, Hi, Wi) to patches (B, N, P * P) in row-major order,
  each patch flattened row by row, as [`patchify`][attnprimer.patches.patchify] does. The known
  mistakes: the patches numbered down the columns first (a transposed patch order), a plain
  reshape that takes P * P consecutive pixels of the image (so a "patch" mixes rows of
  different patches), and each patch's pixels flattened column by column.

Examples:
    >>> from attnprimer.site.exercises import check
    >>> def patchify(images, patch):
    ...     B, height, width = images.shape
    ...     grid = images.reshape(B, height // patch, patch, width // patch, patch)
    ...     return grid.permute(0, 1, 3, 2, 4).reshape(B, -1, patch * patch)
    >>> check("patchify", patchify)
    ✓ patchify matches the reference on 3 cases.
"""

from __future__ import annotations

import torch

from attnprimer.patches import patchify
from attnprimer.site.exercises.checker import Case, Exercise, Mistake

__all__ = ["EXERCISES", "PATCHIFY"]


def _cases() -> list[Case]:
    """Images whose pixels are all different, taller than wide and wider than tall."""
    generator = torch.Generator().manual_seed(38)
    return [Case({"images": torch.randn(batch, height, width, generator=generator),
                  "patch": patch})
            for batch, height, width, patch in ((1, 4, 4, 2), (2, 4, 8, 2), (2, 8, 12, 4))]


def _column_major(images: torch.Tensor, patch: int) -> torch.Tensor:
    B, height, width = images.shape
    grid = images.reshape(B, height // patch, patch, width // patch, patch)
    return grid.permute(0, 3, 1, 2, 4).reshape(B, -1, patch * patch)  # columns of patches first


def _plain_reshape(images: torch.Tensor, patch: int) -> torch.Tensor:
    return images.reshape(images.shape[0], -1, patch * patch)


def _pixels_transposed(images: torch.Tensor, patch: int) -> torch.Tensor:
    B, height, width = images.shape
    grid = images.reshape(B, height // patch, patch, width // patch, patch)
    return grid.permute(0, 1, 3, 4, 2).reshape(B, -1, patch * patch)


PATCHIFY = Exercise(
    name="patchify",
    signature="patchify(images, patch) -> patches (B, N, P*P), from images (B, Hi, Wi)",
    reference=patchify,
    cases=_cases,
    outputs=(("patches", "(B, N, P*P)"),),
    mistakes=(
        Mistake("the patches are in a transposed order: numbered down the first column of "
                "patches, then the next. Row-major order goes along the top row of patches "
                "first: after reshaping to (B, R, P, Q, P), permute to (B, R, Q, P, P), "
                "the patch row before the patch column.", _column_major),
        Mistake("a plain reshape to (B, N, P*P) takes P*P consecutive pixels of the image, "
                "which run along one row of pixels across several patches: each 'patch' "
                "mixes rows of different patches. Split both axes first, reshape to "
                "(B, R, P, Q, P), and bring the two 'which patch' axes together.",
                _plain_reshape),
        Mistake("each patch's pixels are flattened column by column; flatten them row by "
                "row, as the image is: the permuted axes end (..., P rows, P columns).",
                _pixels_transposed),
    ),
)

EXERCISES = (PATCHIFY,)
