"""What the heads do: the measures are right on attention built to have a known answer."""

from __future__ import annotations

import pytest
import torch

from attnprimer.models import ModelOutput
from attnprimer.site.experiments.transformer_heads import (
    PATTERNS,
    copy_groups,
    head_ablation,
    head_patterns,
)
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.train import TrainConfig, predict_one, train


def _tiny(architecture: str, steps: int = 2):
    task = ReversalTransformerTask(architecture=architecture, dim=8, heads=2, layers=1)
    return train(task, TrainConfig(steps=steps))


def _one_hot_at(lengths, queries, keys, target):
    """(B, L, K) attention whose row l is one-hot at target(l, n), n the input's length."""
    weights = torch.zeros(len(lengths), queries, keys)
    for b, n in enumerate(lengths.tolist()):
        for row in range(queries):
            key = target(row, n)
            if 0 <= key < keys:
                weights[b, row, key] = 1.0
    return weights


def test_a_head_that_copies_scores_one_on_copy_and_a_head_on_the_last_letter_on_last(
        monkeypatch):
    trained = _tiny("encoder-decoder")
    model = trained.model
    real_forward = model.forward

    def forward(inputs, targets=None):
        output = real_forward(inputs, targets)
        lengths = (inputs != 0).sum(dim=1)
        steps, keys = output.attention["cross 1.1"].shape[1:]
        attention = dict(output.attention)
        attention["cross 1.1"] = _one_hot_at(lengths, steps, keys, lambda t, n: n - 1 - t)
        attention["cross 1.2"] = _one_hot_at(lengths, steps, keys, lambda t, n: n - 1)
        attention["encoder self 1.1"] = _one_hot_at(lengths, keys, keys, lambda i, n: n - 1 - i)
        attention["decoder self 1.1"] = _one_hot_at(lengths, steps, steps, lambda t, n: t - 1)
        return ModelOutput(output.logits, attention)

    monkeypatch.setattr(model, "forward", forward)
    patterns = head_patterns(trained, samples=200)
    assert patterns["cross 1.1"]["copy"] == 1.0
    assert patterns["cross 1.1"]["next copy"] == 0.0
    assert patterns["cross 1.2"]["last"] == 1.0
    assert patterns["cross 1.2"]["copy"] < 0.5  # only at the first step of each input
    assert patterns["encoder self 1.1"]["mirror"] == 1.0
    assert patterns["decoder self 1.1"]["previous"] == 1.0
    assert set(patterns["cross 1.1"]) == set(PATTERNS["cross"])


def test_the_decoder_only_copy_target_is_the_input_position_its_step_copies(monkeypatch):
    trained = _tiny("decoder-only")
    model = trained.model
    real_forward = model.forward

    def forward(inputs, targets=None):
        output = real_forward(inputs, targets)
        lengths = (inputs != 0).sum(dim=1)
        padded = inputs.shape[1]
        size = output.attention["decoder self 1.1"].shape[1]
        attention = dict(output.attention)
        # Row S + t (output step t) reads input position n - 1 - t; other rows, themselves
        attention["decoder self 1.1"] = _one_hot_at(
            lengths, size, size, lambda row, n: n - 1 - (row - padded) if row >= padded else row)
        attention["decoder self 1.2"] = _one_hot_at(lengths, size, size, lambda row, n: padded)
        return ModelOutput(output.logits, attention)

    monkeypatch.setattr(model, "forward", forward)
    patterns = head_patterns(trained, samples=200)
    assert patterns["decoder self 1.1"]["copy"] == 1.0
    assert patterns["decoder self 1.1"]["self"] == 0.0
    assert patterns["decoder self 1.2"]["separator"] == 1.0


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder-only"])
def test_the_padding_changes_no_weight_on_a_letter(architecture):
    """The page and the CLI show an input without its padding: the same weights."""
    trained = _tiny(architecture, steps=20)
    task = trained.task
    padded = task.encode("HEADBADGE")
    letters = padded[:9]
    with_padding, weights_padded = predict_one(trained.model, padded)
    without, weights = predict_one(trained.model, letters)
    assert torch.equal(with_padding[:10], without)
    # The decoder-only sequence: 9 letters, (1 padding), the separator, the steps written
    kept = [*range(9), *range(10, 20)]
    for name, matrix in weights.items():
        if architecture == "decoder-only":
            torch.testing.assert_close(weights_padded[name][kept][:, kept], matrix)
        elif name.startswith("cross"):
            torch.testing.assert_close(weights_padded[name][:10, :9], matrix)
        else:
            size = matrix.shape[0]
            torch.testing.assert_close(weights_padded[name][:size, :size], matrix)


def test_ablation_of_no_group_is_the_whole_model_and_every_head_is_scored():
    trained = _tiny("encoder-decoder", steps=20)
    result = head_ablation(trained, samples=50)
    assert len(result) == 1 + 6
    assert head_ablation(trained, groups={}, samples=50) == {"none": result["none"]}


def test_copy_groups_rank_by_copy_weight_per_model():
    patterns = {"cross 1.1": {"copy": 0.2}, "cross 1.2": {"copy": 0.6},
                "cross 2.1": {"copy": 0.9}, "cross 2.2": {"copy": 0.1},
                "encoder self 1.1": {"mirror": 1.0}}
    groups = copy_groups(patterns)
    assert groups["highest copy"] == ["cross 2.1"] and groups["lowest copy"] == ["cross 2.2"]
    assert groups["2 highest copy"] == ["cross 2.1", "cross 1.2"]
    assert groups["cross 2, all"] == ["cross 2.1", "cross 2.2"]
    assert "encoder self 1, all" not in groups
