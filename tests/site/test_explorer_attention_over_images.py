"""The digit-reading explorer computes in the browser what the Python digit reader computes.

A hundred held-out canvases are built on the page through its own controls (each digit placed
with the digit, scan, column and row inputs), read with and without a blanked patch (a click on
a map, as a reader blanks one); the page must write exactly what PyTorch writes, and every
weight of every step's map (read at full precision from the patches' ``data-weight``) must be
within 1e-4 of PyTorch's. The Python side of blanking is
[`blank_patches`][attnprimer.site.explorer.images.blank_patches], which is the chapter's. Then
the page itself: links, drawing with the pointer, a phone-sized viewport and the keyboard.
"""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest
import torch

from attnprimer.site.experiments.attention_over_images import read
from attnprimer.site.explorer.images import (
    blank_patches,
    decode_canvas,
    encode_canvas,
    images_model,
)
from attnprimer.site.figures.attention_over_images import example_canvas
from attnprimer.tasks.digit_canvas import digit_images
from attnprimer.training.train import held_out_generator

SAMPLES = 100
TOLERANCE = 1e-4
PAGE = "explorer/attention-over-images/"

# What the page shows: what it wrote, each step's class and the weights of its map.
READ_PAGE = """() => {
  const maps = [...document.querySelectorAll('#images-maps figure[data-step]')];
  return {
    written: document.getElementById('images-written').dataset.written,
    predictions: maps.map(map => Number(map.dataset.prediction)),
    weights: maps.map(map => [...map.querySelectorAll('.images-patch')].map(
      cell => Number(cell.dataset.weight))),
    blanked: [...document.querySelectorAll('#images-maps figure[data-step="0"] .images-patch')]
      .flatMap((cell, n) => cell.getAttribute('aria-pressed') === 'true' ? [n] : []),
    link: document.getElementById('images-link').getAttribute('href'),
    message: document.getElementById('images-message').hidden ? null
      : document.getElementById('images-message').textContent,
  };
}"""


@pytest.fixture(scope="module")
def trained():
    return images_model().trained()  # built with the site: cached


def _open(visit, path: str = PAGE):
    visited = visit(path)
    status = visited.page.wait_for_selector("#images-status[data-ready]", state="attached")
    assert status.get_attribute("data-ready") == "true", status.text_content()
    return visited


def _state(shown) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(shown["link"].lstrip("#")).items()}


def _compare(shown, trained, canvas: torch.Tensor, blanked: list[int], where: str) -> None:
    """The page's reading against PyTorch's, on ``canvas`` (Hi, Wi) with ``blanked`` patches."""
    assert shown["message"] is None, (where, shown["message"])
    assert _state(shown)["canvas"] == encode_canvas(canvas), where
    assert shown["blanked"] == blanked, where
    chosen = torch.zeros(1, 40, dtype=torch.bool)
    chosen[0, blanked] = True
    predictions, weights = read(trained, blank_patches(canvas[None], chosen, 4))
    assert shown["predictions"] == predictions[0].tolist(), where
    text = trained.task.describe_output(predictions[0])
    assert shown["written"] == text, where
    torch.testing.assert_close(torch.tensor(shown["weights"], dtype=torch.float64),
                               weights[0].double(), atol=TOLERANCE, rtol=0,
                               msg=lambda message: f"{where}: {message}")


def test_a_hundred_held_out_canvases_read_as_pytorch_reads_them(visit, trained):
    visited = _open(visit)
    page = visited.page
    task = trained.task
    layout = task.layout(SAMPLES, held_out_generator())
    canvases = task.paint(layout)
    labels = digit_images("held-out")[1]
    for index in range(SAMPLES):
        page.click("#images-clear")
        for slot in range(int(layout.count[index])):
            image = int(layout.image[index, slot])
            label = int(labels[image])
            which = int((labels[:image] == label).sum()) + 1  # its place among its digit's scans
            page.select_option("#images-digit", str(label))
            page.fill("#images-which", str(which))
            page.fill("#images-column", str(int(layout.x[index, slot])))
            page.fill("#images-row", str(int(layout.y[index, slot])))
            page.click("#images-place")
        shown = page.evaluate(READ_PAGE)
        _compare(shown, trained, canvases[index], [], f"canvas {index}")
        # blank the patch one step weighs most, with a click on that step's map
        step = index % 5
        patch = max(range(40), key=lambda n: shown["weights"][step][n])
        page.click(f"#images-patch-{step}-{patch}")
        _compare(page.evaluate(READ_PAGE), trained, canvases[index], [patch],
                 f"canvas {index}, patch {patch} blanked")
    assert visited.console_errors == [], visited.console_errors


def test_random_canvases_and_the_chapters_canvas(visit, trained):
    visited = _open(visit)
    page = visited.page
    shown = page.evaluate(READ_PAGE)
    canvas, _ = example_canvas(trained)
    _compare(shown, trained, canvas, [], "the chapter's canvas")
    assert shown["written"] == "7721."
    for attempt in range(10):
        page.click("#images-random")
        shown = page.evaluate(READ_PAGE)
        canvas = decode_canvas(_state(shown)["canvas"], 16, 40)
        assert canvas.sum() > 0, attempt
        _compare(shown, trained, canvas, [], f"random canvas {attempt}")
    page.click("#images-example")
    assert page.evaluate(READ_PAGE)["written"] == "7721."
    assert visited.console_errors == [], visited.console_errors


