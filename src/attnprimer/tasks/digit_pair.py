"""Digit pairs: name the left digit and the right one. A task about where things are.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``),
its second half, patches as tokens.

A canvas holds two real handwritten digits
([`attnprimer.tasks.digit_canvas`][attnprimer.tasks.digit_canvas]), one in each half: the left
digit somewhere in the left half, the right one somewhere in the right half. The answer is two
classes, the left digit and then the right one, both read from the class token of the patch
encoder ([`attnprimer.models.patch_encoder`][attnprimer.models.patch_encoder]). Recognising
each digit is not enough: the model must also tell which of the two is on the left, a
relation between two parts of the canvas.

Each half is a whole number of patches wide, so
[`swap_halves`][attnprimer.tasks.digit_pair.swap_halves] moves whole patches: it permutes the
patch sequence and changes nothing else. A model that sees the patches as a set, without their
positions, gives the swapped canvas exactly the answer it gave the canvas, so when the two
digits differ it is wrong on one of the two.

Shape legend: B batch, Hi x Wi canvas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch

from attnprimer.models.patch_encoder import PatchEncoder
from attnprimer.tasks.base import Batch, Task
from attnprimer.tasks.digit_canvas import DIGIT, Layout, digit_images, paint, split_of

__all__ = ["DigitPairTask", "swap_halves"]


def swap_halves(canvases: torch.Tensor) -> torch.Tensor:
    """The canvases (B, Hi, Wi) with their left and right halves traded.

    Examples:
        >>> swap_halves(torch.tensor([[[1, 2, 3, 4]]]))
        tensor([[[3, 4, 1, 2]]])
    """
    half = canvases.shape[-1] // 2
    return torch.cat([canvases[..., half:], canvases[..., :half]], dim=-1)


@dataclass(frozen=True)
class DigitPairTask(Task):
    """Name two handwritten digits, the left one first.

    Args:
        height: canvas height in pixels.
        width: canvas width in pixels; each half holds one digit.
        patch: patch size in pixels, which divides half the width.
        dim: D.
        heads: H.
        layers: encoder blocks.
        position: give the patches their 2-D position.

    Examples:
        >>> task = DigitPairTask()
        >>> batch = task.sample(3, torch.Generator().manual_seed(0))
        >>> batch.inputs.shape, batch.targets.shape
        (torch.Size([3, 8, 24]), torch.Size([3, 2]))
    """

    name = "digit-pair"
    description = "name two handwritten digits, the left one first"
    train_defaults: ClassVar[dict] = {"steps": 1100, "lr": 3e-3}

    height: int = field(default=8, metadata={"help": "canvas height (pixels)"})
    width: int = field(default=24, metadata={"help": "canvas width (pixels)"})
    patch: int = field(default=4, metadata={"help": "patch size (pixels)"})
    dim: int = field(default=32, metadata={"help": "model dim D"})
    heads: int = field(default=4, metadata={"help": "heads H"})
    layers: int = field(default=2, metadata={"help": "encoder blocks"})
    position: bool = field(default=True, metadata={"help": "2-D position embeddings"})

    def __post_init__(self) -> None:
        super().__post_init__()
        half = self.width // 2
        if self.width % 2 or half % self.patch or half < DIGIT or self.height < DIGIT:
            raise ValueError(f"a {self.height} x {self.width} canvas must split into two "
                             f"halves of at least 8 x 8, each a whole number of "
                             f"{self.patch}-pixel patches wide")

    @property
    def num_classes(self) -> int:
        return 10

    def output_labels(self) -> list[str]:
        return ["left", "right"]

    def layout(self, batch_size: int, generator: torch.Generator) -> Layout:
        """Which two images, and where: the left digit in the left half, the right in the right."""
        split = split_of(generator)  # held-out images for a held-out stream
        images, labels = digit_images(split)
        image = torch.randint(0, len(images), (batch_size, 2), generator=generator)  # (B, 2)
        half = self.width // 2
        x = torch.randint(0, half - DIGIT + 1, (batch_size, 2), generator=generator)
        x[:, 1] += half  # (B, 2): the second digit starts in the right half
        y = torch.randint(0, self.height - DIGIT + 1, (batch_size, 2), generator=generator)
        return Layout(image, labels[image], x, y, torch.full((batch_size,), 2), split)

    def paint(self, layout: Layout) -> torch.Tensor:
        """The canvases (B, Hi, Wi) of ``layout``."""
        return paint(layout, height=self.height, width=self.width)

    def targets_of(self, layout: Layout) -> torch.Tensor:
        """(B, 2): the left digit, then the right one."""
        return layout.label

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        layout = self.layout(batch_size, generator)
        return Batch(self.paint(layout), self.targets_of(layout))

    def build_model(self) -> PatchEncoder:
        return PatchEncoder(self.height, self.width, self.patch, self.dim, self.heads,
                            self.layers, self.num_classes, steps=2, position=self.position)

    def describe_output(self, values: torch.Tensor) -> str:
        return f"{int(values[0])} {int(values[1])}"
