"""The claims of the Bahdanau chapter about its trained encoder-decoders, three seeds each.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnprimer.experiments.bahdanau import (alignment_by_length, exact_match_by_length,
                                             first_step_reaching, forced_attention,
                                             largest_weight, state_probes)
from attnprimer.figures.bahdanau import ATTENTION, BIDIRECTIONAL, MODELS
from attnprimer.site_models import REVERSAL_EXAMPLE, site_seeds
from attnprimer.train import predict_one

TRAINED = list(range(1, 11))
BEYOND = list(range(11, 21))
UNIDIRECTIONAL = ("attention (additive)", "attention (dot)")


@pytest.fixture(scope="module")
def models(site_models):
    """Every seed of every model of the page, by name."""
    return {name: [site_models(model) for model in site_seeds("reversal", **settings)]
            for name, settings in MODELS.items()}


@pytest.fixture(scope="module")
def by_length(models):
    """Exact match at lengths 1-20, (seeds, 20) per model."""
    return {name: np.array([exact_match_by_length(trained, TRAINED + BEYOND) for trained in runs])
            for name, runs in models.items()}


def test_every_model_has_three_seeds(models):
    assert all(len(runs) == 3 for runs in models.values())


# --- the example -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["attention (additive)", BIDIRECTIONAL])
def test_the_example_is_reversed_right(models, name):
    trained = models[name][0]
    prediction, _ = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    assert trained.task.decode_output(prediction) == REVERSAL_EXAMPLE[::-1] + "."


def test_the_first_output_step_reads_the_last_letter(models):
    trained = models["attention (additive)"][0]
    _, attention = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    assert int(attention["encoder-decoder"][0].argmax()) == len(REVERSAL_EXAMPLE) - 1


# --- what attention buys: accuracy against length ---------------------------------------------


def test_additive_attention_beats_one_vector_in_every_seed(by_length):
    additive = by_length["attention (additive)"]
    for one_vector in ("vanilla", "peeky"):
        assert additive[:, :10].mean(axis=1).min() > by_length[one_vector][:, :10].mean(axis=1).max()
    assert additive[:, 9].min() >= 0.9  # at ten letters: above 90 % in every seed
    assert by_length["vanilla"][:, 9].max() <= 0.6  # the vanilla model: near half


def test_the_lead_of_attention_grows_with_the_length(by_length):
    lead = by_length["attention (additive)"] - by_length["vanilla"]  # (seeds, lengths)
    assert (lead[:, 9] > lead[:, 4] + 0.2).all()  # at 10 letters far more than at 5


def test_the_dot_model_ends_below_the_additive_one_and_spreads_more(by_length):
    additive, dot = by_length["attention (additive)"], by_length["attention (dot)"]
    assert additive[:, :10].mean(axis=1).min() > dot[:, :10].mean(axis=1).max()
    assert additive[:, 9].min() > dot[:, 9].max()
    spread = {name: np.ptp(runs[:, :10].mean(axis=1)) for name, runs in by_length.items()}
    assert spread["attention (dot)"] > 2 * spread["attention (additive)"]


def test_the_bidirectional_model_is_right_on_the_trained_lengths(by_length):
    bidirectional = by_length[BIDIRECTIONAL]
    assert bidirectional[:, :10].mean(axis=1).min() >= 0.999
    unidirectional = by_length["attention (additive)"]
    assert (bidirectional[:, 9] > unidirectional[:, 9]).all()
    assert bidirectional[:, 10].min() >= 0.95  # and one letter beyond


def test_beyond_the_trained_lengths_every_model_fails(by_length):
    assert max(runs[:, 16].max() for runs in by_length.values()) < 0.05  # at 17 letters


def test_the_bidirectional_model_learned_fastest(models):
    reached = {name: [first_step_reaching(trained.history, 0.99) for trained in runs]
               for name, runs in models.items()}
    assert all(step is not None and step <= 300 for step in reached[BIDIRECTIONAL])
    assert sum(step is not None for step in reached["attention (additive)"]) <= 1
    assert all(step is None for step in reached["attention (dot)"])


# --- the alignment ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", UNIDIRECTIONAL)
def test_the_alignment_is_the_anti_diagonal_shifted_by_one(models, name):
    for trained in models[name]:
        offsets = alignment_by_length(trained, TRAINED)
        assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95  # on the letter, or one right
        assert offsets.get(1, 0) >= 0.7  # and mostly one to its right


def test_the_bidirectional_alignment_is_on_the_copied_letter_more_often(models):
    for bidirectional, unidirectional in zip(models[BIDIRECTIONAL],
                                             models["attention (additive)"], strict=True):
        offsets = alignment_by_length(bidirectional, TRAINED)
        assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95
        assert offsets.get(0, 0) >= 0.5 > alignment_by_length(unidirectional, TRAINED)[0]


def test_the_bidirectional_weights_are_spread_over_two_states(models):
    for name, runs in models.items():
        if name in UNIDIRECTIONAL:
            assert all(largest_weight(trained, TRAINED) >= 0.85 for trained in runs)
        elif name == BIDIRECTIONAL:
            assert all(largest_weight(trained, TRAINED) <= 0.7 for trained in runs)


@pytest.mark.parametrize("name", ATTENTION)
def test_beyond_the_trained_lengths_the_alignment_falls_apart(models, name):
    for trained in models[name]:
        inside, beyond = (alignment_by_length(trained, lengths) for lengths in (TRAINED, BEYOND))
        assert beyond.get(0, 0) + beyond.get(1, 0) <= 0.8
        assert beyond.get(0, 0) + beyond.get(1, 0) < inside.get(0, 0) + inside.get(1, 0) - 0.2


@pytest.mark.parametrize("name", ATTENTION)
def test_the_encoder_state_also_holds_the_letter_before(models, name):
    for trained in models[name]:
        probe = state_probes(trained)
        assert probe["letter j"] >= 0.99
        assert probe["letter j - 1"] >= 0.95


# --- forcing the attention -------------------------------------------------------------------


@pytest.mark.parametrize("name", UNIDIRECTIONAL)
def test_the_unidirectional_decoders_use_the_state_one_to_the_right(models, name):
    for trained in models[name]:
        forced = forced_attention(trained)
        assert forced["one to its right"] >= 0.995  # its own shifted position: (nearly) all
        assert 0.7 <= forced["the copied letter"] <= 0.9  # the "right" letter: about 4 in 5
        assert forced["two to its right"] <= 0.2  # chance is 1 in 8
        assert forced["its own largest weight"] >= forced["as trained"] - 0.015


def test_the_bidirectional_decoder_uses_the_copied_letter_and_more(models):
    for trained in models[BIDIRECTIONAL]:
        forced = forced_attention(trained)
        assert forced["as trained"] >= 0.999
        assert forced["the copied letter"] >= 0.97
        assert forced["one to its right"] <= 0.5
        assert forced["two to its right"] <= 0.2
        assert forced["its own largest weight"] <= 0.85  # one state alone is not what it reads
