"""The attention-over-images lab's exercise: registered, faithful to the package, and its
checker names the two mistakes the issue asks for (the others are checked with every
exercise's, in tests/test_exercises.py)."""

from __future__ import annotations

import torch

from attnprimer.patches import unpatchify
from attnprimer.site.exercises import EXERCISES, diagnose
from attnprimer.site.exercises.attention_over_images import PATCHIFY


def test_registered_for_check_by_name():
    assert EXERCISES["patchify"] is PATCHIFY


def test_the_cases_have_more_than_one_row_and_column_of_patches():
    """A transposed order or a reshape across rows shows only with several of each."""
    for case in PATCHIFY.cases():
        height, width = case.arguments["images"].shape[-2:]
        patch = case.arguments["patch"]
        assert height // patch >= 2 and width // patch >= 2


def test_a_transposed_patch_order_is_named():
    def column_major(images, patch):
        B, height, width = images.shape
        grid = images.reshape(B, height // patch, patch, width // patch, patch)
        return grid.permute(0, 3, 1, 2, 4).reshape(B, -1, patch * patch)

    assert "transposed order" in " ".join(diagnose("patchify", column_major).split())


def test_a_reshape_that_mixes_rows_of_patches_is_named():
    def one_reshape(images, patch):
        return images.reshape(images.shape[0], -1, patch * patch)

    assert "mixes rows of different patches" in " ".join(
        diagnose("patchify", one_reshape).split())


def test_the_reference_round_trips_through_unpatchify():
    images = torch.randn(2, 8, 12)
    patches = PATCHIFY.reference(images, 4)
    assert torch.equal(unpatchify(patches, 8, 12), images)
