"""Digit reading: read the handwritten digits on a canvas, left to right.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``).

A canvas of ``height`` x ``width`` pixels holds 2 to ``max_digits`` real handwritten digits at
random places ([`attnprimer.tasks.digit_canvas`][attnprimer.tasks.digit_canvas]). The output is
the digits from left to right, then an end token; steps after the end are blank and not scored.
Ba, Mnih and Kavukcuoglu (2015) read several digits with a recurrent model of visual attention;
this is the same kind of task for the patch reader
([`attnprimer.models.patch_reader`][attnprimer.models.patch_reader]).

Classes: 0 to 9 the digits, 10 the end, 11 a blank step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch.nn import functional as F

from attnprimer.models.patch_reader import PatchReader
from attnprimer.tasks.base import Batch, Task
from attnprimer.tasks.digit_canvas import Layout, paint, sample_layout

__all__ = ["END", "NONE", "DigitReadingTask"]

END = 10
"""The class of the end token."""
NONE = 11
"""The class of a step after the end: not scored."""


@dataclass(frozen=True)
class DigitReadingTask(Task):
    """Read 2 to ``max_digits`` handwritten digits, left to right.

    Args:
        height: canvas height in pixels.
        width: canvas width in pixels.
        patch: patch size in pixels.
        max_digits: the most digits on a canvas (the fewest is 2).
        dim: the patch vectors' and the decoder state's size.

    Examples:
        >>> task = DigitReadingTask()
        >>> batch = task.sample(3, torch.Generator().manual_seed(0))
        >>> batch.inputs.shape, batch.targets.shape
        (torch.Size([3, 16, 40]), torch.Size([3, 5]))
    """

    name = "digit-reading"
    description = "read the handwritten digits on a canvas, left to right"
    train_defaults: ClassVar[dict] = {"steps": 1800, "lr": 5e-3}
    teacher_forced = True

    height: int = field(default=16, metadata={"help": "canvas height (pixels)"})
    width: int = field(default=40, metadata={"help": "canvas width (pixels)"})
    patch: int = field(default=4, metadata={"help": "patch size (pixels)"})
    max_digits: int = field(default=4, metadata={"help": "the most digits on a canvas"})
    dim: int = field(default=64, metadata={"help": "patch vector and decoder state size"})

    @property
    def num_classes(self) -> int:
        return NONE + 1

    def output_labels(self) -> list[str]:
        return [str(step) for step in range(self.max_digits + 1)]

    def layout(self, batch_size: int, generator: torch.Generator) -> Layout:
        """Where the digits of ``batch_size`` canvases go (which images: see ``split_of``)."""
        return sample_layout(batch_size, generator, height=self.height, width=self.width,
                             min_digits=2, max_digits=self.max_digits)

    def paint(self, layout: Layout) -> torch.Tensor:
        """The canvases (B, Hi, Wi) of ``layout``."""
        return paint(layout, height=self.height, width=self.width)

    def targets_of(self, layout: Layout) -> torch.Tensor:
        """The digits left to right, the end, then blanks: (B, T) with T = max_digits + 1."""
        steps = torch.arange(self.max_digits + 1)[None]  # (1, T)
        digits = torch.cat([layout.label, layout.label[:, :1]], dim=1)  # (B, T)
        count = layout.count[:, None]  # (B, 1)
        targets = torch.where(steps < count, digits, NONE)
        return targets.masked_fill(steps == count, END)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        layout = self.layout(batch_size, generator)
        return Batch(self.paint(layout), self.targets_of(layout))

    def build_model(self) -> PatchReader:
        return PatchReader(self.height, self.width, self.patch, self.dim,
                           num_outputs=self.num_classes, steps=self.max_digits + 1)

    def loss(self, model, batch: Batch) -> torch.Tensor:
        """Teacher-forced cross-entropy over the digits and the end (blank steps ignored)."""
        logits = model(batch.inputs, batch.targets).logits  # (B, T, C)
        return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(),
                               ignore_index=NONE)

    def correct(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Right where the prediction matches; blank steps count as right."""
        return (predictions == targets) | (targets == NONE)

    def describe_output(self, values: torch.Tensor) -> str:
        text = ""
        for value in values.tolist():
            if value == END:
                return text + "."
            text += str(value) if value < END else "?"
        return text

    def step_labels(self, values: torch.Tensor) -> list[str]:
        names = {END: "end", NONE: "-"}
        return [f"{step}: {names.get(int(value), int(value))}"
                for step, value in enumerate(values)]
