"""The attention explorer computes in the browser what the Python models compute.

A hundred held-out sequences per model are typed into the page; its predictions must be the
PyTorch model's exactly, and every attention weight it shows (read at full precision from the
cells' ``data-weight``) must be within 1e-4 of PyTorch's.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.explorer import explorer_models
from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.train import TrainedModel, held_out_generator, predict

SAMPLES = 100
TOLERANCE = 1e-4

# Everything the page shows for one input, read from the DOM: the predicted class of each
# output step, the true answer it printed, and each heatmap's weights by their attention name.
READ_PAGE = """prefix => {
  const results = document.getElementById(`${prefix}-results`);
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
  return {
    hidden: results.hidden,
    message: document.getElementById(`${prefix}-message`).hidden
      ? null : document.getElementById(`${prefix}-message`).textContent,
    predictions: numbers("[data-prediction]", "prediction"),
    truths: numbers("[data-truth]", "truth"),
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


def _check_page_against_python(explorer, prefix: str, trained: TrainedModel) -> None:
    task = trained.task
    batch = task.sample(SAMPLES, held_out_generator())
    output, predictions = predict(trained.model, batch.inputs)  # (B, T)
    page = explorer.page
    for index, tokens in enumerate(batch.inputs):
        text = task.decode(tokens)
        page.fill(f"#{prefix}-input", text)
        shown = page.evaluate(READ_PAGE, prefix)
        where = f"{task.name} ({getattr(task, 'pos_enc', '')}) on {text!r}"
        assert shown["message"] is None and not shown["hidden"], (where, shown["message"])
        assert shown["predictions"] == predictions[index].tolist(), where
        assert shown["truths"] == batch.targets[index].tolist(), where
        assert sorted(shown["attention"]) == sorted(output.attention), where
        for name, weights in output.attention.items():
            torch.testing.assert_close(
                torch.tensor(shown["attention"][name], dtype=torch.float64),
                weights[index].double(), atol=TOLERANCE, rtol=0,
                msg=lambda message, name=name: f"{where}, {name} weights: {message}")
    assert explorer.console_errors == [], explorer.console_errors


def test_the_counting_explorer_computes_what_pytorch_computes(explorer):
    _check_page_against_python(explorer, "counting", _trained("counting"))


@pytest.mark.parametrize("encoding", POSITIONAL_ENCODINGS)
def test_the_signal_explorer_computes_what_pytorch_computes(explorer, encoding):
    explorer.page.select_option("#signal-encoding", encoding)
    _check_page_against_python(explorer, "signal", _trained(f"signal/{encoding}"))


def test_the_page_starts_on_the_chapters_examples(explorer):
    from attnprimer.site_models import COUNTING_EXAMPLE, SIGNAL_EXAMPLE

    page = explorer.page
    assert page.input_value("#counting-input") == COUNTING_EXAMPLE
    assert page.input_value("#signal-input") == SIGNAL_EXAMPLE
    assert page.input_value("#signal-encoding") == "learned"
    shown = page.evaluate(READ_PAGE, "counting")
    assert shown["truths"] == [2, 2, 5] and len(shown["attention"]["encoder-decoder"]) == 3


BAD_INPUTS = [  # (widget, typed text, what its message must say)
    ("counting", "ABD", "“D”"),
    ("counting", "abc", "upper case"),
    ("counting", "AAAAABBBBBC", "at most 10"),
    ("signal", "ABCABCABCA", "exactly 11"),
    ("signal", "ABC ABCABCA", "no spaces"),
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
        page.fill(field, "ABCABCABCAB"[: 10 if prefix == "counting" else 11])
        shown = page.evaluate(READ_PAGE, prefix)
        assert shown["message"] is None and shown["hidden"] is False and shown["predictions"]
    assert explorer.console_errors == [], explorer.console_errors
