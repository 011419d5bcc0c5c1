"""The claims of the RNN recap chapter about its trained encoder-decoders.

They run on the models the docs build uses (the real model cache, via ``site_models``).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnprimer.analysis import accuracy_by_length
from attnprimer.site_models import REVERSAL_DECODERS, site_model

TRAINED = range(1, 11)
BEYOND = range(11, 21)


@pytest.fixture(scope="module")
def models(site_models):
    return {label: site_models(site_model("reversal", **settings))
            for label, settings in REVERSAL_DECODERS.items()}


@pytest.fixture(scope="module")
def accuracy(models):
    return {label: dict(zip([*TRAINED, *BEYOND],
                            accuracy_by_length(trained, [*TRAINED, *BEYOND], samples=1000),
                            strict=True))
            for label, trained in models.items()}


def test_the_models_train_on_lengths_up_to_ten(models):
    for trained in models.values():
        assert (trained.task.min_len, trained.task.max_len) == (1, 10)


def test_every_model_reverses_short_inputs(accuracy):
    for label, scores in accuracy.items():
        assert min(scores[length] for length in range(1, 4)) >= 0.98, label


def test_the_dot_score_is_the_weakest_attention_on_the_trained_lengths(accuracy):
    inside = {label: np.mean([scores[length] for length in TRAINED])
              for label, scores in accuracy.items()}
    assert inside["attention (dot)"] < inside["attention (additive)"]
    assert inside["attention (dot)"] < inside["peeky"]


def test_the_bottleneck_vanilla_falls_with_length_inside_training(accuracy):
    vanilla = accuracy["vanilla"]
    assert vanilla[10] < 0.7 < 0.97 <= vanilla[5]


def test_peeky_beats_vanilla_and_attention_beats_both_at_the_longest_trained_length(accuracy):
    at_ten = {label: scores[10] for label, scores in accuracy.items()}
    assert at_ten["peeky"] > at_ten["vanilla"] + 0.1
    assert at_ten["attention (additive)"] > at_ten["peeky"] + 0.1
    assert at_ten["attention (additive)"] >= 0.9


def test_attention_beats_vanilla_by_far_beyond_training(accuracy):
    mean = {label: np.mean([scores[length] for length in BEYOND])
            for label, scores in accuracy.items()}
    assert mean["attention (additive)"] > 3 * mean["vanilla"]


def test_no_model_reverses_twice_the_training_length(accuracy):
    for label, scores in accuracy.items():
        assert scores[20] < 0.05, label


def test_additive_attention_is_best_over_the_trained_lengths(accuracy):
    inside = {label: np.mean([scores[length] for length in TRAINED])
              for label, scores in accuracy.items()}
    assert max(inside, key=inside.get) == "attention (additive)"


def _step_accuracy(trained, *, teacher_forcing: bool):
    """Each output step's accuracy on 10-letter held-out inputs (the RNN recap lab's measure)."""
    import torch

    from attnprimer.train import held_out_generator

    batch = trained.task.at_length(10).sample(2000, held_out_generator())
    with torch.no_grad():
        targets = batch.targets if teacher_forcing else None
        logits = trained.model(batch.inputs, targets).logits  # (B, T, C)
    return (logits.argmax(dim=-1) == batch.targets).float().mean(dim=0)  # (T,)


def test_free_running_errors_compound_where_teacher_forcing_hides_them(models):
    # The RNN recap lab: teacher-forced, the later steps are about as accurate as the
    # first; free running, accuracy falls step after step, far below (the end token aside).
    forced = _step_accuracy(models["vanilla"], teacher_forcing=True)
    free = _step_accuracy(models["vanilla"], teacher_forcing=False)
    letters = slice(0, 10)  # step 10 writes the end token
    assert abs(forced[0] - free[0]) < 1e-9  # step 0 is fed the start token either way
    assert forced[letters].min() > forced[0] - 0.06
    assert free[letters][-1] < forced[letters][-1] - 0.10
    assert (free[5:10] < forced[5:10] - 0.05).all()
    assert free[9] < free[1] - 0.10  # falls step after step
    assert free[10] > free[9] + 0.15  # the end token is easy
