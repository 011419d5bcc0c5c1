"""The claims of the Bahdanau chapter about its trained encoder-decoders, three seeds each.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's tables.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnprimer.site.catalogue import REVERSAL_EXAMPLE, site_seeds
from attnprimer.site.experiments.bahdanau import (
    alignment_by_length,
    first_step_reaching,
    forced_attention,
    largest_weight,
    split_rows,
    state_probes,
)
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.figures import FIGURES
from attnprimer.site.figures.bahdanau import ATTENTION, BIDIRECTIONAL, MODELS
from attnprimer.site.figures.diagrams import texts
from attnprimer.training.train import held_out_generator, predict_one

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
    return {name: np.array([cached_accuracy_by_length(trained, TRAINED + BEYOND, 1000)
                            for trained in runs])
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
    # "to write G (output step 1) the model reads the state at position 8 ... Only the first
    # output step reads the letter it copies": seed 0, the figure's model
    trained = models["attention (additive)"][0]
    _, attention = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    last = len(REVERSAL_EXAMPLE) - 1
    read = attention["encoder-decoder"][: last + 1].argmax(dim=-1).tolist()  # the letter steps
    assert read == [last] + [last + 1 - step for step in range(1, last + 1)]


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


def test_at_ten_letters_additive_attention_is_well_ahead_of_one_vector_on_average(by_length):
    # "the vanilla model reverses about half of the inputs and the peeky one about three in four,
    # in every seed; the additive attention model about nine in ten on average, well ahead of
    # both": the additive model's seeds are not each claimed to beat every one-vector seed
    vanilla, peeky = by_length["vanilla"][:, 9], by_length["peeky"][:, 9]
    additive = by_length["attention (additive)"][:, 9]
    assert 0.45 <= vanilla.min() <= vanilla.max() <= 0.6
    assert 0.7 <= peeky.min() <= peeky.max() <= 0.8
    assert 0.85 <= additive.mean() <= 0.97
    assert additive.mean() > peeky.mean() + 0.08  # "well ahead of both"
    assert peeky.mean() > vanilla.mean() + 0.08


def test_on_short_inputs_every_model_is_right_nearly_always(by_length):
    # 98 % at four letters was one draw: a retraining with other rounding put a dot seed at 97.6 %
    assert min(runs[:, :3].min() for runs in by_length.values()) >= 0.99  # 1 to 3 letters
    assert min(runs[:, 3].min() for runs in by_length.values()) >= 0.97  # 4 letters


def test_on_medium_lengths_the_one_vector_models_are_ahead_on_average(by_length):
    # "over four to eight letters the peeky decoder is right more often than either attention
    # model, on average, and over four to six letters so is the vanilla decoder"
    def mean(name, first, last):
        return by_length[name][:, first - 1:last].mean()

    for name in UNIDIRECTIONAL:
        assert mean("peeky", 4, 8) > mean(name, 4, 8), name
        assert mean("vanilla", 4, 6) > mean(name, 4, 6), name


def test_three_times_the_budget_takes_the_vanilla_decoder_to_the_additive_models_level(by_length):
    # "it then reached, on the trained lengths, about what the additive model reaches here in
    # 1,200 steps, at ten letters included": the RNN recap's vanilla decoder at 3,600 steps
    from attnprimer.site.catalogue import VANILLA_BOTTLENECK_STEPS
    from attnprimer.site.experiments.rnn_recap import bottleneck_curves

    longer = bottleneck_curves().array(f"64 floats, {VANILLA_BOTTLENECK_STEPS:,} steps")
    additive = by_length["attention (additive)"]
    assert abs(longer[:, :10].mean() - additive[:, :10].mean()) < 0.02
    assert abs(longer[:, 9].mean() - additive[:, 9].mean()) < 0.05


def test_the_dot_model_slips_first_and_falls_slower(by_length):
    dot, vanilla = by_length["attention (dot)"], by_length["vanilla"]
    # 5 to 7 letters, "on average": seed by seed the margin at seven letters is under a point
    assert (dot[:, 4:7].mean(axis=0) < vanilla[:, 4:7].mean(axis=0)).all()
    # "and so is each of at least two of its three seeds": two on the AMD EPYC machines that
    # built the page before, all three on an Intel Xeon, where the third seed, among the best
    # at four to seven letters on the AMD machines, fell below every vanilla seed at seven
    below = (dot[:, 4:7] < vanilla[:, 4:7].mean(axis=0)).all(axis=1)  # (seeds,)
    assert below.sum() >= 2
    assert dot[:, 9].min() > vanilla[:, 9].max()  # at ten, every dot seed above every vanilla


def test_the_lead_of_attention_grows_with_the_length(by_length):
    lead = by_length["attention (additive)"] - by_length["vanilla"]  # (seeds, lengths)
    # "grows up to just past the trained lengths ... then shrinks": at 10 letters far more
    # than at 5, largest at 11 to 13 letters (below)
    assert (lead[:, 9] > lead[:, 4] + 0.2).all()
    # the caption: "furthest just past them", over both one-vector models, seed means
    for name in ("attention (additive)", "attention (dot)", BIDIRECTIONAL):
        for one_vector in ("vanilla", "peeky"):
            lead = (by_length[name] - by_length[one_vector]).mean(axis=0)
            assert 11 <= int(np.argmax(lead)) + 1 <= 13, (name, one_vector, lead)
    # "the unidirectional attention models pull ahead ... not before the longest trained
    # lengths": up to 8 letters, less than a tenth ahead of either one-vector model
    for name in ("attention (additive)", "attention (dot)"):
        for one_vector in ("vanilla", "peeky"):
            lead = (by_length[name] - by_length[one_vector]).mean(axis=0)
            assert lead[:8].max() < 0.1, (name, one_vector, lead)


def test_the_dot_model_ends_below_the_additive_one_on_average(by_length):
    # "a difference of means over three seeds, not an ordering that every seed need follow"
    additive, dot = by_length["attention (additive)"], by_length["attention (dot)"]
    assert additive[:, :10].mean() > dot[:, :10].mean()  # on the trained lengths
    assert additive[:, 9].mean() > dot[:, 9].mean()  # at ten letters


def test_the_bidirectional_model_is_right_on_the_trained_lengths(by_length):
    bidirectional = by_length[BIDIRECTIONAL]
    assert bidirectional[:, :10].min() >= 0.99  # "(nearly) every input of every trained length"
    unidirectional = by_length["attention (additive)"]
    assert (bidirectional[:, 9] > unidirectional[:, 9]).all()
    assert bidirectional[:, 10].min() >= 0.95  # and one letter beyond


def test_beyond_the_trained_lengths_every_model_fails(by_length):
    assert max(runs[:, 16].max() for runs in by_length.values()) < 0.1  # at 17 letters
    assert max(runs[:, 19].max() for runs in by_length.values()) < 0.05  # at 20 letters


def test_the_bidirectional_model_learned_fastest(models):
    reached = {name: [first_step_reaching(trained.history, 0.99) for trained in runs]
               for name, runs in models.items()}
    assert all(step is not None and step <= 600 for step in reached[BIDIRECTIONAL])
    # "and never falls below 97 % after it" (above 99 % at every later evaluation on the AMD
    # EPYC machines that built the page before; on an Intel Xeon one seed, past 99 % at step
    # 200, was at 97.9 % at step 600)
    for trained in models[BIDIRECTIONAL]:
        history = trained.history
        later = [score for step, score in zip(history["held_out_step"],
                                              history["held_out_exact_match"], strict=True)
                 if step >= 600]
        assert min(later) >= 0.97
    for name in UNIDIRECTIONAL:  # "end their 1,200 steps short of it in most seeds"
        assert sum(step is None for step in reached[name]) >= 2, name


# --- the alignment ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", UNIDIRECTIONAL)
def test_the_alignment_is_the_anti_diagonal_shifted_by_one(models, name):
    for trained in models[name]:
        offsets = alignment_by_length(trained, TRAINED)
        assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95  # on the letter, or one right
        assert 0.7 <= offsets.get(1, 0) <= 0.85  # and three to four times in five one right


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
            # the first step: on the letter "on all but a few inputs in a hundred, at every
            # trained length" (0.984 at ten letters in one retraining's dot seed 0, 0.99 or more
            # in the others)
            assert (offsets[:, 0] == 0).float().mean() >= 0.95, length
        assert on_letter / later < 0.1


def test_the_bidirectional_alignment_is_on_the_copied_letter_more_often(models):
    on_letter = []
    for trained in models[BIDIRECTIONAL]:
        offsets = alignment_by_length(trained, TRAINED)
        assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95
        on_letter.append(offsets.get(0, 0))
    unidirectional = [alignment_by_length(trained, TRAINED).get(0, 0)
                      for name in UNIDIRECTIONAL for trained in models[name]]
    assert min(on_letter) > max(unidirectional) + 0.15  # "far more often, in every seed"
    # "from about half the time to most of the time": how the seeds split differs
    assert min(on_letter) >= 0.4 and max(on_letter) >= 0.7
    assert max(on_letter) - min(on_letter) >= 0.2  # "differs a good deal from seed to seed"


def test_the_bidirectional_weights_are_spread_over_two_states(models):
    for name, runs in models.items():
        if name in UNIDIRECTIONAL:  # "about 0.9 or more"
            assert all(largest_weight(trained, TRAINED) >= 0.85 for trained in runs)
        elif name == BIDIRECTIONAL:
            # "about two thirds"
            assert all(0.6 <= largest_weight(trained, TRAINED) <= 0.72 for trained in runs)
            # "so do about seven rows in ten over held-out inputs, in every seed"
            assert all(0.6 <= split_rows(trained, TRAINED) <= 0.8 for trained in runs)


def _on_or_right(trained, lengths) -> float:
    offsets = alignment_by_length(trained, lengths)
    return offsets.get(0, 0) + offsets.get(1, 0)


@pytest.mark.parametrize("name", ATTENTION)
def test_beyond_the_trained_lengths_the_alignment_falls_apart(models, name):
    for trained in models[name]:
        inside, beyond = _on_or_right(trained, TRAINED), _on_or_right(trained, BEYOND)
        assert beyond < inside - 0.1  # "in every model and seed"
        if name in UNIDIRECTIONAL:  # "in about half the steps or fewer, against nearly all"
            assert beyond <= 0.65
            assert inside >= 0.9


def test_beyond_the_trained_lengths_the_bidirectional_alignment_holds_more_often(models):
    # "the bidirectional model does so more often than they do", in every seed
    unidirectional = max(_on_or_right(trained, BEYOND)
                         for name in UNIDIRECTIONAL for trained in models[name])
    assert min(_on_or_right(trained, BEYOND) for trained in models[BIDIRECTIONAL]) > unidirectional


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
        assert forced["one to its right"] >= 0.98  # its own shifted position: (nearly) all
        assert 0.7 <= forced["the copied letter"] <= 0.9  # the "right" letter: about 4 in 5
        assert abs(forced["two to its right"] - 1 / 8) <= 0.02  # chance is 1 in 8
        # "the unidirectional models lose at most a few letters in a hundred that way"
        assert forced["its own largest weight"] >= forced["as trained"] - 0.03


def test_the_bidirectional_decoder_uses_the_copied_letter_and_more(models):
    unidirectional = [forced_attention(trained)["the copied letter"]
                      for name in UNIDIRECTIONAL for trained in models[name]]
    forced = [forced_attention(trained) for trained in models[BIDIRECTIONAL]]
    for each in forced:
        assert each["as trained"] >= 0.999
        # "more than nine letters in ten in every seed, more than any unidirectional model"
        assert each["the copied letter"] >= 0.9
        assert each["the copied letter"] > max(unidirectional)
        assert each["one to its right"] < each["the copied letter"] - 0.25  # "far worse"
        assert abs(each["two to its right"] - 1 / 8) <= 0.02
        # "reading only the position of its own largest weight costs it one letter in seven or
        # more in every seed"
        assert each["its own largest weight"] <= each["as trained"] - 1 / 7
    # "in some close to chance": more than one seed
    assert sum(each["one to its right"] <= 0.2 for each in forced) >= 2
    # "about a third in two of them"
    assert sum(0.28 <= each["as trained"] - each["its own largest weight"] <= 0.4
               for each in forced) >= 2
