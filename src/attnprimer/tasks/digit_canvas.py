"""Canvases of handwritten digits: real images, bundled with scikit-learn, never downloaded.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``).

scikit-learn ships 1,797 handwritten digits, 8 x 8 pixels of 0 to 16 (``load_digits``, from
the UCI optical recognition data set); here they are scaled to 0 to 1. The split between
training and held-out images is fixed and by image: every fourth image (index 3, 7, 11, ...)
is held out, 449 of them, and a held-out canvas is built only from held-out images.

A canvas is ``height`` x ``width`` pixels of background (0) with 2 to ``max_digits`` digits
pasted at random places: their columns never overlap, so "left to right" is well defined, and
each sits at a random height. A [`Layout`][attnprimer.tasks.digit_canvas.Layout] says which
image went where, so that an experiment can move or swap a digit and paint the canvas again.

Which images a batch draws from follows the generator: the training loop's streams have even
seeds, the held-out streams odd ones (``attnprimer.training.train.held_out_generator``), so
[`split_of`][attnprimer.tasks.digit_canvas.split_of] reads the split from the seed.

Shape legend: B batch, K digit slots (``max_digits``), Hi x Wi canvas, 8 x 8 a digit.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch

__all__ = ["DIGIT", "Layout", "digit_images", "paint", "sample_layout", "split_of"]

DIGIT = 8
"""A digit image is 8 x 8 pixels."""

HELD_OUT_EVERY = 4
"""Image ``i`` is held out when ``i % 4 == 3``."""


@functools.cache
def _all_digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits  # in the wheel: nothing is fetched

    data = load_digits()
    images = torch.tensor(data.images, dtype=torch.float32) / 16.0  # (1797, 8, 8) in [0, 1]
    return images, torch.tensor(data.target)


def digit_images(split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The digits of one split: images (M, 8, 8) in [0, 1] and their labels (M,).

    Examples:
        >>> [len(digit_images(split)[0]) for split in ("train", "held-out")]
        [1348, 449]
    """
    if split not in ("train", "held-out"):
        raise ValueError(f"split must be 'train' or 'held-out', got {split!r}")
    images, labels = _all_digits()
    held_out = torch.arange(len(images)) % HELD_OUT_EVERY == HELD_OUT_EVERY - 1
    keep = held_out if split == "held-out" else ~held_out
    return images[keep], labels[keep]


def split_of(generator: torch.Generator) -> str:
    """``"held-out"`` for a held-out stream (odd seed), ``"train"`` for a training one (even).

    Examples:
        >>> split_of(torch.Generator().manual_seed(4)), split_of(torch.Generator().manual_seed(7))
        ('train', 'held-out')
    """
    return "held-out" if generator.initial_seed() % 2 else "train"


class Layout(NamedTuple):
    """Where each digit of a batch of canvases goes; slots past ``count`` are empty.

    Attributes:
        image: (B, K) index into the split's images.
        label: (B, K) the digit shown, 0 to 9.
        x: (B, K) the digit's left column, increasing along the slots.
        y: (B, K) the digit's top row.
        count: (B,) how many digits the canvas holds.
        split: which images ``image`` indexes.
    """

    image: torch.Tensor
    label: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    count: torch.Tensor
    split: str


def sample_layout(batch: int, generator: torch.Generator, *, height: int, width: int,
                  min_digits: int, max_digits: int) -> Layout:
    """Draw ``batch`` layouts: how many digits, which images, and where.

    The digits' columns do not overlap: the ``width - 8 n`` free columns are split into
    ``n + 1`` random gaps, before, between and after the ``n`` digits.

    Examples:
        >>> layout = sample_layout(5, torch.Generator().manual_seed(0), height=16, width=32,
        ...                        min_digits=2, max_digits=4)
        >>> bool((layout.x[:, 1:] - layout.x[:, :-1] >= 8).all()), layout.split
        (True, 'train')
    """
    if width < DIGIT * max_digits or height < DIGIT:
        raise ValueError(f"a {height} x {width} canvas cannot hold {max_digits} digits of 8 x 8")
    split = split_of(generator)
    images, labels = digit_images(split)
    slots = torch.arange(max_digits)  # (K,)
    count = torch.randint(min_digits, max_digits + 1, (batch,), generator=generator)  # (B,)
    image = torch.randint(0, len(images), (batch, max_digits), generator=generator)  # (B, K)
    # Free columns, split at n sorted random cuts: digit k starts after cut k and k digits
    free = width - DIGIT * count  # (B,)
    cuts = (torch.rand(batch, max_digits, generator=generator) * (free[:, None] + 1)).floor()
    cuts = cuts.long().masked_fill(slots[None] >= count[:, None], width)  # empty slots last
    x = cuts.sort(dim=1).values + DIGIT * slots[None]  # (B, K)
    y = torch.randint(0, height - DIGIT + 1, (batch, max_digits), generator=generator)
    return Layout(image, labels[image], x, y, count, split)


def paint(layout: Layout, *, height: int, width: int) -> torch.Tensor:
    """The canvases (B, Hi, Wi) of ``layout``: each present digit pasted at its place.

    Examples:
        >>> layout = sample_layout(3, torch.Generator().manual_seed(0), height=16, width=32,
        ...                        min_digits=2, max_digits=4)
        >>> paint(layout, height=16, width=32).shape
        torch.Size([3, 16, 32])
    """
    images, _ = digit_images(layout.split)
    batch, slots = layout.image.shape
    canvas = torch.zeros(batch, height, width)
    inside = torch.arange(DIGIT)  # (8,)
    example = torch.arange(batch)[:, None, None]  # (B, 1, 1)
    for slot in range(slots):
        present = (slot < layout.count).float()[:, None, None]  # (B, 1, 1)
        rows = (layout.y[:, slot, None, None] + inside[None, :, None]).clamp(max=height - 1)
        cols = (layout.x[:, slot, None, None] + inside[None, None, :]).clamp(max=width - 1)
        digit = images[layout.image[:, slot]] * present  # (B, 8, 8)
        canvas[example, rows, cols] = canvas[example, rows, cols] + digit
    return canvas
