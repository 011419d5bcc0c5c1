"""The induction-heads explorer's export and its repeat finder, on tiny models.

The site's model is checked in ``tests/claims/test_claims_explorer_induction_heads.py``, and
the page against PyTorch in ``tests/site/test_explorer_induction_heads.py``.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import torch

from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.induction_heads import curves
from attnprimer.site.explorer import induction as explorer_induction
from attnprimer.site.explorer.export import explorer_json
from attnprimer.site.explorer.families import decode_array
from attnprimer.site.explorer.induction import (
    EVERY,
    WINDOW,
    checkpoint_steps,
    find_repeat,
    induction_data,
)
from attnprimer.tasks import InductionTask
from attnprimer.tasks.induction import held_out_pairs
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import TrainConfig, TrainedModel
from docs_hooks import load_hook


def _longest_by_brute_force(letters: str):
    """The longest non-overlapping repeat, searched length by length from the longest."""
    for length in range(len(letters) // 2, 1, -1):
        pairs = [(repeat, first) for repeat in range(len(letters))
                 for first in range(repeat - length + 1)
                 if repeat + length <= len(letters)
                 and letters[first:first + length] == letters[repeat:repeat + length]]
        if pairs:
            repeat, first = min(pairs)  # the earliest second occurrence, then first one
            return first, repeat, length
    return None


def test_find_repeat_finds_the_longest_repeat_and_breaks_ties_as_it_says():
    chooser = random.Random(0)
    for _ in range(400):
        letters = "".join(chooser.choice("ABC") for _ in range(chooser.randint(0, 14)))
        assert find_repeat(letters) == _longest_by_brute_force(letters), letters


def test_find_repeat_finds_the_tasks_segment():
    task = InductionTask()
    repeats = task.repeats(300, torch.Generator().manual_seed(3))
    same = 0
    for row, a, b, m in zip(*repeats, strict=True):
        found = find_repeat(task.decode(row))
        assert found is not None and found[2] >= m  # never shorter than the planted one
        same += found == (int(a), int(b), int(m))
    assert same >= 270  # a chance letter beside both copies lengthens a few


def test_checkpoint_steps_keep_the_ends_and_the_window_around_the_drop():
    steps = list(range(0, 2001, 50))
    for drop in (100, 750, 1950):
        kept = checkpoint_steps(steps, drop)
        assert kept[0] == 0 and kept[-1] == 2000 and kept == sorted(set(kept))
        assert [step for step in steps if abs(step - drop) <= WINDOW] == [
            step for step in kept if abs(step - drop) <= WINDOW]
        far = [step for step in kept if abs(step - drop) > WINDOW and step not in (0, 2000)]
        assert all(step % EVERY == 0 for step in far)


def _tiny(task: InductionTask, steps: int) -> TrainedModel:
    """A few steps of plain gradient descent by hand (the training loop and torch's optimisers
    take seconds to set up): enough for snapshots that differ."""
    torch.manual_seed(0)
    model = task.build_model()
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        batch = task.sample(16, generator)
        logits = model(batch.inputs).logits  # (B, L, V + 1)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch.targets)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for parameter in model.parameters():
                parameter -= 0.5 * parameter.grad
    return TrainedModel(task, TrainConfig(steps=steps), model.eval(), {}, 0.0)


@pytest.fixture(scope="module")
def tiny():
    trained = _tiny(InductionTask(hidden=8, snapshot_every=5, snapshots=3), steps=15)
    result = curves(trained, samples=20)
    # Fifteen steps learn no copying: a final loss below chance gives the export a drop to find.
    return trained, replace(result, repeat_loss=[*result.repeat_loss[:-1], 1.0])


def test_every_checkpoint_goes_out_exactly(tiny):
    trained, result = tiny
    data = induction_data(trained, result)
    snapshots = trained.model
    assert [c["step"] for c in data["checkpoints"]] == checkpoint_steps(result.steps,
                                                                       data["drop_step"])
    for checkpoint in data["checkpoints"]:
        index = result.steps.index(checkpoint["step"])
        model = (snapshots.model if index == len(result.steps) - 1
                 else snapshots.snapshot(index))
        state = model.state_dict()
        assert sorted(checkpoint["weights"]) == sorted(state)
        for name, entry in checkpoint["weights"].items():
            assert torch.equal(decode_array(entry), state[name]), name
        assert checkpoint["repeat_loss"] == result.repeat_loss[index]
        assert checkpoint["first_loss"] == result.first_loss[index]
        for head, scores in result.induction.items():
            assert checkpoint["induction"][head] == scores[index]
            assert checkpoint["previous_token"][head] == result.previous_token[head][index]
    # the snapshots differ from one another: the export does not repeat one set of weights
    first, last = data["checkpoints"][0]["weights"], data["checkpoints"][-1]["weights"]
    assert first["embed.weight"] != last["embed.weight"]


def test_the_settings_the_page_reads(tiny):
    trained, result = tiny
    data = induction_data(trained, result)
    task = trained.task
    assert data["longest_input"] == task.max_len - 1 and data["letters"] == "ABCDEFGHIJKLMNOPQRST"
    held = held_out_pairs(task.vocab_size)
    for letter, successors in data["held_out_successors"].items():
        a = task.alphabet.index(letter)
        assert {task.alphabet.index(b) for b in successors} == set(held[a].nonzero()[:, 0].tolist())
    assert data["previous_head"].startswith("layer 1.") and data["induction_head"].startswith(
        "layer 2.")
    assert explorer_json(data) == explorer_json(induction_data(trained, result))  # same bytes


def test_only_two_layer_induction_models_are_exported():
    one_layer = _tiny(InductionTask(hidden=8, layers=1, snapshot_every=1, snapshots=1), 1)
    with pytest.raises(TypeError, match="two-layer"):
        induction_data(one_layer, curves(one_layer, samples=4))


def test_the_docs_hook_writes_the_file_and_names_the_model_it_came_from(monkeypatch, tmp_path):
    monkeypatch.setattr(explorer_induction, "induction_data", lambda: {"format": 1})  # no training
    path = tmp_path / "induction-heads.json"
    model = site_model("induction", layers=2, seed=0)
    assert explorer_induction.export_site(path) == (True, [cached_path(model.task, model.config)])
    assert path.read_bytes() == b'{"format":1}\n'
    assert explorer_induction.export_site(path)[0] is False  # unchanged: left alone
    hook = load_hook("explorer")
    assert hook.EXPORTS["induction-heads.json"] == "attnprimer.site.explorer.induction:export_site"
