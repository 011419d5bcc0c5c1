"""Images as patches: the order, the inverse, the embedding (attnprimer.patches), and the
models built on them: the patch reader and the patch encoder."""

from __future__ import annotations

import pytest
import torch

from attnprimer.models.patch_encoder import PatchEncoder
from attnprimer.models.patch_reader import PatchReader
from attnprimer.patches import PatchEmbedding, patch_grid, patchify, unpatchify


def test_patches_are_row_major_and_rows_of_pixels_within():
    image = torch.arange(4 * 6.).reshape(1, 4, 6)  # pixel value = 6 * row + column
    patches = patchify(image, 2)  # R = 2, Q = 3
    rows, cols = patch_grid(2, 3)
    for index in range(6):
        top, left = 2 * int(rows[index]), 2 * int(cols[index])
        expected = image[0, top:top + 2, left:left + 2].flatten()
        torch.testing.assert_close(patches[0, index], expected)
    assert patches[0, 1, 0] == 2  # the second patch is to the right of the first, not below


@pytest.mark.parametrize(("height", "width", "patch"), [(4, 4, 1), (8, 12, 4), (16, 40, 4)])
def test_unpatchify_inverts_patchify(height, width, patch):
    images = torch.randn(3, height, width)
    assert torch.equal(unpatchify(patchify(images, patch), height, width), images)


def test_a_patch_size_that_does_not_divide_is_refused():
    with pytest.raises(ValueError, match="must divide"):
        patchify(torch.zeros(1, 6, 8), 4)


def test_the_position_is_what_tells_two_places_apart():
    embed = PatchEmbedding(patch=2, rows=2, cols=2, dim=8)
    same = torch.zeros(1, 4, 4)  # four identical (blank) patches
    vectors = embed(same)[0]  # (4, D)
    assert not torch.allclose(vectors[0], vectors[1])
    bare = PatchEmbedding(patch=2, rows=2, cols=2, dim=8, position=False)
    torch.testing.assert_close(bare(same)[0, 0], bare(same)[0, 3])


def _shuffle_patches(images: torch.Tensor, patch: int, order: torch.Tensor) -> torch.Tensor:
    height, width = images.shape[-2:]
    return unpatchify(patchify(images, patch)[:, order], height, width)


def test_without_positions_the_encoder_sees_a_set_of_patches():
    torch.manual_seed(0)
    model = PatchEncoder(8, 12, 4, dim=16, heads=2, layers=2, num_outputs=10, steps=2,
                         position=False).eval()
    images = torch.rand(2, 8, 12)
    shuffled = _shuffle_patches(images, 4, torch.tensor([5, 3, 0, 1, 4, 2]))
    with torch.no_grad():
        torch.testing.assert_close(model(shuffled).logits, model(images).logits)
        with_positions = PatchEncoder(8, 12, 4, dim=16, heads=2, layers=2, num_outputs=10,
                                      steps=2).eval()
        assert not torch.allclose(with_positions(shuffled).logits,
                                  with_positions(images).logits)


def test_the_class_token_attends_over_itself_and_every_patch():
    model = PatchEncoder(8, 12, 4, dim=16, heads=2, layers=1, num_outputs=10).eval()
    weights = model(torch.rand(2, 8, 12)).attention["layer 1.2"]  # (B, L, L), L = 1 + 6
    assert weights.shape == (2, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 7))


def test_the_reader_greedy_equals_teacher_forced_on_its_own_outputs():
    torch.manual_seed(0)
    model = PatchReader(8, 16, 4, dim=16, num_outputs=12, steps=3).eval()
    images = torch.rand(2, 8, 16)
    with torch.no_grad():
        greedy = model(images)
        forced = model(images, greedy.logits.argmax(-1))
    torch.testing.assert_close(forced.logits, greedy.logits)
    maps = greedy.attention["encoder-decoder"]  # (B, T, N): one map over 8 patches a step
    assert maps.shape == (2, 3, 8)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, 3))
