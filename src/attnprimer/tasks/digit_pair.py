"""Digit pairs: name the left digit and the right one. A task about where things are.

For the chapter "Attention over images" (``docs/chapters/attention-over-images.md``): its
second half, patches as tokens, which the page does not show yet (no site model is trained).

A canvas holds two real handwritten digits side by side
([`attnprimer.tasks.digit_canvas`][attnprimer.tasks.digit_canvas]); the answer is two classes,
the left digit and then the right one, both read from the class token. Recognising each digit is
not enough: the model must also tell which of the two is on the left, a relation between two
parts of the canvas. A model that sees the patches as a set, without their positions, can know
which two digits are there but not their order: when they differ, it can only guess. The model
is the patch encoder
([`attnprimer.models.patch_encoder`][attnprimer.models.patch_encoder]).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch

from attnprimer.models.patch_encoder import PatchEncoder
from attnprimer.tasks.base import Batch, Task
from attnprimer.tasks.digit_canvas import Layout, paint, sample_layout

__all__ = ["DigitPairTask"]


@dataclass(frozen=True)
class DigitPairTask(Task):
    """Name two handwritten digits, the left one first.

    Args:
        height: canvas height in pixels.
        width: canvas width in pixels.
        patch: patch size in pixels.
        dim: D.
        heads: H.
        layers: encoder blocks.
        position: give the patches their 2-D position.

    Examples:
        >>> task = DigitPairTask()
        >>> batch = task.sample(3, torch.Generator().manual_seed(0))
        >>> batch.inputs.shape, batch.targets.shape
        (torch.Size([3, 16, 24]), torch.Size([3, 2]))
    """

    name = "digit-pair"
    description = "name two handwritten digits, the left one first"
    train_defaults: ClassVar[dict] = {"steps": 1000, "lr": 3e-3}

    height: int = field(default=16, metadata={"help": "canvas height (pixels)"})
    width: int = field(default=24, metadata={"help": "canvas width (pixels)"})
    patch: int = field(default=4, metadata={"help": "patch size (pixels)"})
    dim: int = field(default=32, metadata={"help": "model dim D"})
    heads: int = field(default=4, metadata={"help": "heads H"})
    layers: int = field(default=2, metadata={"help": "encoder blocks"})
    position: bool = field(default=True, metadata={"help": "2-D position embeddings"})

    @property
    def num_classes(self) -> int:
        return 10

    def output_labels(self) -> list[str]:
        return ["left", "right"]

    def layout(self, batch_size: int, generator: torch.Generator) -> Layout:
        """Where the two digits of ``batch_size`` canvases go."""
        return sample_layout(batch_size, generator, height=self.height, width=self.width,
                             min_digits=2, max_digits=2)

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
