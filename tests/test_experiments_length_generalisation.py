"""What the length-generalisation chapter measures, on models whose answers are known."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.models import ModelOutput
from attnprimer.site.experiments.length_generalisation import (
    exact_match,
    first_errors,
    source_attention,
    source_columns,
)
from attnprimer.tasks import CopyReverseTask
from attnprimer.training.train import TrainConfig, TrainedModel, train


class _Writes(nn.Module):
    """Writes the targets, except a wrong token at ``wrong_step`` (if any)."""

    def __init__(self, task, wrong_step=None):
        super().__init__()
        self.task, self.wrong_step = task, wrong_step

    def forward(self, inputs, targets):
        written = targets.clone()
        if self.wrong_step is not None:
            written[:, self.wrong_step] = (written[:, self.wrong_step] % 8) + 1  # another letter
        logits = F.one_hot(written, self.task.num_classes).float()
        return ModelOutput(logits, {})


def _trained(model, task):
    return TrainedModel(task, TrainConfig(), model)


def test_a_model_that_writes_the_targets_is_exact_at_every_length():
    task = CopyReverseTask(max_len=4)
    shares = first_errors(_trained(_Writes(task), task), [2, 9], samples=20)
    assert shares == {2: [0, 0, 0, 1.0], 9: [0] * 10 + [1.0]}
    assert exact_match(shares[9]) == 1.0


def test_the_first_wrong_step_is_found():
    task = CopyReverseTask(max_len=4)
    shares = first_errors(_trained(_Writes(task, wrong_step=2), task), [5], samples=20)[5]
    assert shares[2] == 1.0 and exact_match(shares) == 0.0


def test_source_columns_point_at_the_letter_to_write():
    """Columns: 0 the start token, 1..n the letters: copy reads 1, 2, 3; reverse 3, 2, 1."""
    inputs = torch.tensor([[1, 2, 3]])
    assert source_columns(CopyReverseTask(operation="copy"), inputs).tolist() == [[1, 2, 3]]
    assert source_columns(CopyReverseTask(operation="reverse"), inputs).tolist() == [[3, 2, 1]]


def test_source_attention_reads_the_letter_steps_queries():
    task = CopyReverseTask(dim=8, heads=2, layers=1)
    trained = train(task, TrainConfig(steps=2))
    result = source_attention(trained, 5, samples=10)
    assert set(result["on_source"]) == {"decoder self 1.1", "decoder self 1.2"}
    assert all(0 <= value <= 1 for value in result["on_source"].values())
    example = torch.tensor(result["example"]["decoder self 1.1"])
    assert example.shape == (5, 5) and len(result["letters"]) == 5
    # every letter step's query may read all five letters (they come before it)
    assert bool((example > 0).all()) and bool((example.sum(dim=1) < 1).all())
