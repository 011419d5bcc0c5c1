"""The mechanism of the Bahdanau chapter's experiments, on small untrained models.

The claims about the trained models are in ``tests/claims/test_claims_bahdanau.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.experiments.bahdanau import (
    FORCED_OFFSETS,
    first_step_reaching,
    forced_attention,
    one_hot,
    teacher_forced,
)
from attnprimer.tasks import ReversalTask
from attnprimer.training.train import TrainConfig, train


@pytest.fixture(scope="module", params=[False, True], ids=["unidirectional", "bidirectional"])
def model(request):
    torch.manual_seed(0)
    task = ReversalTask(max_len=6, hidden=8, bidirectional=request.param)
    return task, task.build_model().eval()


def _batch(task, samples=40):
    return task.sample(samples, torch.Generator().manual_seed(3))


@pytest.mark.parametrize("score", ["additive", "dot", "general"])
def test_without_an_intervention_it_is_the_model_exactly(score):
    torch.manual_seed(1)
    task = ReversalTask(max_len=6, hidden=8, score=score)
    model = task.build_model().eval()
    inputs, targets = _batch(task)
    with torch.no_grad():
        expected = model(inputs, targets)
    logits, weights = teacher_forced(model, inputs, targets)
    assert torch.equal(logits, expected.logits)
    assert torch.equal(weights, expected.attention["encoder-decoder"])


def test_giving_back_its_own_weights_changes_nothing(model):
    task, seq2seq = model
    inputs, targets = _batch(task)
    plain, _ = teacher_forced(seq2seq, inputs, targets)
    same, _ = teacher_forced(seq2seq, inputs, targets, force=lambda step, weights: weights)
    assert torch.equal(plain, same)


def test_the_forced_weights_are_the_ones_read(model):
    task, seq2seq = model
    inputs, targets = _batch(task)
    first = torch.zeros(inputs.shape[0], dtype=torch.long)
    _, weights = teacher_forced(seq2seq, inputs, targets,
                                force=lambda step, weights: one_hot(first, weights.shape[1]))
    assert torch.equal(weights[:, :, 0], torch.ones(weights.shape[:2]))


def test_forcing_changes_the_output(model):
    # the intervention reaches the logits: reading another state changes what is written
    task, seq2seq = model
    inputs, targets = _batch(task)
    plain, _ = teacher_forced(seq2seq, inputs, targets)
    first = torch.zeros(inputs.shape[0], dtype=torch.long)
    forced, _ = teacher_forced(seq2seq, inputs, targets,
                               force=lambda step, weights: one_hot(first, weights.shape[1]))
    assert not torch.allclose(plain, forced)


def test_a_decoder_without_attention_is_refused():
    task = ReversalTask(max_len=4, hidden=8, decoder="peeky")
    inputs, targets = _batch(task, 4)
    with pytest.raises(ValueError, match="attention decoder"):
        teacher_forced(task.build_model(), inputs, targets)


def test_forced_attention_scores_every_condition(temporary_cache):
    trained = train(ReversalTask(max_len=5, hidden=8), TrainConfig(steps=3))
    result = forced_attention(trained, lengths=[3, 5], samples=20)
    assert list(result) == ["as trained", "its own largest weight", *FORCED_OFFSETS]
    assert all(0.0 <= share <= 1.0 for share in result.values())
    assert forced_attention(trained, lengths=[3, 5], samples=20) == result  # read back


def test_first_step_reaching_takes_the_first_crossing():
    history = {"held_out_step": [100, 200, 300], "held_out_exact_match": [0.95, 0.5, 0.99]}
    assert first_step_reaching(history, 0.9) == 100
    assert first_step_reaching(history, 0.99) == 300
    assert first_step_reaching(history, 1.0) is None