def test_a_link_reopens_a_canvas_with_its_blanked_patches(visit, trained):
    canvas, _ = example_canvas(trained)
    link = f"{PAGE}#canvas={encode_canvas(canvas)}&blank=4,13,14"
    visited = _open(visit, link)
    shown = visited.page.evaluate(READ_PAGE)
    _compare(shown, trained, canvas, [4, 13, 14], "the link")
    assert shown["written"] == "721."  # the page's claim: the second 7 is gone
    assert _state(shown)["blank"] == "4,13,14"

    page = visited.page
    page.click("#images-unblank")  # the reader changes it: so does the address
    assert "blank=" not in page.evaluate("location.hash")
    assert page.evaluate(READ_PAGE)["written"] == "7721."
    page.click("#images-clear")
    box = page.locator("#images-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.8, steps=8)
    page.mouse.up()
    drawn = decode_canvas(parse_qs(page.evaluate("location.hash").lstrip("#"))["canvas"][0],
                          16, 40)
    assert drawn.sum() > 0 and drawn[:, 8:].sum() == 0  # one stroke, near the left edge
    assert drawn.max() == 1 and 0 < drawn[drawn > 0].min() < 1  # full ink, soft edges
    _compare(page.evaluate(READ_PAGE), trained, drawn, [], "a drawn stroke")

    nonsense = _open(visit, f"{PAGE}#canvas=xyz&blank=99,-1,3").page
    shown = nonsense.evaluate(READ_PAGE)
    assert "chapter's canvas" in nonsense.text_content("#images-message")
    assert shown["written"] == "7721." and shown["blanked"] == [3]
    assert visited.console_errors == [], visited.console_errors


def test_a_scan_dragged_onto_the_canvas_lands_where_it_was_let_go(visit, trained):
    visited = _open(visit)
    page = visited.page
    page.click("#images-clear")
    page.select_option("#images-digit", "3")
    page.fill("#images-which", "2")
    start = page.locator("#images-preview").bounding_box()
    box = page.locator("#images-canvas").bounding_box()
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    # let go over pixel (8.2, 20.3): the scan's centre goes there, its corner to (4, 16)
    page.mouse.move(box["x"] + box["width"] * 20.3 / 40, box["y"] + box["height"] * 8.2 / 16,
                    steps=10)
    page.mouse.up()
    assert (page.input_value("#images-row"), page.input_value("#images-column")) == ("4", "16")
    images, labels = digit_images("held-out")
    expected = torch.zeros(16, 40)
    expected[4:12, 16:24] = images[(labels == 3).nonzero()[1, 0]]
    _compare(page.evaluate(READ_PAGE), trained, expected, [], "a dragged scan")
    assert visited.console_errors == [], visited.console_errors


def test_nothing_overflows_sideways_on_a_phone(browser, base_url):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(base_url + PAGE, wait_until="networkidle")
        page.wait_for_selector("#images-status[data-ready='true']", state="attached")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        box = page.locator("#images-explorer").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        canvas = page.locator("#images-canvas").bounding_box()
        assert canvas["width"] >= 300  # drawn large enough to draw on with a finger
        overflowing = page.evaluate("""() => [...document.querySelectorAll('#images-explorer *')]
            .filter(node => { const box = node.getBoundingClientRect();
                              return box.width > 0 && box.right > 390; })
            .map(node => node.tagName + '#' + node.id + '.' + node.className)""")
        assert overflowing == [], overflowing
    finally:
        page.close()


def test_every_control_is_labelled_and_reached_by_the_keyboard(visit):
    visited = _open(visit)
    page = visited.page
    controls = page.evaluate("""() => [...document.querySelectorAll(
        '#images-explorer input, #images-explorer select, #images-explorer button,' +
        ' #images-explorer a')]
        .filter(node => !node.disabled && node.tabIndex >= 0)
        .map(node => ({id: node.id, name: node.labels && node.labels.length
          ? [...node.labels].map(label => label.textContent.trim()).join(' ')
          : (node.getAttribute('aria-label') || node.textContent.trim())}))""")
    assert len(controls) >= 12  # the buttons, the placing fields, a stop on each of five maps
    unnamed = [control["id"] for control in controls if not control["name"]]
    assert unnamed == [] and all(control["id"] for control in controls), controls
    page.focus("#images-brush")
    reached = set()
    for _ in range(len(controls) + 30):
        reached.add(page.evaluate("document.activeElement.id"))
        page.keyboard.press("Tab")
    missed = [control["id"] for control in controls if control["id"] not in reached]
    assert missed == [], missed
    # a map from the keyboard: focus it, move right twice and down once, blank with Enter
    page.focus("#images-patch-0-0")
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "Enter"):
        page.keyboard.press(key)
    assert page.evaluate("document.activeElement.id") == "images-patch-0-12"
    assert page.get_attribute("#images-patch-0-12", "aria-pressed") == "true"
    assert "blank=12" in page.evaluate("location.hash")
    page.keyboard.press("Space")  # and back
    assert page.get_attribute("#images-patch-0-12", "aria-pressed") == "false"
    assert visited.console_errors == [], visited.console_errors
