"""The claims of the positional-encoding chapter about its trained models.

They run on the models the docs build uses (the real model cache, via ``site_models``).
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.analysis import accuracy_by_length, signal_attention
from attnprimer.site_models import SEEDS, site_model
from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.tasks import SignalTask
from attnprimer.tasks.signal import multiset_bound
from attnprimer.train import TrainConfig, evaluate, held_out_generator, predict

TARGET = 0.99
ENCODED = [encoding for encoding in POSITIONAL_ENCODINGS if encoding != "none"]


@pytest.fixture(scope="module")
def models(site_models):
    return {encoding: [site_models(site_model("signal", pos_enc=encoding, seed=seed))
                       for seed in SEEDS]
            for encoding in POSITIONAL_ENCODINGS}


@pytest.fixture(scope="module")
def exact(models):
    return {encoding: [evaluate(trained).exact_match for trained in trained_models]
            for encoding, trained_models in models.items()}


def test_the_models_are_the_default_recipe_with_three_seeds(models):
    assert len(SEEDS) >= 3
    for encoding, trained_models in models.items():
        for seed, trained in zip(SEEDS, trained_models, strict=True):
            assert trained.task == SignalTask(pos_enc=encoding)
            assert trained.config == TrainConfig(**{**SignalTask.train_defaults, "seed": seed})


@pytest.mark.parametrize("encoding", ENCODED)
def test_every_seed_with_an_encoding_reaches_the_target(exact, encoding):
    assert min(exact[encoding]) >= TARGET, exact[encoding]


def test_without_an_encoding_the_model_stays_just_under_the_multiset_bound(exact, models):
    task = models["none"][0].task
    bound = float(multiset_bound(task.max_len, task.vocab_size))
    for score in exact["none"]:
        assert bound - 0.02 <= score <= bound + 0.005  # 10,000 samples: about 0.5 % of noise


@pytest.mark.parametrize("seed_index", range(len(SEEDS)))
def test_the_learned_encoding_marks_the_first_position(models, seed_index):
    trained = models["learned"][seed_index]
    norms = trained.model.position.norms()[: trained.task.length]
    assert norms[0] >= 2 * norms[1:].max(), norms


def test_positions_never_seen_keep_a_zero_learned_vector(models):
    for trained in models["learned"]:
        assert torch.all(trained.model.position.norms()[trained.task.length:] == 0)


@pytest.fixture(scope="module")
def where(models):
    return {encoding: [signal_attention(trained) for trained in trained_models]
            for encoding, trained_models in models.items()}


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_absolute_encodings_output_weights_the_signal_position(where, models, encoding):
    even = 1 / models[encoding][0].task.length
    for result in where[encoding]:
        assert result["the signal"] > 3 * even
        assert result["the signal"] > 3 * result["another letter"]


def test_rotary_models_weight_later_copies_of_the_signal_letter(where):
    for result in where["rotary"]:
        assert result["a later copy of the signal letter"] > 1.5 * result["another letter"]
        assert result["a later copy of the signal letter"] > result["the signal"]


def test_without_an_encoding_the_output_reads_almost_evenly(where, models):
    even = 1 / models["none"][0].task.length
    for result in where["none"]:
        assert all(abs(weight - even) < 0.02 for weight in result.values())


@pytest.mark.parametrize("encoding", ENCODED)
def test_remaining_errors_are_mostly_the_rare_large_counts(models, encoding):
    large = total = 0
    for trained in models[encoding]:
        batch = trained.task.sample(10_000, held_out_generator())
        _, predictions = predict(trained.model, batch.inputs)
        wrong = predictions[:, 0] != batch.targets[:, 0]
        total += int(wrong.sum())
        large += int((wrong & (batch.targets[:, 0] >= 8)).sum())
    assert large > total / 2, (large, total)


@pytest.mark.parametrize("group", ["counting", *ENCODED])
def test_every_model_is_good_at_its_training_length_only(site_models, group):
    if group == "counting":
        trained_models = [site_models(site_model("counting", seed=seed)) for seed in SEEDS]
    else:
        trained_models = [site_models(site_model("signal", pos_enc=group, seed=seed))
                          for seed in SEEDS]
    for trained in trained_models:
        at_ten, at_twenty = accuracy_by_length(trained, [10, 20])
        assert at_ten >= 0.99
        assert at_twenty < 0.5
