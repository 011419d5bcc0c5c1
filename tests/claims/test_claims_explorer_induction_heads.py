"""The claims of the explorer page "Induction heads" (``docs/explorer/induction-heads.md``).

Checked on the site's two-layer induction model, seed 0, the one the page runs: what its file
holds and weighs, which training steps it offers, and each "Things to try" sentence, through
the chapter's own forward pass with heads zero-ablated
([`run_with`][attnprimer.site.experiments.induction_interventions.run_with]). That the page
computes what PyTorch computes is tested on the built site, in
``tests/site/test_explorer_induction_heads.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.induction_heads import cached_curves
from attnprimer.site.experiments.induction_interventions import run_with
from attnprimer.site.explorer import induction as explorer_induction
from attnprimer.site.explorer.export import explorer_json
from attnprimer.site.explorer.induction import find_repeat, induction_data
from attnprimer.site.figures.induction_heads import EXAMPLE


@pytest.fixture(scope="module")
def trained(site_models):
    return site_models(site_model("induction", layers=2, seed=0))


@pytest.fixture(scope="module")
def data(trained):
    return induction_data(trained)


def _model_at(trained, step: int):
    steps = cached_curves(trained).steps
    index = steps.index(step)
    return trained.model.model if index == len(steps) - 1 else trained.model.snapshot(index)


@torch.no_grad()
def _run(trained, step: int, text: str, off=()):
    """Predictions (L,) and weights by head (L, L) at ``step``, heads in ``off`` zeroed."""
    model = _model_at(trained, step)
    tokens = trained.task.encode(text)[None]
    contexts = run_with(model, tokens)[2]
    logits, weights, _ = run_with(model, tokens, contexts={
        head: torch.zeros_like(contexts[head]) for head in off})
    return logits[0].argmax(-1), {head: w[0] for head, w in weights.items()}


def _repeat_right(trained, step: int, off=()) -> int:
    """How many of the example's predictions inside the repeat are right."""
    _, repeat, length = find_repeat(EXAMPLE)
    predictions, _ = _run(trained, step, EXAMPLE, off)
    tokens = trained.task.encode(EXAMPLE)
    return sum(int(predictions[t]) == int(tokens[t + 1])
               for t in range(repeat, repeat + length - 1))


def _on_targets(weights: torch.Tensor) -> list[float]:
    """The weight each query inside the example's repeat puts on the letter to copy."""
    first, repeat, length = find_repeat(EXAMPLE)
    return [float(weights[t, t - (repeat - first) + 1]) for t in range(repeat, repeat + length - 1)]


def test_the_file_is_under_a_megabyte_and_about_850_kb(data):
    """"as exact float32 values (about 850 kB)"; the budget: at most 1 MB."""
    size = len(explorer_json(data))
    assert 825_000 <= size <= 875_000 and size <= 1_000_000, size


def test_the_page_offers_14_of_41_steps_dense_around_the_drop_at_750(trained, data):
    """"41 sets from step 0 to the end at step 2,000 ... the page offers 14: every saved step
    from 550 to 950, within 200 steps of the drop ... at step 750, ... and steps 0, 400,
    1,200, 1,600 and 2,000 elsewhere." """
    steps = cached_curves(trained).steps
    assert len(steps) == 41 and steps[0] == 0 and steps[-1] == 2000
    assert data["drop_step"] == 750
    assert [c["step"] for c in data["checkpoints"]] == [
        0, 400, *range(550, 951, 50), 1200, 1600, 2000]


def test_all_41_steps_would_weigh_more_than_2_mb(trained, data):
    """"All of them would make a file of more than 2 MB"."""
    curves = cached_curves(trained)
    everything = {**data, "checkpoints": [
        explorer_induction._export_checkpoint(trained, curves, step) for step in curves.steps]}
    assert len(explorer_json(everything)) > 2_000_000


def test_the_model_and_its_heads_as_the_page_names_them(data):
    """"letters from A to T", "1 to 31 letters", "head 1.2, the previous-token head", the
    induction head shown first (2.1)."""
    assert data["letters"] == "ABCDEFGHIJKLMNOPQRST" and data["longest_input"] == 31
    assert data["repeat_lengths"] == [4, 12]  # "a segment of 4 to 12 letters written twice"
    assert data["previous_head"] == "layer 1.2" and data["induction_head"] == "layer 2.1"
    assert find_repeat(EXAMPLE) == (2, 10, 4)  # "C M A E stands at 2 and again at 10"


def test_at_the_end_the_induction_head_reads_the_letters_to_copy(trained):
    """"The queries C at 10, M at 11 and A at 12 each put more than a third of their weight on
    the outlined cell, and the model gets all three next letters right." And "head 1.2 ...:
    every row after the first puts most of its weight one position to the left." """
    _, weights = _run(trained, 2000, EXAMPLE)
    assert all(weight > 1 / 3 for weight in _on_targets(weights["layer 2.1"]))
    assert _repeat_right(trained, 2000) == 3
    previous = weights["layer 1.2"]
    assert all(previous[t, t - 1] > 0.5 for t in range(1, len(EXAMPLE)))


def test_at_step_400_the_copy_is_not_there(trained):
    """"Slide back to step 400. The same three predictions are all wrong, and the induction
    head puts little weight on the outlined cells." """
    _, weights = _run(trained, 400, EXAMPLE)
    assert _repeat_right(trained, 400) == 0
    assert all(weight < 0.15 for weight in _on_targets(weights["layer 2.1"]))


def test_the_held_out_loss_falls_by_more_than_a_nat_between_650_and_800(data):
    """"between steps 650 and 800 it falls by more than a nat"."""
    loss = {c["step"]: c["repeat_loss"] for c in data["checkpoints"]}
    assert loss[650] - loss[800] > 1


def test_switching_heads_off_on_the_example(trained):
    """"Switch off the previous-token head (1.2) at the last step. The induction head loses its
    outlined cells, and none of the three predictions is right. Switch off both layer-2 heads
    and none is right either; switch off just one of them and the other still gets some right.
    Switching off head 1.1 costs one letter here" """
    _, weights = _run(trained, 2000, EXAMPLE, off=["layer 1.2"])
    assert all(weight < 0.15 for weight in _on_targets(weights["layer 2.1"]))
    assert _repeat_right(trained, 2000, ["layer 1.2"]) == 0
    assert _repeat_right(trained, 2000, ["layer 2.1", "layer 2.2"]) == 0
    assert _repeat_right(trained, 2000, ["layer 2.1"]) >= 1
    assert _repeat_right(trained, 2000, ["layer 2.2"]) >= 1
    assert _repeat_right(trained, 2000, ["layer 1.1"]) == 2


def test_the_typed_example_predicts_the_next_letter_of_the_repeat(trained):
    """"ABCDEFGHABCDEFG ends one letter before the repeat does: what does the model predict
    after the last G?" (H: the letter after the first G.)"""
    predictions, _ = _run(trained, 2000, "ABCDEFGHABCDEFG")
    assert trained.task.alphabet[int(predictions[-1])] == "H"
