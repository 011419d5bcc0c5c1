"""The induction-heads explorer computes in the browser what the Python model computes.

A hundred held-out sequences are typed into the page at three training steps (before, during
and after the drop), with heads switched off through the page's own checkboxes and each head's
heatmap shown in turn. Its predictions must be PyTorch's exactly; the weights it shows, the
loss it reports on the repeat and the shown head's weight on the letters to copy must be
within 1e-4 of the chapter's own forward pass with heads zero-ablated
([`run_with`][attnprimer.site.experiments.induction_interventions.run_with]). Then the page:
its sequence generator, links, a phone-sized viewport, the keyboard.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from torch.nn import functional as F

from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.induction_heads import cached_curves
from attnprimer.site.experiments.induction_interventions import run_with
from attnprimer.site.explorer.induction import find_repeat
from attnprimer.tasks.induction import held_out_pairs
from attnprimer.training.train import held_out_generator

SAMPLES = 100
TOLERANCE = 1e-4
STEPS = [400, 750, 2000]  # before the drop, at it, the end
HEADS = ["1.1", "1.2", "2.1", "2.2"]
OFF = [[], ["1.1"], ["1.2"], ["2.1"], ["2.2"], ["2.1", "2.2"]]

READ_PAGE = """() => {
  const results = document.getElementById("induction-results");
  const message = document.getElementById("induction-message");
  const cells = (selector) => [...results.querySelectorAll(selector)];
  const readout = document.getElementById("induction-readout").dataset;
  const table = results.querySelector("table[data-attention]");
  const rows = [];
  for (const cell of table ? table.querySelectorAll("td[data-weight]") : []) {
    (rows[Number(cell.dataset.row)] ??= [])[Number(cell.dataset.col)] = Number(cell.dataset.weight);
  }
  return {
    hidden: results.hidden,
    message: message.hidden ? null : message.textContent,
    step: document.getElementById("induction-step-shown").textContent,
    predictions: cells("[data-prediction]").map((node) => Number(node.dataset.prediction)),
    truths: cells("[data-truth]").map((node) => Number(node.dataset.truth)),
    copyable: cells("[data-prediction]").flatMap((node, t) => node.dataset.copyable ? [t] : []),
    targets: cells("td[data-target]").map((node) => [Number(node.dataset.row),
                                                     Number(node.dataset.col)]),
    head: table ? table.dataset.attention : null,
    weights: rows,
    repeatLoss: readout.repeatLoss === undefined ? null : Number(readout.repeatLoss),
    score: readout.score === undefined ? null : Number(readout.score),
  };
}"""


@pytest.fixture(scope="module")
def trained():
    return site_model("induction", layers=2, seed=0).trained()  # built with the site: cached


@pytest.fixture
def explorer(visit):
    visited = visit("explorer/induction-heads/")
    status = visited.page.wait_for_selector("#induction-status[data-ready]", state="attached")
    assert status.get_attribute("data-ready") == "true", status.text_content()
    return visited


def _model_at(trained, step: int):
    steps = cached_curves(trained).steps
    index = steps.index(step)
    return trained.model.model if index == len(steps) - 1 else trained.model.snapshot(index)


def _slide_to(page, step: int) -> None:
    """Move the slider with the keyboard, as a reader would, until it shows ``step``."""
    page.focus("#induction-step")
    page.keyboard.press("Home")
    for _ in range(40):
        if page.evaluate(READ_PAGE)["step"].startswith(f"step {step:,}"):
            return
        page.keyboard.press("ArrowRight")
    raise AssertionError(f"the slider never showed step {step}")


def test_the_page_computes_what_pytorch_computes(explorer, trained):
    task, page = trained.task, explorer.page
    sequences = task.repeats(SAMPLES, held_out_generator()).tokens[:, :-1]  # (B, 31)
    ticked: set[str] = set()
    for step in STEPS:
        _slide_to(page, step)
        model = _model_at(trained, step)
        for index, tokens in enumerate(sequences):
            text = task.decode(tokens)
            off, head = OFF[index % len(OFF)], HEADS[index % len(HEADS)]
            for name in ticked.symmetric_difference(off):  # click only what changes
                page.set_checked(f"#induction-off-{name.replace('.', '-')}", name in off)
            ticked = set(off)
            page.select_option("#induction-head", head)
            page.fill("#induction-input", text)
            shown = page.evaluate(READ_PAGE)
            where = f"step {step}, {text}, off {off}, head {head}"
            with torch.no_grad():
                contexts = run_with(model, tokens[None])[2]
                logits, weights, _ = run_with(model, tokens[None], contexts={
                    f"layer {name}": torch.zeros_like(contexts[f"layer {name}"]) for name in off})
            assert shown["message"] is None and not shown["hidden"], where
            assert shown["predictions"] == logits[0].argmax(-1).tolist(), where
            assert shown["truths"] == tokens[1:].tolist(), where
            assert shown["head"] == f"layer {head}", where
            torch.testing.assert_close(
                torch.tensor(shown["weights"], dtype=torch.float64),
                weights[f"layer {head}"][0].double(), atol=TOLERANCE, rtol=0,
                msg=lambda message, where=where: f"{where}: {message}")
            first, repeat, length = find_repeat(text)
            queries = list(range(repeat, repeat + length - 1))
            assert shown["copyable"] == queries, where
            targets = [[t, t - (repeat - first) + 1] for t in queries]
            assert shown["targets"] == targets, where
            losses = F.cross_entropy(logits[0, queries], tokens[[t + 1 for t in queries]])
            assert shown["repeatLoss"] == pytest.approx(losses.item(), abs=TOLERANCE), where
            score = torch.stack([weights[f"layer {head}"][0, t, s] for t, s in targets]).mean()
            assert shown["score"] == pytest.approx(score.item(), abs=TOLERANCE), where
    assert explorer.console_errors == [], explorer.console_errors


def _has_segment_along(text: str, kind: torch.Tensor, alphabet: str) -> bool:
    """Whether three letters or more stand twice in ``text``, without overlapping, each step
    from one to the next a pair that ``kind`` (V + 1, V + 1) allows (never a letter twice)."""
    steps = [bool(kind[alphabet.index(a), alphabet.index(b)]) and a != b
             for a, b in itertools.pairwise(text)]  # steps[i]: text[i] -> text[i + 1]
    for repeat in range(len(text)):
        for first in range(repeat):
            length = 0
            while (first + length < repeat and repeat + length < len(text)
                   and text[first + length] == text[repeat + length]):
                length += 1
            if any(steps[start] and steps[start + 1] for start in range(first, first + length - 2)):
                return True
    return False


def test_generated_sequences_have_a_repeat_along_the_pairs_asked_for(explorer, trained):
    """The segment is 4 to 12 letters; the 32nd letter is cut, so at least 3 are shown. A
    chance repeat elsewhere may be as long, so the test looks for the segment, not for what
    find_repeat picks."""
    task, page = trained.task, explorer.page
    held = held_out_pairs(task.vocab_size)
    for held_out in (False, True):
        page.set_checked("#induction-pairs", held_out)
        for _ in range(30):
            page.click("#induction-generate")
            text = page.input_value("#induction-input")
            assert len(text) == 31 and set(text) <= set(task.alphabet[1:]), text
            assert f"input={text}" in page.evaluate("location.hash")
            assert _has_segment_along(text, held if held_out else ~held, task.alphabet), text
            shown = page.evaluate(READ_PAGE)
            assert shown["message"] is None and len(shown["predictions"]) == 31
            assert shown["copyable"]  # the page found a repeat to mark
    assert explorer.console_errors == [], explorer.console_errors


def test_the_page_starts_on_the_chapters_example_at_the_end_of_training(explorer, trained):
    from attnprimer.site.figures.induction_heads import EXAMPLE

    page = explorer.page
    assert page.input_value("#induction-input") == EXAMPLE
    shown = page.evaluate(READ_PAGE)
    assert shown["step"].startswith("step 2,000") and shown["head"] == "layer 2.1"
    assert shown["copyable"] == [10, 11, 12] and shown["targets"] == [[10, 3], [11, 4], [12, 5]]
    curves = cached_curves(trained)  # the note: the chapter's held-out numbers at this step
    note = page.text_content("#induction-held-out")
    for number in (curves.repeat_loss[-1], curves.first_loss[-1], curves.chance,
                   curves.previous_token["layer 2.1"][-1], curves.induction["layer 2.1"][-1]):
        assert f"{number:.2f}" in note, (number, note)


def test_bad_input_gets_a_message_not_an_exception(explorer):
    page = explorer.page
    for typed, complaint in [("abcab", "upper case"), ("ABC DA", "no spaces"),
                             ("AB" * 16, "1 to 31"), ("ABUV", "“U”, “V”")]:
        page.fill("#induction-input", "")
        page.locator("#induction-input").press_sequentially(typed)
        shown = page.evaluate(READ_PAGE)
        assert shown["message"] is not None and complaint in shown["message"], (typed, shown)
        assert shown["hidden"] is True
    page.fill("#induction-input", "ABCD")  # no repeat: said, and nothing outlined
    shown = page.evaluate(READ_PAGE)
    assert shown["message"] is None and shown["copyable"] == [] and shown["targets"] == []
    assert "nothing to copy" in page.text_content("#induction-readout")
    assert explorer.console_errors == [], explorer.console_errors


def test_a_link_reopens_an_example(visit):
    visited = visit("explorer/induction-heads/#explore=induction&input=ABCDEFGHABCDEFG"
                    "&step=700&head=1.2&off=2.1")
    page = visited.page
    page.wait_for_selector("#induction-status[data-ready='true']", state="attached")
    assert page.input_value("#induction-input") == "ABCDEFGHABCDEFG"
    assert page.is_checked("#induction-off-2-1")
    assert sum(page.is_checked(f"#induction-off-{h.replace('.', '-')}") for h in HEADS) == 1
    shown = page.evaluate(READ_PAGE)
    assert shown["step"].startswith("step 700") and shown["head"] == "layer 1.2"
    page.set_checked("#induction-off-1-1", True)  # the reader changes it: so does the address
    assert "off=1.1%2C2.1" in page.evaluate("location.hash")
    assert page.get_attribute("#induction-link", "href") == page.evaluate("location.hash")

    visited = visit("explorer/induction-heads/#explore=induction&input=ABAB&step=13&head=9.9"
                    "&off=7.1")  # nonsense: a step not offered, a head that does not exist
    page = visited.page
    page.wait_for_selector("#induction-status[data-ready='true']", state="attached")
    shown = page.evaluate(READ_PAGE)
    assert shown["step"].startswith("step 2,000") and shown["head"] == "layer 2.1"
    assert shown["copyable"] == [2] and visited.console_errors == []


def test_nothing_overflows_sideways_on_a_phone(browser, base_url):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(base_url + "explorer/induction-heads/", wait_until="networkidle")
        page.wait_for_selector("#induction-status[data-ready='true']", state="attached")
        page.fill("#induction-input", "ABCDEFGHIJKLMNOPQRSTABCDEFGHIJK")  # the longest: 31
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        box = page.locator("#induction-explorer").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        overflowing = page.evaluate("""() => [...document.querySelectorAll(
            '#induction-explorer *')].filter(node => {
              const box = node.getBoundingClientRect();
              return !node.closest('.explorer-scroll') && box.width > 0 && box.right > 390;
            }).map(node => node.tagName + '#' + node.id + '.' + node.className)""")
        assert overflowing == [], overflowing
    finally:
        page.close()


def test_every_control_is_labelled_and_reached_by_the_keyboard(explorer):
    page = explorer.page
    controls = page.evaluate("""() => [...document.querySelectorAll(
        '.explorer input, .explorer select, .explorer button, .explorer a')]
        .filter(node => !node.disabled)
        .map(node => ({id: node.id, name: node.labels && node.labels.length
          ? [...node.labels].map(label => label.textContent.trim()).join(' ')
          : (node.getAttribute('aria-label') || node.textContent.trim())}))""")
    assert len(controls) >= 10  # slider, text, generate, pairs, four switches, head, link
    assert [control["id"] for control in controls if not control["name"]] == []
    assert all(control["id"] for control in controls), controls
    page.focus("#induction-step")
    reached = set()
    for _ in range(len(controls) + 20):
        reached.add(page.evaluate("document.activeElement.id"))
        page.keyboard.press("Tab")
    missed = [control["id"] for control in controls if control["id"] not in reached]
    assert missed == [], missed
    page.focus("#induction-step")  # the slider moves with the arrow keys
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(READ_PAGE)["step"].startswith("step 1,600")
    assert "step=1600" in page.evaluate("location.hash")
    assert page.get_attribute("#induction-step", "aria-valuetext") == "step 1,600"
    page.focus("#induction-off-1-2")  # and a switch works from the keyboard
    page.keyboard.press("Space")
    assert page.is_checked("#induction-off-1-2")
    assert "off=1.2" in page.evaluate("location.hash")
