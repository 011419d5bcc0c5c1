"""The digit reader of "Attention over images", exported for the explorer page that runs it.

The page ``docs/explorer/attention-over-images.md`` lets a reader draw digits on a 16 x 40
canvas, or place held-out digits on it, and watch the patch reader
([`PatchReader`][attnprimer.models.patch_reader.PatchReader]) read them in the browser, with
the map over the canvas of each output step; clicking a patch blanks it. Its script
(``docs/javascripts/explorer-attention-over-images.js``) repeats the model's forward pass on the
layers of ``explorer-nn.js``. This module gives it:

* the model's settings and every parameter, exactly
  ([`export_digit_reader`][attnprimer.site.explorer.images.export_digit_reader]);
* the 449 held-out digit images, for the reader to place, as their original values 0 to 16
  ([`held_out_digits`][attnprimer.site.explorer.images.held_out_digits]);
* the chapter's example canvas, which the page opens on;
* the model's held-out exact match.

[`blank_patches`][attnprimer.site.explorer.images.blank_patches] is the page's blanking in
Python: a patch set to the background, as the chapter's intervention does. The browser tests
compare the page with it.

Shape legend: B batch, Hi x Wi canvas, N patches, P patch size.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from attnprimer.models.patch_reader import PatchReader
from attnprimer.patches import patchify, unpatchify
from attnprimer.site.catalogue import SiteModel
from attnprimer.site.explorer.export import write_explorer_data
from attnprimer.site.explorer.families import encode_array, exact_match
from attnprimer.tasks.digit_canvas import digit_images
from attnprimer.tasks.digit_reading import END, DigitReadingTask
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import TrainedModel

__all__ = [
    "IMAGES_FORMAT",
    "LEVELS",
    "blank_patches",
    "decode_canvas",
    "encode_canvas",
    "export_digit_reader",
    "export_site",
    "held_out_digits",
    "images_data",
    "images_model",
]

IMAGES_FORMAT = 1
"""The version of the file's layout; the page's script refuses any other."""

LEVELS = 16
"""scikit-learn's digits count ink in 17 levels, 0 to 16; the tasks scale them to 0 to 1."""

_DIGITS = "0123456789abcdefg"  # one character per level


def images_model() -> SiteModel:
    """The model the page runs: seed 0 of the chapter's digit reader."""
    return SiteModel.default(DigitReadingTask(), 0)


def encode_canvas(canvas: torch.Tensor) -> str:
    """A canvas (Hi, Wi) of levels k / 16 as one character per pixel, row by row, ``0``-``g``.

    This is how the page's address holds a canvas. It is exact for the canvases of the task,
    whose pixels are an 8 x 8 digit's values (k / 16) or background.

    Examples:
        >>> encode_canvas(torch.tensor([[0.0, 0.5, 1.0]]))
        '08g'
    """
    levels = (canvas * LEVELS).round()
    if not torch.equal(levels / LEVELS, canvas) or levels.min() < 0 or levels.max() > LEVELS:
        raise ValueError("a canvas's pixels must be k / 16 for k from 0 to 16")
    return "".join(_DIGITS[int(level)] for level in levels.flatten().tolist())


def decode_canvas(text: str, height: int, width: int) -> torch.Tensor:
    """The canvas (Hi, Wi) that [`encode_canvas`][attnprimer.site.explorer.images.encode_canvas]
    wrote as ``text``.

    Examples:
        >>> decode_canvas("08g0", 2, 2)
        tensor([[0.0000, 0.5000],
                [1.0000, 0.0000]])
    """
    if len(text) != height * width or any(char not in _DIGITS for char in text):
        raise ValueError(f"expected {height * width} characters from {_DIGITS!r}")
    levels = torch.tensor([_DIGITS.index(char) for char in text], dtype=torch.float32)
    return (levels / LEVELS).reshape(height, width)


