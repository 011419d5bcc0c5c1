"""The attention explorer computes in the browser what the Python models compute.

A hundred held-out inputs per model are typed into the page, with and without each of the chapters'
interventions set through the page's own controls; its predictions must be the PyTorch model's
exactly, and every attention weight it shows (read at full precision from the cells'
``data-weight``) must be within 1e-4 of PyTorch's. The Python side of each intervention is the
package's ([`attnprimer.site.explorer.interventions`][attnprimer.site.explorer.interventions] and
[`heads_off`][attnprimer.site.experiments.head_ablation.heads_off]). Then the page itself: links
that reopen an example, a phone-sized viewport, and the keyboard.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.site.experiments.head_ablation import head_names, heads_off
from attnprimer.site.explorer.export import explorer_models
from attnprimer.site.explorer.interventions import difference_intervened, reversal_forced
from attnprimer.training.train import TrainedModel, held_out_generator, predict

SAMPLES = 100
LONGER = 20  # inputs of 11 to 20 letters, longer than any the reversal models trained on
TOLERANCE = 1e-4

# Everything the page shows for one input, read from the DOM: the predicted class of each
# output step, the true answer it printed, and each heatmap's weights by their attention name.
READ_PAGE = """prefix => {
  const results = document.getElementById(`${prefix}-results`);
  const message = document.getElementById(`${prefix}-message`);
  const numbers = (selector, key) =>
    [...results.querySelectorAll(selector)].map(node => Number(node.dataset[key]));
  const attention = {};
  for (const table of results.querySelectorAll("table[data-attention]")) {
    const rows = [];
    for (const cell of table.querySelectorAll("td[data-weight]")) {
      const [row, col] = [Number(cell.dataset.row), Number(cell.dataset.col)];
      (rows[row] ??= [])[col] = Number(cell.dataset.weight);
    }
    attention[table.dataset.attention] = rows;
  }
  const written = results.querySelector("[data-written]");
  return {
    hidden: results.hidden,
    message: message.hidden ? null : message.textContent,
    predictions: numbers("[data-prediction]", "prediction"),
    truths: numbers("[data-truth]", "truth"),
    written: written ? written.dataset.written : null,
    attention,
  };
}"""


def _trained(name: str) -> TrainedModel:
    return explorer_models()[name].trained()  # built with the site: cached


@pytest.fixture
def explorer(visit):
    visited = visit("explorer/")
    status = visited.page.wait_for_selector("#explorer-status[data-ready]", state="attached")
    assert status.get_attribute("data-ready") == "true", status.text_content()
    return visited


def _compare(shown, where, predictions, truths, attention, only=None):
    """The page's reading against Python's: (T,) predictions and truths, (T, S) weights."""
    assert shown["message"] is None and not shown["hidden"], (where, shown["message"])
    assert shown["predictions"] == predictions, where
    assert shown["truths"] == truths, where
    names = sorted(attention) if only is None else [only]
    assert sorted(shown["attention"]) == names, where
    for name in names:
        torch.testing.assert_close(
            torch.tensor(shown["attention"][name], dtype=torch.float64),
            attention[name].double(), atol=TOLERANCE, rtol=0,
            msg=lambda message, name=name: f"{where}, {name} weights: {message}")


def _check_page_against_python(explorer, prefix: str, trained: TrainedModel) -> None:
    task = trained.task
    batch = task.sample(SAMPLES, held_out_generator())
    output, predictions = predict(trained.model, batch.inputs)  # (B, T)
    page = explorer.page
    for index, tokens in enumerate(batch.inputs):
        text = task.decode(tokens)
        page.fill(f"#{prefix}-input", text)
        _compare(page.evaluate(READ_PAGE, prefix), f"{task} on {text!r}",
                 predictions[index].tolist(), batch.targets[index].tolist(),
                 {name: weights[index] for name, weights in output.attention.items()})
    assert explorer.console_errors == [], explorer.console_errors


def test_the_counting_explorer_computes_what_pytorch_computes(explorer):
    _check_page_against_python(explorer, "counting", _trained("counting"))


@pytest.mark.parametrize("encoding", POSITIONAL_ENCODINGS)
def test_the_signal_explorer_computes_what_pytorch_computes(explorer, encoding):
    explorer.page.select_option("#signal-model", encoding)
    _check_page_against_python(explorer, "signal", _trained(f"signal/{encoding}"))


def test_the_difference_model_without_self_attention_computes_what_pytorch_computes(explorer):
    explorer.page.select_option("#difference-model", "plain")
    assert explorer.page.is_disabled("#difference-swap")  # nothing to intervene on
    _check_page_against_python(explorer, "difference", _trained("difference/plain"))


DIFFERENCE_INTERVENTIONS = [  # (steps the |A-B| step may not read, swap its A and B weights)
    ((), True), ((0,), False), ((1,), False), ((2,), False), ((3,), False), ((0, 1), True),
    ((1, 3), False), ((0, 1, 2, 3), False), ((2,), True),
]


def test_the_difference_interventions_compute_what_pytorch_computes(explorer):
    trained = _trained("difference/self-attention")
    task, page = trained.task, explorer.page
    batch = task.sample(SAMPLES, held_out_generator())
    ticked: dict[str, bool] = {}  # the boxes as the test left them: click only what changes

    def tick(box: str, checked: bool) -> None:
        if ticked.get(box, False) != checked:
            page.set_checked(box, checked)  # a click, as a reader's
            ticked[box] = checked

    for index, tokens in enumerate(batch.inputs):
        text = task.decode(tokens)
        blocked, swap = DIFFERENCE_INTERVENTIONS[index % len(DIFFERENCE_INTERVENTIONS)]
        for intervene in (False, True):
            for step in range(4):
                tick(f"#difference-block-{step}", intervene and step in blocked)
            tick("#difference-swap", intervene and swap)
            page.fill("#difference-input", text)
            output = difference_intervened(trained.model, tokens[None],
                                           blocked=blocked if intervene else (),
                                           swap=intervene and swap)
            _compare(page.evaluate(READ_PAGE, "difference"),
                     f"{text!r}, blocked {blocked if intervene else ()}, swap {intervene and swap}",
                     output.logits[0].argmax(-1).tolist(), batch.targets[index].tolist(),
                     {name: weights[0] for name, weights in output.attention.items()})
    assert explorer.console_errors == [], explorer.console_errors


def _reversal_inputs(trained: TrainedModel) -> list[torch.Tensor]:
    """A hundred held-out inputs without their padding, and LONGER inputs of 11 to 20 letters."""
    task = trained.task
    held_out = [row[row != 0] for row in task.sample(SAMPLES, held_out_generator()).inputs]
    generator = torch.Generator().manual_seed(11)
    longer = [torch.randint(1, task.vocab_size + 1, (length,), generator=generator)
              for length in torch.randint(11, 21, (LONGER,), generator=generator).tolist()]
    return held_out + longer


def _reversal_truth(trained: TrainedModel, tokens: torch.Tensor) -> list[int]:
    return [*tokens.flip(0).tolist(), trained.task.end]


@pytest.mark.parametrize("decoder", ["vanilla", "peeky", "attention"])
def test_the_reversal_explorer_computes_what_pytorch_computes(explorer, decoder):
    trained = _trained(f"reversal/{decoder}")
    page = explorer.page
    page.select_option("#reversal-model", decoder)
    for index, tokens in enumerate(_reversal_inputs(trained)):
        text = trained.task.decode(tokens)
        length = len(tokens)
        forced = {index % (length + 1): (3 * index) % length}
        for force in ({}, forced) if decoder == "attention" else ({},):
            if decoder == "attention":
                page.select_option("#reversal-force-step", "")
            page.fill("#reversal-input", text)
            for step, position in force.items():
                page.select_option("#reversal-force-step", str(step))
                page.select_option("#reversal-force-position", str(position))
            output = reversal_forced(trained.model, tokens[None], force)
            _compare(page.evaluate(READ_PAGE, "reversal"), f"{decoder} on {text!r}, {force}",
                     output.logits[0].argmax(-1).tolist(), _reversal_truth(trained, tokens),
                     {name: weights[0] for name, weights in output.attention.items()})
    if decoder != "attention":
        assert page.is_disabled("#reversal-force-step")
    assert explorer.console_errors == [], explorer.console_errors


def test_the_transformer_explorer_computes_what_pytorch_computes(explorer):
    trained = _trained("transformer/encoder-decoder")
    model, page = trained.model, explorer.page
    names = head_names(model)
    switched_before: list[str] = []
    for index, tokens in enumerate(_reversal_inputs(trained)):
        text = trained.task.decode(tokens)
        shown_head = names[index % len(names)]  # every head's map, in turn
        kind, _, number = shown_head.rpartition(" ")
        layer, head = number.split(".")
        for select, value in (("kind", kind), ("layer", layer), ("head", head)):
            page.select_option(f"#transformer-{select}", value)
        switched = [names[(7 * index) % len(names)], names[(7 * index + 3) % len(names)]]
        for off in ([], switched):
            for name in {*off, *switched_before}:
                kind_, _, number_ = name.rpartition(" ")
                box = f"#transformer-off-{kind_.replace(' ', '-')}-{number_.replace('.', '-')}"
                page.set_checked(box, name in off)  # a click, as a reader's
            switched_before = off
            page.fill("#transformer-input", text)
            with torch.no_grad(), heads_off(model, off):
                output = model(tokens[None])
            _compare(page.evaluate(READ_PAGE, "transformer"), f"{text!r}, off {off}",
                     output.logits[0].argmax(-1).tolist(), _reversal_truth(trained, tokens),
                     {name: weights[0] for name, weights in output.attention.items()},
                     only=shown_head)
    assert explorer.console_errors == [], explorer.console_errors


def test_the_page_starts_on_the_chapters_examples(explorer):
    from attnprimer.site.catalogue import (
        COUNTING_EXAMPLE,
        DIFFERENCE_EXAMPLE,
        REVERSAL_EXAMPLE,
        SIGNAL_EXAMPLE,
    )

    page = explorer.page
    assert page.input_value("#counting-input") == COUNTING_EXAMPLE
    assert page.input_value("#signal-input") == SIGNAL_EXAMPLE
    assert page.input_value("#signal-model") == "learned"
    assert page.input_value("#difference-input") == DIFFERENCE_EXAMPLE
    assert page.input_value("#reversal-input") == REVERSAL_EXAMPLE
    assert page.input_value("#transformer-input") == REVERSAL_EXAMPLE
    shown = page.evaluate(READ_PAGE, "counting")
    assert shown["truths"] == [2, 2, 5] and len(shown["attention"]["encoder-decoder"]) == 3
    assert page.evaluate(READ_PAGE, "reversal")["written"] == "EGDABDAEH."


BAD_INPUTS = [  # (widget, typed text, what its message must say)
    ("counting", "ABD", "“D”"),
    ("counting", "abc", "upper case"),
    ("counting", "AAAAABBBBBC", "at most 10"),
    ("signal", "ABCABCABCA", "exactly 11"),
    ("signal", "ABC ABCABCA", "no spaces"),
    ("difference", "ABCD", "“D”"),
    ("reversal", "HEADBADGEHEADBADGEHEAD", "1 to 20"),
    ("reversal", "HEAD BAD", "no spaces"),
    ("transformer", "HIJ", "“I”, “J”"),
]


def test_bad_input_gets_a_message_not_an_exception(explorer):
    page = explorer.page
    for prefix, typed, complaint in BAD_INPUTS:
        field = f"#{prefix}-input"
        page.fill(field, "")
        page.locator(field).press_sequentially(typed)  # key by key, as a reader types
        shown = page.evaluate(READ_PAGE, prefix)
        assert shown["message"] is not None and complaint in shown["message"], (typed, shown)
        assert page.is_visible(f"#{prefix}-message"), typed
        assert shown["hidden"] is True, typed  # no stale prediction left on show
        page.fill(field, "ABCABCABCAB"[: 11 if prefix == "signal" else 10])
        shown = page.evaluate(READ_PAGE, prefix)
        assert shown["message"] is None and shown["hidden"] is False and shown["predictions"]
    assert explorer.console_errors == [], explorer.console_errors


def test_a_link_reopens_an_example_with_its_interventions(visit):
    link = ("explorer/#explore=reversal&model=attention&input=ABCDEFGHABCD&steps=6"
            "&force=2%3A5")
    page = visit(link).page
    page.wait_for_selector("#explorer-status[data-ready='true']", state="attached")
    assert page.input_value("#reversal-model") == "attention"
    assert page.input_value("#reversal-input") == "ABCDEFGHABCD"
    forced = (page.input_value("#reversal-force-step"),
              page.input_value("#reversal-force-position"))
    assert forced == ("2", "5")
    weights = page.evaluate(READ_PAGE, "reversal")["attention"]["encoder-decoder"]
    assert len(weights) == 6 and weights[2] == [1 if s == 5 else 0 for s in range(12)]
    assert page.evaluate("document.getElementById('reversal-explorer').getBoundingClientRect()"
                         ".top") < 200  # scrolled to the widget the link names

    # the reader changes it: so does the address
    page.select_option("#reversal-force-position", "7")
    assert "force=2%3A7" in page.evaluate("location.hash")
    assert page.get_attribute("#reversal-link", "href") == page.evaluate("location.hash")

    page = visit("explorer/#explore=transformer&input=HEADBAD&map=decoder+self+2.3"
                 "&off=cross+1.1%2Ccross+2.4").page
    page.wait_for_selector("#explorer-status[data-ready='true']", state="attached")
    assert page.is_checked("#transformer-off-cross-1-1")
    assert page.is_checked("#transformer-off-cross-2-4")
    assert sum(page.is_checked(f"#transformer-off-{kind}-{layer}-{head}")
               for kind in ("encoder-self", "decoder-self", "cross")
               for layer in (1, 2) for head in (1, 2, 3, 4)) == 2
    shown = page.evaluate(READ_PAGE, "transformer")
    assert list(shown["attention"]) == ["decoder self 2.3"] and len(shown["predictions"]) == 8
    page.click("#transformer-all-on")
    assert "off=" not in page.evaluate("location.hash")
    assert not page.is_checked("#transformer-off-cross-1-1")


def test_a_link_with_nonsense_in_it_leaves_the_page_working(visit):
    visited = visit("explorer/#explore=difference&model=bogus&input=ABZ&block=7%2Cx&swap=2")
    page = visited.page
    page.wait_for_selector("#explorer-status[data-ready='true']", state="attached")
    assert page.input_value("#difference-model") == "self-attention"  # unknown: left alone
    assert "“Z”" in page.evaluate(READ_PAGE, "difference")["message"]
    page.fill("#difference-input", "AB")
    assert page.evaluate(READ_PAGE, "difference")["predictions"] == [1, 1, 0, 0]
    assert visited.console_errors == [], visited.console_errors


WIDGETS = ["counting", "signal", "difference", "reversal", "transformer"]


def test_nothing_overflows_sideways_on_a_phone(browser, base_url):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(base_url + "explorer/", wait_until="networkidle")
        page.wait_for_selector("#explorer-status[data-ready='true']", state="attached")
        page.fill("#reversal-input", "ABCDEFGHABCDEFGHABCD")  # the longest input: 21 rows
        page.fill("#transformer-input", "ABCDEFGHABCDEFGHABCD")
        page.select_option("#reversal-force-step", "20")
        for details in page.query_selector_all(".explorer details"):
            details.evaluate("node => { node.open = true; }")  # the widest tables, shown
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        for name in WIDGETS:  # and each widget fits: wide tables scroll inside their box
            box = page.locator(f"#{name}-explorer").bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)
            overflowing = page.evaluate("""name => [...document.querySelectorAll(
                `#${name}-explorer *`)].filter(node => {
                  const scroller = node.closest('.explorer-scroll');
                  const box = node.getBoundingClientRect();
                  return !scroller && box.width > 0 && box.right > 390;
                }).map(node => node.tagName + '#' + node.id + '.' + node.className)""", name)
            assert overflowing == [], (name, overflowing)
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
    assert len(controls) > 40  # five widgets, the Transformer's 24 head switches among them
    unnamed = [control["id"] for control in controls if not control["name"]]
    assert unnamed == [], unnamed
    assert all(control["id"] for control in controls), controls
    page.focus("#counting-input")
    reached = set()
    for _ in range(len(controls) + 60):  # Tab through the page (links in the prose too)
        reached.add(page.evaluate("document.activeElement.id"))
        page.keyboard.press("Tab")
    missed = [control["id"] for control in controls if control["id"] not in reached]
    assert missed == [], missed
    page.focus("#transformer-off-cross-1-2")  # and a switch works from the keyboard
    page.keyboard.press("Space")
    assert page.is_checked("#transformer-off-cross-1-2")
    assert "cross+1.2" in page.evaluate("location.hash")
