"""The claims of the Bahdanau chapter about its trained encoder-decoders, three seeds each.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's tables.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnprimer.analysis import cached_accuracy_by_length
from attnprimer.experiments.bahdanau import (alignment_by_length, first_step_reaching,
                                             forced_attention, largest_weight, state_probes)
from attnprimer.figures import FIGURES
from attnprimer.figures.bahdanau import ATTENTION, BIDIRECTIONAL, MODELS
from attnprimer.figures.diagrams import texts
from attnprimer.site_models import REVERSAL_EXAMPLE, site_seeds
from attnprimer.train import held_out_generator, predict_one

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
    return {name: np.array([cached_accuracy_by_length(trained, TRAINED + BEYOND, 1000) for trained in runs])
            for name, runs in models.items()}


def test_every_model_has_three_seeds(models):
    assert all(len(runs) == 3 for runs in models.values())


def test_the_bidirectional_encoder_changes_the_encoder_only(models):
    unidirectional, bidirectional = models["attention (additive)"][0], models[BIDIRECTIONAL][0]

    def count(module):
        return sum(parameter.numel() for parameter in module.parameters())

    assert bidirectional.model.encoder.output_dim == unidirectional.model.encoder.output_dim == 64
    assert count(bidirectional.model.decoder) == count(unidirectional.model.decoder)
    assert (count(bidirectional.model.encoder.gru), count(unidirectional.model.encoder.gru)) == (
        12_672, 18_816)  # the page's numbers


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


def _widths(figure, step: int) -> dict[int, float]:
    """The width of each line drawn into output step ``step``, by encoder state."""
    widths = {}
    for patch in figure.axes[0].patches:
        name = patch.get_label().split()
        if len(name) == 4 and name[0] == "step" and int(name[1]) == step:
            widths[int(name[3])] = max(widths.get(int(name[3]), 0.0), patch.get_linewidth())
    return widths


def test_the_alignment_diagram_draws_the_trained_weights(models):
    # The page's diagram: the widest arrow into each written letter is that step's largest weight.
    figure = FIGURES["bahdanau/alignment_model"].build()
    trained = models["attention (additive)"][0]
    prediction, attention = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    steps = len(trained.task.decode_output(prediction))
    weights = attention["encoder-decoder"][:steps, : len(REVERSAL_EXAMPLE)]
    for step in range(steps):
        widths = _widths(figure, step)
        assert max(widths, key=widths.get) == int(weights[step].argmax()), step
    assert "which writes G" in " ".join(texts(figure))  # panel (a) is output step 1


# --- what attention buys: accuracy against length ---------------------------------------------


def test_additive_attention_beats_one_vector_in_every_seed(by_length):
    additive = by_length["attention (additive)"]
    for one_vector in ("vanilla", "peeky"):
        assert additive[:, :10].mean(axis=1).min() > by_length[one_vector][:, :10].mean(axis=1).max()
    assert additive[:, 9].min() >= 0.9  # at ten letters: above 90 % in every seed
    assert 0.45 <= by_length["vanilla"][:, 9].min() <= by_length["vanilla"][:, 9].max() <= 0.6
    assert 0.7 <= by_length["peeky"][:, 9].min() <= by_length["peeky"][:, 9].max() <= 0.8


def test_on_short_inputs_every_model_is_right_nearly_always(by_length):
    assert min(runs[:, :4].min() for runs in by_length.values()) >= 0.98  # 1 to 4 letters


def test_the_dot_model_slips_first_and_falls_slower(by_length):
    dot, vanilla = by_length["attention (dot)"], by_length["vanilla"]
    assert (dot[:, 4:7].max(axis=0) < vanilla[:, 4:7].min(axis=0)).all()  # 5 to 7 letters
    assert dot[:, 9].min() > vanilla[:, 9].max()  # at ten, above it again


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
        assert 0.7 <= offsets.get(1, 0) <= 0.85  # and about four times in five one right


@pytest.mark.parametrize("name", UNIDIRECTIONAL)
@torch.no_grad()
def test_after_the_first_step_few_steps_read_the_copied_letter(models, name):
    for trained in models[name]:
        on_letter = later = 0
        for length in TRAINED:
            inputs, _ = trained.task.at_length(length).sample(500, held_out_generator(0))
            weights = trained.model(inputs).attention["encoder-decoder"][:, :length]  # (B, n, S)
            offsets = weights.argmax(dim=-1) - torch.arange(length - 1, -1, -1)  # (B, n)
            on_letter += int((offsets[:, 1:] == 0).sum())
            later += offsets[:, 1:].numel()
            assert (offsets[:, 0] == 0).float().mean() >= 0.99  # the first step: on the letter
        assert on_letter / later < 0.1


def test_the_bidirectional_alignment_is_on_the_copied_letter_more_often(models):
    for bidirectional, unidirectional in zip(models[BIDIRECTIONAL],
                                             models["attention (additive)"], strict=True):
        offsets = alignment_by_length(bidirectional, TRAINED)
        assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95
        assert offsets.get(0, 0) >= 0.5 > alignment_by_length(unidirectional, TRAINED)[0]
    on_letter = [alignment_by_length(trained, TRAINED)[0] for trained in models[BIDIRECTIONAL]]
    assert on_letter[0] < 0.6 and min(on_letter[1:]) >= 0.8  # half in seed 0, 4 in 5 after


def test_the_bidirectional_weights_are_spread_over_two_states(models):
    for name, runs in models.items():
        if name in UNIDIRECTIONAL:
            assert all(largest_weight(trained, TRAINED) >= 0.88 for trained in runs)
        elif name == BIDIRECTIONAL:
            assert all(0.55 <= largest_weight(trained, TRAINED) <= 0.7 for trained in runs)


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
        assert abs(forced["two to its right"] - 1 / 8) <= 0.02  # chance is 1 in 8
        assert forced["its own largest weight"] >= forced["as trained"] - 0.015


def test_the_bidirectional_decoder_uses_the_copied_letter_and_more(models):
    for seed, trained in enumerate(models[BIDIRECTIONAL]):
        forced = forced_attention(trained)
        assert forced["as trained"] >= 0.999
        assert forced["the copied letter"] >= 0.97
        assert forced["one to its right"] <= (0.5 if seed == 0 else 0.2)  # 0.2: near chance
        assert abs(forced["two to its right"] - 1 / 8) <= 0.02
        # one state alone is not what it reads: a fifth to two fifths of the letters lost
        assert 0.55 <= forced["its own largest weight"] <= 0.82
