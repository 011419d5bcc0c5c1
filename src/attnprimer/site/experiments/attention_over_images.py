"""The experiments of the chapter "Attention over images": what the patch reader looks at and
what it uses.

Every function takes a trained [`DigitReadingTask`][attnprimer.tasks.digit_reading.DigitReadingTask]
model (three seeds on the page) and works on held-out canvases, built only from held-out images
(a fixed held-out stream, ``held_out_generator``):

* [`reading`][attnprimer.site.experiments.attention_over_images.reading]: exact match, and how
  much of each digit step's attention falls on that digit's 8 x 8 square;
* the interventions, on the canvases the model reads right: blank the patches a step attends to
  most (their pixels set to the background, 0) and, as the control, as many other inked
  patches; move one digit to another height; swap the images of the first two digits;
* [`blanking_by_step`][attnprimer.site.experiments.attention_over_images.blanking_by_step]: the
  blanking again, at every digit step, not only the first.

Shape legend: B batch, K digit slots, T output steps, N patches, Hi x Wi canvas.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from attnprimer.patches import patch_grid, patchify, unpatchify
from attnprimer.tasks.digit_canvas import DIGIT, Layout
from attnprimer.tasks.digit_reading import DigitReadingTask
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["BLANKED_WEIGHT", "SAMPLES", "ImageReading", "StepBlanking", "blanking_by_step",
           "cached_blanking_by_step", "cached_reading", "control_patches", "digit_weight",
           "read", "reading", "top_patches"]

SAMPLES = 2000
"""Held-out canvases each measurement reads."""

BLANKED_WEIGHT = 0.8
"""Blank a step's most-weighted patches until they hold this share of its weight."""