def blank_patches(canvases: torch.Tensor, patches: torch.Tensor, patch: int) -> torch.Tensor:
    """The canvases with the chosen patches set to the background (0), as the chapter blanks.

    Args:
        canvases: (B, Hi, Wi).
        patches: (B, N) bool, True where a patch is blanked (row-major patch order).
        patch: P.

    Examples:
        >>> blanked = blank_patches(torch.ones(1, 4, 8), torch.tensor([[False, True]]), 4)
        >>> blanked[0, 0].tolist()
        [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    """
    height, width = canvases.shape[-2:]
    cut = patchify(canvases, patch)  # (B, N, P*P)
    cut = cut.masked_fill(patches[..., None], 0.0)
    return unpatchify(cut, height, width)  # (B, Hi, Wi)


def held_out_digits() -> dict[str, Any]:
    """The held-out digit images as their levels, for the page to place: 449 strings of 64
    characters (row by row, ``0``-``g``) and their labels.

    Examples:
        >>> digits = held_out_digits()
        >>> len(digits["images"]), len(digits["images"][0]), digits["labels"][:4]
        (449, 64, [3, 7, 1, 5])
    """
    images, labels = digit_images("held-out")
    return {"images": [encode_canvas(image) for image in images], "labels": labels.tolist()}


def export_digit_reader(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a trained patch reader: its settings and every parameter.

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(DigitReadingTask(dim=8), TrainConfig(steps=1))
        >>> exported = export_digit_reader(trained, held_out=False)
        >>> exported["height"], exported["width"], exported["patch"], exported["heads"]
        (16, 40, 4, 4)
        >>> exported["weights"]["decoder.score.v"]["shape"]
        [8]
    """
    task, model = trained.task, trained.model
    if type(task) is not DigitReadingTask or not isinstance(model, PatchReader):
        raise TypeError(f"expected a digit reader, got {type(task).__name__} "
                        f"with {type(model).__name__}")
    return {
        "task": task.name,
        "height": task.height,
        "width": task.width,
        "patch": task.patch,
        "dim": task.dim,
        "heads": model.mix.attention.num_heads,
        "pre_norm": model.mix.pre_norm,
        "steps": model.steps,
        "end": END,
        "start": model.decoder.start,
        "num_classes": task.num_classes,
        "levels": LEVELS,
        "held_out": exact_match(trained) if held_out else None,
        "weights": {name: encode_array(value) for name, value in model.state_dict().items()},
    }


def images_data(trained: TrainedModel | None = None, *, held_out: bool = True,
                previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything the page needs, as one JSON-ready dict.

    Args:
        trained: the model; by default the site's, from the cache.
        held_out: include the held-out exact match.
        previous: what the file held before; its exact match is kept if the model is the same.
    """
    from attnprimer.site.figures.attention_over_images import example_canvas

    if trained is None:
        trained = images_model().trained()
    reader = export_digit_reader(trained, held_out=False)
    old = previous.get("reader") if isinstance(previous, Mapping) else None
    if held_out:  # evaluation is deterministic: the same weights keep their old result
        same = isinstance(old, Mapping) and old.get("weights") == reader["weights"]
        reader["held_out"] = old["held_out"] if same and old.get("held_out") else (
            exact_match(trained))
    reader["label"] = "digit reader, seed 0"
    example, layout = example_canvas(trained)
    return {"format": IMAGES_FORMAT, "reader": reader, "digits": held_out_digits(),
            "example": {"canvas": encode_canvas(example),
                        "digits": layout.label[0, : int(layout.count[0])].tolist()}}


def _read(path: Path) -> Any:
    import json

    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def export_site(path: str | os.PathLike) -> tuple[bool, list[Path]]:
    """The docs build's step: write the page's file to ``path`` (unless it would not change),
    and name the checkpoint of the model it exported."""
    path = Path(path)
    written = write_explorer_data(path, images_data(previous=_read(path)))
    model = images_model()
    return written, [cached_path(model.task, model.config)]
