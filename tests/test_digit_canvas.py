"""The digit canvases: the fixed split by image, where digits go, and what the tasks ask."""

from __future__ import annotations

import pytest
import torch

from attnprimer.patches import patchify
from attnprimer.tasks.digit_canvas import digit_images, paint, sample_layout, split_of
from attnprimer.tasks.digit_pair import DigitPairTask, swap_halves
from attnprimer.tasks.digit_reading import END, NONE, DigitReadingTask
from attnprimer.training.train import held_out_generator, training_generator


def test_the_split_is_by_image_and_disjoint():
    train, _ = digit_images("train")
    held_out, _ = digit_images("held-out")
    assert len(train) + len(held_out) == 1797
    flat_train = {tuple(image.flatten().tolist()) for image in train}
    shared = sum(tuple(image.flatten().tolist()) in flat_train for image in held_out)
    assert shared < 10  # the data set has a few duplicate drawings; nothing shared by index


def test_training_streams_draw_training_images_and_held_out_streams_held_out_ones():
    assert split_of(training_generator(3)) == "train"
    assert split_of(held_out_generator()) == "held-out"
    assert split_of(held_out_generator(7)) == "held-out"
    held_out, _ = digit_images("held-out")
    task = DigitReadingTask()
    layout = task.layout(50, held_out_generator())
    canvases = task.paint(layout)
    # Every held-out canvas is painted from held-out images: the first digit's pixels match
    first = torch.stack([canvases[b, y:y + 8, x:x + 8] for b, (x, y) in
                         enumerate(zip(layout.x[:, 0].tolist(), layout.y[:, 0].tolist(),
                                       strict=True))])
    torch.testing.assert_close(first, held_out[layout.image[:, 0]])


def test_digits_do_not_overlap_and_stay_on_the_canvas():
    layout = sample_layout(500, torch.Generator().manual_seed(1), height=16, width=40,
                           min_digits=2, max_digits=4)
    present = torch.arange(4)[None] < layout.count[:, None]
    right = layout.x + 8
    assert bool((right[present] <= 40).all()) and bool((layout.y + 8 <= 16).all())
    gaps = layout.x[:, 1:] - right[:, :-1]
    assert bool((gaps[present[:, 1:]] >= 0).all())
    assert set(layout.count.tolist()) == {2, 3, 4}
    ink = paint(layout, height=16, width=40).sum(dim=(1, 2))
    images, _ = digit_images(layout.split)
    expected = (images[layout.image].sum(dim=(2, 3)) * present).sum(dim=1)
    torch.testing.assert_close(ink, expected)


def test_reading_targets_are_the_digits_left_to_right_then_the_end():
    task = DigitReadingTask()
    layout = task.layout(200, torch.Generator().manual_seed(2))
    targets = task.targets_of(layout)
    for row, count in enumerate(layout.count.tolist()):
        assert targets[row, :count].tolist() == layout.label[row, :count].tolist()
        assert targets[row, count] == END
        assert (targets[row, count + 1:] == NONE).all()


def test_the_pair_task_names_the_left_digit_first_each_in_its_own_half():
    task = DigitPairTask()
    layout = task.layout(100, torch.Generator().manual_seed(3))
    half = task.width // 2
    assert bool((layout.x[:, 0] + 8 <= half).all()) and bool((layout.x[:, 1] >= half).all())
    assert bool((layout.x[:, 1] + 8 <= task.width).all())
    assert torch.equal(task.targets_of(layout), layout.label[:, :2])
    assert task.layout(5, training_generator(0)).split == "train"
    assert task.layout(5, held_out_generator()).split == "held-out"


def test_swapping_the_halves_moves_whole_patches_so_a_set_model_answers_the_same():
    canvases = DigitPairTask().sample(4, torch.Generator().manual_seed(0)).inputs  # (4, 8, 24)
    swapped = swap_halves(canvases)
    before, after = patchify(canvases, 4), patchify(swapped, 4)  # (B, 12, 16)
    # Patch (r, q) lands at (r, q + 3 mod 6): a permutation of the patch sequence
    order = torch.tensor([3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8])
    assert torch.equal(after, before[:, order])
    torch.manual_seed(0)
    set_model = DigitPairTask(dim=16, heads=2, position=False).build_model().eval()
    grid_model = DigitPairTask(dim=16, heads=2).build_model().eval()
    with torch.no_grad():
        torch.testing.assert_close(set_model(swapped).logits, set_model(canvases).logits)
        assert not torch.allclose(grid_model(swapped).logits, grid_model(canvases).logits)


def test_a_pair_canvas_must_split_into_halves_of_whole_patches():
    with pytest.raises(ValueError, match="halves"):
        DigitPairTask(width=20)  # halves of 10 pixels: not whole 4-pixel patches