def read(trained: TrainedModel, canvases: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy reading of canvases (B, Hi, Wi): the classes (B, T) and the maps (B, T, N)."""
    with torch.no_grad():
        output = trained.model(canvases)
    return output.logits.argmax(dim=-1), output.attention["encoder-decoder"]


def digit_weight(task: DigitReadingTask, layout: Layout, weights: torch.Tensor) -> torch.Tensor:
    """The share of each step's weight on patches that overlap its digit's square: (B, K).

    A patch overlaps digit k when any of its pixels lies in the digit's 8 x 8 square.
    """
    rows, cols = patch_grid(task.height // task.patch, task.width // task.patch)  # (N,)
    top, left = rows * task.patch, cols * task.patch  # the patches' first pixels: (N,)
    y, x = layout.y[..., None], layout.x[..., None]  # (B, K, 1)
    overlaps = ((top + task.patch > y) & (top < y + DIGIT)
                & (left + task.patch > x) & (left < x + DIGIT))  # (B, K, N)
    slots = layout.image.shape[1]
    return (weights[:, :slots] * overlaps).sum(dim=-1)  # (B, K)


def top_patches(weights: torch.Tensor, share: float = BLANKED_WEIGHT) -> torch.Tensor:
    """(B, N) bool: each row's fewest most-weighted patches that hold ``share`` of its weight."""
    ordered, order = weights.sort(dim=-1, descending=True)  # (B, N)
    before = ordered.cumsum(dim=-1) - ordered  # the weight of the patches above each
    chosen = before < share  # keep adding until the share is reached
    return torch.zeros_like(chosen).scatter(1, order, chosen)


def _blank(task: DigitReadingTask, canvases: torch.Tensor, patches: torch.Tensor) -> torch.Tensor:
    """The canvases with the chosen patches (B, N) set to the background."""
    cut = patchify(canvases, task.patch)  # (B, N, P*P)
    cut = cut.masked_fill(patches[..., None], 0.0)
    return unpatchify(cut, task.height, task.width)


def control_patches(task: DigitReadingTask, canvases: torch.Tensor,
                    attended: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: as many inked patches as ``attended`` holds (or all there are), drawn at
    random (a fixed seed) among the inked patches outside it: the control for blanking."""
    inked = patchify(canvases, task.patch).amax(dim=-1) > 0  # (B, N)
    elsewhere = inked & ~attended
    noise = torch.rand(attended.shape, generator=torch.Generator().manual_seed(0))
    score = torch.where(elsewhere, noise, -1.0)
    count = attended.sum(dim=1, keepdim=True).clamp(max=elsewhere.sum(dim=1, keepdim=True))
    rank = score.argsort(dim=1, descending=True).argsort(dim=1)
    return elsewhere & (rank < count)


@dataclass(frozen=True)
class ImageReading:
    """One patch reader on held-out canvases.

    Attributes:
        exact_match: the share of canvases read wholly right (every digit and the end).
        on_digit: mean share of a digit step's weight on patches overlapping its digit.
        blanked_changes: after blanking the patches holding 80 % of a step's weight, the share
            of right readings whose digit at that step changes.
        control_changes: after blanking as many other inked patches instead (drawn at random
            outside the blanked ones), the share whose digit at that step changes.
        moved_same: after one digit moves to another height, the share still read the same.
        moved_follows: of those, the share whose step's attention (its centre of weight, in
            rows) moves the same way as the digit, by at least half the distance.
        swapped: after the first two digits' images trade places, the share read as the swap.
        canvases: how many right readings the interventions start from.
    """

    exact_match: float
    on_digit: float
    blanked_changes: float
    control_changes: float
    moved_same: float
    moved_follows: float
    swapped: float
    canvases: int


def reading(trained: TrainedModel, samples: int = SAMPLES) -> ImageReading:
    """Read held-out canvases, then intervene on those read right (step 0, the first digit)."""
    task: DigitReadingTask = trained.task
    layout = task.layout(samples, held_out_generator())
    canvases, targets = task.paint(layout), task.targets_of(layout)
    predictions, weights = read(trained, canvases)  # (B, T), (B, T, N)
    right = task.correct(predictions, targets).all(dim=1)  # (B,)
    slots = torch.arange(layout.image.shape[1])
    present = slots[None] < layout.count[:, None]  # (B, K)
    on_digit = digit_weight(task, layout, weights)[present].mean().item()

    # The interventions, on the canvases read right; each changes the first digit's step.
    keep = right.nonzero().squeeze(1)
    layout = Layout(*(field[keep] for field in layout[:5]), layout.split)
    canvases, predictions, weights = canvases[keep], predictions[keep], weights[keep]
    first = weights[:, 0]  # step 0's map: (B, N)
    attended = top_patches(first)  # (B, N)
    blanked, _ = read(trained, _blank(task, canvases, attended))
    control, _ = read(trained, _blank(task, canvases, control_patches(task, canvases, attended)))

    # Move the first digit to another height (the farthest it can go).
    y = layout.y.clone()
    y[:, 0] = torch.where(y[:, 0] < (task.height - DIGIT) / 2, task.height - DIGIT, 0)
    moved_layout = layout._replace(y=y)
    moved, moved_weights = read(trained, task.paint(moved_layout))
    rows = patch_grid(task.height // task.patch, task.width // task.patch)[0].float()
    centre = (first * rows).sum(-1)  # the step's centre of weight, in patch rows: (B,)
    moved_centre = (moved_weights[:, 0] * rows).sum(-1)
    shift = (y[:, 0] - layout.y[:, 0]).float() / task.patch  # the digit's move, in patch rows
    same = (moved == predictions).all(dim=1)
    follows = (moved_centre - centre) * shift.sign() >= shift.abs() / 2

    # Swap the images of the first two digits, places kept.
    image, label = layout.image.clone(), layout.label.clone()
    image[:, [0, 1]], label[:, [0, 1]] = image[:, [1, 0]], label[:, [1, 0]]
    swapped_layout = layout._replace(image=image, label=label)
    swapped, _ = read(trained, task.paint(swapped_layout))
    swap_targets = task.targets_of(swapped_layout)
    return ImageReading(
        exact_match=right.float().mean().item(),
        on_digit=on_digit,
        blanked_changes=(blanked[:, 0] != predictions[:, 0]).float().mean().item(),
        control_changes=(control[:, 0] != predictions[:, 0]).float().mean().item(),
        moved_same=same.float().mean().item(),
        moved_follows=follows[same].float().mean().item(),
        swapped=task.correct(swapped, swap_targets).all(dim=1).float().mean().item(),
        canvases=len(keep))


@dataclass(frozen=True)
class StepBlanking:
    """Blanking what one output step looks at, on the canvases read right that have a digit
    there.

    A blanking that changes an earlier digit sends the reading down another path, so the
    shares that change are taken over the canvases whose earlier digits are all still read as
    before; ``blanked_kept`` and ``control_kept`` say how many those are.

    Attributes:
        step: the output step, which writes digit ``step`` (counted from 0).
        canvases: how many right readings have a digit at that step.
        blanked_changes: after blanking the patches holding 80 % of the step's weight, the
            share whose digit at that step changes.
        control_changes: the same after blanking as many other inked patches instead.
        blanked_kept: the share of ``canvases`` whose earlier digits survive the blanking.
        control_kept: the share whose earlier digits survive the control's.
    """

    step: int
    canvases: int
    blanked_changes: float
    control_changes: float
    blanked_kept: float
    control_kept: float


def blanking_by_step(trained: TrainedModel, samples: int = SAMPLES) -> list[StepBlanking]:
    """Blank what each digit step looks at, one step at a time, on canvases read right."""
    task: DigitReadingTask = trained.task
    layout = task.layout(samples, held_out_generator())
    canvases = task.paint(layout)
    predictions, weights = read(trained, canvases)  # (B, T), (B, T, N)
    right = task.correct(predictions, task.targets_of(layout)).all(dim=1)  # (B,)
    results = []
    for step in range(layout.image.shape[1]):
        keep = right & (layout.count > step)
        before, page = predictions[keep], canvases[keep]
        attended = top_patches(weights[keep, step])  # (B, N)
        shares = []
        for patches in (attended, control_patches(task, page, attended)):
            after, _ = read(trained, _blank(task, page, patches))
            kept = (after[:, :step] == before[:, :step]).all(dim=1)  # (B,)
            changed = after[kept, step] != before[kept, step]
            shares += [changed.float().mean().item(), kept.float().mean().item()]
        results.append(StepBlanking(step, int(keep.sum()), shares[0], shares[2], shares[1],
                                    shares[3]))
    return results


def cached_blanking_by_step(trained: TrainedModel) -> list[StepBlanking]:
    """:func:`blanking_by_step`, computed once per model and code version."""
    return cached_result(blanking_by_step, trained,
                         encode=lambda steps: [asdict(step) for step in steps],
                         decode=lambda data: [StepBlanking(**step) for step in data])


def cached_reading(trained: TrainedModel) -> ImageReading:
    """:func:`reading`, computed once per model and code version."""
    return cached_result(reading, trained, encode=asdict,
                         decode=lambda data: ImageReading(**data))
