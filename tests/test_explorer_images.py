"""The digit-reading explorer's export: exact weights, the held-out scans, the canvas as text,
and blanking as the chapter blanks.

Tiny models only (trained for a step inside the test); the site's model and the claims of
``docs/explorer/attention-over-images.md`` are checked in
``tests/claims/test_claims_explorer_attention_over_images.py``, and the page in the browser in
``tests/site/test_explorer_attention_over_images.py``.
"""

from __future__ import annotations

import importlib

import pytest
import torch

from attnprimer.site.experiments.attention_over_images import _blank
from attnprimer.site.explorer import images
from attnprimer.site.explorer.export import decode_array, explorer_json
from attnprimer.site.explorer.images import (
    blank_patches,
    decode_canvas,
    encode_canvas,
    export_digit_reader,
    held_out_digits,
    images_data,
)
from attnprimer.tasks.digit_canvas import digit_images
from attnprimer.tasks.digit_reading import DigitReadingTask
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import TrainConfig, held_out_generator, train
from docs_hooks import load_hook


@pytest.fixture(scope="module")
def tiny():
    return train(DigitReadingTask(dim=8), TrainConfig(steps=1))


def test_a_held_out_canvas_goes_into_text_and_back_exactly():
    task = DigitReadingTask()
    canvases = task.sample(20, held_out_generator()).inputs  # (B, Hi, Wi)
    for canvas in canvases:
        text = encode_canvas(canvas)
        assert len(text) == 16 * 40 and set(text) <= set("0123456789abcdefg")
        assert torch.equal(decode_canvas(text, 16, 40), canvas)
    with pytest.raises(ValueError, match="k / 16"):
        encode_canvas(torch.tensor([[0.3]]))
    with pytest.raises(ValueError, match="640 characters"):
        decode_canvas("0" * 639, 16, 40)


def test_blanking_is_the_chapters():
    task = DigitReadingTask()
    canvases = task.sample(30, held_out_generator()).inputs
    chosen = torch.rand(30, 40, generator=torch.Generator().manual_seed(0)) < 0.2  # (B, N)
    blanked = blank_patches(canvases, chosen, task.patch)
    assert torch.equal(blanked, _blank(task, canvases, chosen))
    # pixel by pixel: patch (r, q) covers rows 4r..4r+3 and columns 4q..4q+3
    rows, cols = torch.arange(16)[:, None] // 4, torch.arange(40)[None] // 4
    pixel_blanked = chosen[:, rows * 10 + cols]  # (B, Hi, Wi)
    assert torch.equal(blanked, canvases.masked_fill(pixel_blanked, 0.0))


def test_the_held_out_scans_are_the_split_exactly():
    digits = held_out_digits()
    scans, labels = digit_images("held-out")
    assert digits["labels"] == labels.tolist()
    decoded = torch.stack([decode_canvas(text, 8, 8) for text in digits["images"]])
    assert torch.equal(decoded, scans)


def test_every_parameter_goes_out_exactly(tiny):
    exported = export_digit_reader(tiny, held_out=False)
    state = tiny.model.state_dict()
    assert set(exported["weights"]) == set(state)
    for name, entry in exported["weights"].items():
        assert torch.equal(decode_array(entry), state[name]), name
    assert (exported["dim"], exported["heads"], exported["pre_norm"]) == (8, 4, True)
    assert (exported["steps"], exported["end"], exported["start"]) == (5, 10, 12)
    from attnprimer.tasks import CountingTask

    with pytest.raises(TypeError, match="expected a digit reader"):
        export_digit_reader(train(CountingTask(hidden=4), TrainConfig(steps=1)), held_out=False)


def test_the_file_is_deterministic_and_keeps_an_old_score_only_for_the_same_weights(
        tiny, monkeypatch):
    calls = []
    monkeypatch.setattr(images, "exact_match",
                        lambda trained: calls.append(1) or {"exact_match": 0.5})
    data = images_data(tiny)
    assert calls == [1] and data["reader"]["held_out"] == {"exact_match": 0.5}
    assert explorer_json(images_data(tiny, held_out=False)) == explorer_json(
        images_data(tiny, held_out=False))
    kept = images_data(tiny, previous={"reader": {**data["reader"],
                                                  "held_out": {"exact_match": 0.25}}})
    assert calls == [1] and kept["reader"]["held_out"] == {"exact_match": 0.25}
    changed = {**data["reader"], "weights": {}, "held_out": {"exact_match": 0.25}}
    assert images_data(tiny, previous={"reader": changed})["reader"]["held_out"] == {
        "exact_match": 0.5}
    assert calls == [1, 1]
    example = decode_canvas(data["example"]["canvas"], 16, 40)
    assert example.sum() > 0 and len(data["example"]["digits"]) == 4


def test_the_hook_writes_the_pages_file_and_names_its_checkpoint(monkeypatch, tmp_path):
    hook = load_hook("explorer")
    module, _, name = hook.EXPORTS["attention-over-images.json"].partition(":")
    assert getattr(importlib.import_module(module), name) is images.export_site
    monkeypatch.setattr(images, "images_data", lambda previous: {"format": 1, "old": previous})
    path = tmp_path / "explorer" / "attention-over-images.json"
    model = images.images_model()
    assert images.export_site(path) == (True, [cached_path(model.task, model.config)])
    assert path.read_text() == '{"format":1,"old":null}\n'
    assert images.export_site(path) == (True, [cached_path(model.task, model.config)])
    assert path.read_text() == '{"format":1,"old":{"format":1,"old":null}}\n'
