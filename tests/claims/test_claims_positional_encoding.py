"""The claims of the positional-encoding chapter about its trained models.

They run on the models the docs build uses (the real model cache, via ``site_models``).
"""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.site.catalogue import (
    COUNTING_LENGTH_VARIANTS,
    SEEDS,
    SIGNAL_EXAMPLE,
    SIGNAL_VARIANTS,
    site_model,
    site_seeds,
)
from attnprimer.site.experiments import positional_encoding as experiments
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.figures.positional_encoding import LENGTHS
from attnprimer.tasks import CountingTask, SignalTask
from attnprimer.tasks.signal import multiset_bound
from attnprimer.training.model_cache import cached_evaluation, cached_result
from attnprimer.training.train import TrainConfig, predict_one

TARGET = 0.99
ENCODED = [encoding for encoding in POSITIONAL_ENCODINGS if encoding != "none"]
GROUPS = {**{encoding: {"pos_enc": encoding} for encoding in POSITIONAL_ENCODINGS},
          **SIGNAL_VARIANTS}


@pytest.fixture(scope="module")
def models(site_models):
    return {name: [site_models(model) for model in site_seeds("signal", **settings)]
            for name, settings in GROUPS.items()}


@pytest.fixture(scope="module")
def exact(models):
    return {encoding: [cached_evaluation(trained).exact_match for trained in trained_models]
            for encoding, trained_models in models.items()}


def test_the_models_are_the_default_recipe_with_three_seeds(models):
    assert len(SEEDS) >= 3
    for name, trained_models in models.items():
        for seed, trained in zip(SEEDS, trained_models, strict=True):
            assert trained.task == SignalTask(**GROUPS[name])
            assert trained.config == TrainConfig(**{**SignalTask.train_defaults, "seed": seed})


@pytest.mark.parametrize("name", [*ENCODED, "learned, with W_q, W_k"])
def test_every_seed_with_an_encoding_reaches_the_target(exact, name):
    assert min(exact[name]) >= TARGET, exact[name]


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_projections_do_not_help_the_added_encodings(exact, encoding):
    # "both score lower on average with them than without"
    with_projections = exact[f"{encoding}, with W_q, W_k"]
    assert sum(with_projections) < sum(exact[encoding])


def _errors(models, name):
    """Wrong answers on the same 10,000 held-out sequences, by true count, summed over seeds."""
    results = [experiments.cached_errors_by_count(trained) for trained in models[name]]
    return sum(wrong for wrong, _ in results), results[0][1]


def test_the_learned_encodings_gap_with_projections_lies_at_count_8(models, by_count):
    # "For the learned encoding it is all in the inputs with a count of 8, under half a percent
    # of them: two of its three runs with projections never get an 8 right."
    plain, seen = _errors(models, "learned")
    projected, _ = _errors(models, "learned, with W_q, W_k")
    extra = projected - plain  # (C,): extra errors with the projections, by true count
    assert extra[8] > 0 and extra.sum() > 0
    others = [count for count in range(len(extra)) if count != 8]
    assert (extra[others] <= 0).all(), extra.tolist()  # "no more mistakes ... but at count 8"
    assert extra[:6].sum() < 0, extra.tolist()  # "at the small counts it makes fewer"
    assert extra[8] >= extra.sum()  # the whole gap, and more
    assert 0.003 <= seen[8] / seen.sum() < 0.005  # "under half a percent" of the inputs
    eights = sorted(result["accuracy"][8] for result in by_count["learned, with W_q, W_k"])
    assert eights[:2] == [0, 0] and eights[2] >= 0.99, eights  # two seeds none, one all


def test_the_sinusoidal_encodings_gap_with_projections_lies_mostly_at_counts_6_to_8(models):
    # "The sinusoidal encoding with projections loses more, mostly at counts 6 to 8"; in the
    # fold: more mistakes at every group of counts up to 8, on average
    plain, _ = _errors(models, "sinusoidal")
    projected, _ = _errors(models, "sinusoidal, with W_q, W_k")
    extra = projected - plain
    for group in (range(0, 6), range(6, 8), range(8, 9)):
        assert extra[list(group)].sum() > 0, (group, extra.tolist())
    assert extra[6:9].sum() >= 0.75 * extra.sum(), extra.tolist()
    gap = sum(exact_of(trained) for trained in models["sinusoidal"]) - sum(
        exact_of(trained) for trained in models["sinusoidal, with W_q, W_k"])
    assert gap > 3 * (sum(exact_of(trained) for trained in models["learned"]) - sum(
        exact_of(trained) for trained in models["learned, with W_q, W_k"]))  # "loses more"


def exact_of(trained):
    return cached_evaluation(trained).exact_match


def test_sinusoidal_with_projections_falls_short_of_the_target_in_some_seed(exact):
    # how many seeds reach it is not stable: it changed with floating-point rounding alone
    scores = exact["sinusoidal, with W_q, W_k"]
    assert min(scores) < TARGET, scores


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
    assert norms[1:].max() <= 1.07 * norms[1:].min(), norms  # "within a few percent"
    # "and point nearly the same way"
    others = trained.model.position.table.detach()[1: trained.task.length]  # (S - 1, D)
    cosines = F.cosine_similarity(others[:, None], others[None], dim=-1)
    assert cosines.min() >= 0.9, cosines.min()


def test_without_its_first_positions_vector_the_learned_model_fails(models):
    # "replace position 0's vector by the mean of the other positions' and the exact match
    # falls from over 99 % to under a third in every seed, to almost nothing in two of them"
    results = [experiments.cached_without_first_position(trained) for trained in models["learned"]]
    assert all(result["as trained"] > 0.99 for result in results), results
    ablated = sorted(result["position 0 as the others"] for result in results)
    assert ablated[-1] < 1 / 3 and ablated[1] < 0.05, ablated


def test_on_the_example_each_position_attends_to_its_own_letter_and_to_the_signal():
    """The heatmap of seed 0 on SIGNAL_EXAMPLE: 'each position of the encoder attends to the
    positions of its own letter and to the signal', more than to any other letter."""
    trained = site_model("signal", pos_enc="learned").trained()
    _, weights = predict_one(trained.model, trained.task.encode(SIGNAL_EXAMPLE))
    weights = weights["encoder self"]  # (S, S)
    for query, letter in enumerate(SIGNAL_EXAMPLE):
        own = [key for key, other in enumerate(SIGNAL_EXAMPLE) if other == letter or key == 0]
        rest = [key for key in range(len(SIGNAL_EXAMPLE)) if key not in own]
        assert weights[query, own].min() > weights[query, rest].max(), (query, letter)


def test_positions_never_seen_keep_a_zero_learned_vector(models):
    for trained in models["learned"]:
        assert torch.all(trained.model.position.norms()[trained.task.length:] == 0)


@pytest.fixture(scope="module")
def where(models):
    return {encoding: [experiments.cached_signal_attention(trained) for trained in trained_models]
            for encoding, trained_models in models.items()}


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_absolute_encodings_output_weights_the_signal_position(where, models, encoding):
    even = 1 / models[encoding][0].task.length
    for result in where[encoding]:
        assert result["the signal"] > 3 * even
        assert result["the signal"] > 3 * result["another letter"]


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_projections_change_how_the_absolute_encodings_read_out(where, models, encoding):
    even = 1 / models[encoding][0].task.length
    with_projections = where[f"{encoding}, with W_q, W_k"]
    strongest = max(result["the signal"] for result in with_projections)
    assert strongest < min(result["the signal"] for result in where[encoding])
    # the rotary pattern in a weaker form: the signal about as little as an even share,
    # the later copies of its letter above the other letters
    assert any(result["the signal"] < 2 * even
               and result["a later copy of the signal letter"] > result["another letter"]
               for result in with_projections), with_projections


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
        wrong, _ = experiments.cached_errors_by_count(trained)  # by true count, 10,000 held out
        total += int(wrong.sum())
        large += int(wrong[8:].sum())
        # "Most of what the encoded models still get wrong ... (in one sinusoidal seed, half)"
        assert int(wrong[8:].sum()) >= int(wrong.sum()) / 2, (encoding, wrong.tolist())
    assert large > total / 2, (large, total)


def test_with_projections_one_sinusoidal_seed_errs_mostly_on_smaller_counts(site_models):
    # "one seed of the sinusoidal encoding with W_q, W_k makes most of its mistakes on smaller
    # counts"
    shares = []
    for model in site_seeds("signal", **SIGNAL_VARIANTS["sinusoidal, with W_q, W_k"]):
        wrong, _ = experiments.cached_errors_by_count(site_models(model))
        shares.append(int(wrong[8:].sum()) / int(wrong.sum()))
    assert min(shares) < 0.45, shares


@pytest.mark.parametrize("group", ["counting", *ENCODED])
def test_every_model_is_good_at_its_training_length_only(site_models, group):
    if group == "counting":
        trained_models = [site_models(site_model("counting", seed=seed)) for seed in SEEDS]
    else:
        trained_models = [site_models(site_model("signal", pos_enc=group, seed=seed))
                          for seed in SEEDS]
    for trained in trained_models:
        curve = cached_accuracy_by_length(trained, LENGTHS)  # the page's figure
        at_ten, at_twenty = curve[LENGTHS.index(10)], curve[LENGTHS.index(20)]
        assert at_ten >= 0.99
        assert at_twenty < 0.5
        assert curve[LENGTHS.index(5)] < 0.5  # "wrong on most inputs at 5 and at 20"


# --- the large counts ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def by_count(models):
    return {name: [experiments.cached_accuracy_by_count(trained) for trained in trained_models]
            for name, trained_models in models.items() if name != "none"}


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_absolute_encodings_never_answer_nine_or_ten(by_count, encoding):
    for result in by_count[encoding]:
        assert max(result["largest"]) <= 8
        assert result["accuracy"][9] == result["accuracy"][10] == 0
        assert min(result["accuracy"][:8]) >= 0.95  # every count up to 7: nearly always right


@pytest.mark.parametrize("encoding", ["learned", "sinusoidal"])
def test_with_w_q_and_w_k_the_absolute_encodings_stop_at_8_or_earlier(by_count, encoding):
    # "The models with W_q and W_k stop at 8 or earlier too."
    for result in by_count[f"{encoding}, with W_q, W_k"]:
        assert max(result["largest"]) <= 8


def test_rotary_models_never_get_eight_or_more_right(by_count):
    for result in by_count["rotary"]:
        assert max(result["largest"]) <= 8
        assert max(result["accuracy"][8:]) == 0
        assert min(result["accuracy"][:8]) >= 0.95


# --- where the output step looks, by the signal's letter -----------------------------------------


def test_each_learned_seed_reads_the_signal_of_two_letters_and_far_less_of_the_third(models):
    even = 1 / models["learned"][0].task.length
    neglected = set()
    for trained in models["learned"]:
        weights = experiments.cached_signal_weight_by_letter(trained)
        ordered = sorted(weights.values())
        assert ordered[1] > 4 * even, weights  # two letters: several times an even share
        assert ordered[0] < ordered[1] / 2, weights  # the third: less than half as much
        neglected.add(min(weights, key=weights.get))
    assert len(neglected) > 1  # not the same letter in every seed


def test_the_neglected_letter_is_still_counted_right(models):
    for trained in models["learned"]:
        weights = experiments.cached_signal_weight_by_letter(trained)
        accuracy = cached_result(experiments.accuracy_by_signal_letter, trained)
        assert accuracy[min(weights, key=weights.get)] >= 0.99, (weights, accuracy)


def test_the_sinusoidal_seeds_do_not_share_that_pattern(models):
    even = 1 / models["sinusoidal"][0].task.length
    lowest = [min(experiments.cached_signal_weight_by_letter(trained).values())
              for trained in models["sinusoidal"]]
    assert max(lowest) > 3 * even and min(lowest) < 1.5 * even, lowest


def test_the_pages_example_has_the_letter_seed_0_neglects(models):
    trained = models["learned"][0]
    weights = experiments.cached_signal_weight_by_letter(trained)
    assert min(weights, key=weights.get) == "B"  # the example's signal (BCACABBAACB)


# --- length ------------------------------------------------------------------------------------


def test_the_position_free_counting_model_answers_an_input_and_it_twice_alike(site_models):
    for model in site_seeds("counting"):
        assert experiments.doubling_gap(site_models(model)) < 1e-3


@pytest.fixture(scope="module")
def counting_lengths(site_models):
    for settings in COUNTING_LENGTH_VARIANTS.values():
        for model in site_seeds("counting", **settings):
            site_models(model)  # trained (in parallel) before the experiment reads them
    lengths = experiments.COUNTING_LENGTHS
    return {name: [dict(zip(lengths, scores, strict=True)) for scores in runs]
            for name, runs in experiments.counting_lengths().items()}


def test_the_counting_variants_are_the_site_recipe_in_three_seeds():
    for settings in COUNTING_LENGTH_VARIANTS.values():
        models = site_seeds("counting", **settings)
        assert [model.config.seed for model in models] == list(SEEDS)
        assert all(model.task == CountingTask(**settings) for model in models)


def test_mixed_lengths_without_a_start_token_fail_even_where_they_trained(counting_lengths):
    best_at_one_length = min(run[10] for run in counting_lengths["one length"])
    for run in counting_lengths["mixed lengths"]:
        assert max(run.values()) < 0.8, run  # at best a compromise in the middle
        assert max(run.values()) < best_at_one_length, run
        assert run[5] < 0.3 and run[20] < 0.3, run  # both ends of its training range
        assert max(run[2], run[3], run[15]) < 0.3, run  # "and wrong everywhere else"
        assert max(score for length, score in run.items() if length > 20) < 0.05, run
    # "Next to 10 tokens, at 8 and at 12, it does better than the one-length model on average,
    # though never on more than about half of the inputs"
    for length in (8, 12):
        mixed = [run[length] for run in counting_lengths["mixed lengths"]]
        one = [run[length] for run in counting_lengths["one length"]]
        assert sum(mixed) / len(mixed) > sum(one) / len(one), length
        assert max(mixed) < 0.55, length


def test_a_start_token_at_one_length_counts_from_5_to_10_and_below_in_some_seed(counting_lengths):
    runs = counting_lengths["one length, start token"]
    for run in runs:
        assert min(score for length, score in run.items() if 5 <= length <= 10) >= 0.99, run
        assert min(run[12], run[15]) >= 0.95, run  # "stays good for a few tokens beyond 10"
        assert run[40] < 0.5, run
    # at 2 and 3 tokens, never seen, at least one seed is right, "but not every seed": on every
    # set of models so far at least one missed many (retrained with other rounding, two did)
    assert max(min(run[2], run[3]) for run in runs) >= 0.99, runs
    assert min(min(run[2], run[3]) for run in runs) < 0.9, runs


def test_a_start_token_and_mixed_lengths_count_from_2_to_15_and_nearly_to_20(counting_lengths):
    for run in counting_lengths["mixed lengths, start token"]:
        assert min(score for length, score in run.items() if length <= 15) >= 0.98, run
        # at 20 about 1 % of the inputs hold a count above 10, which training rarely shows
        assert run[20] > 0.95, run
        assert run[40] < 0.5, run
    assert 0.005 < experiments.share_with_count_above(10, length=20, letters=3) < 0.02
    # and further beyond training than the start token trained at one length
    for mixed, one in zip(counting_lengths["mixed lengths, start token"],
                          counting_lengths["one length, start token"], strict=True):
        assert mixed[25] > one[25] and mixed[30] > one[30]


def test_a_balanced_loss_breaks_the_ceiling_but_costs_the_common_counts(by_count, exact):
    for result in by_count["learned, balanced loss"]:
        assert max(result["largest"]) >= 9
        assert result["accuracy"][9] >= 0.3  # "at least 30 % of the nines"
    # "at least one seed answers 10 and gets some tens right": most tens was one draw (0.68 of
    # them on the first models, 0.33 in a retraining with other rounding)
    assert any(max(result["largest"]) == 10 and result["accuracy"][10] >= 0.2
               for result in by_count["learned, balanced loss"])
    assert max(exact["learned, balanced loss"]) < 0.7  # far below the plain models' 99 %
    task = SignalTask()
    bound = float(multiset_bound(task.max_len, task.vocab_size))
    assert sum(exact["learned, balanced loss"]) / len(SEEDS) < bound


# --- the start-token models beyond their training: the counts, or the length ------------------

START_TOKEN = ("one length, start token", "mixed lengths, start token")


@pytest.fixture(scope="module")
def counts_or_length(site_models):
    for name in START_TOKEN:
        for model in site_seeds("counting", **COUNTING_LENGTH_VARIANTS[name]):
            site_models(model)  # trained (in parallel) before the experiment reads them
    results = experiments.counts_or_length_by_variant()
    lengths = experiments.COUNTING_LENGTHS[4:]
    return {name: [{key: dict(zip(lengths, values, strict=True)) if isinstance(values, list)
                    else values for key, values in result.items()} for result in results[name]]
            for name in START_TOKEN}


def test_the_conditioning_splits_the_figures_own_inputs(counts_or_length, counting_lengths):
    for name in START_TOKEN:
        for result, figure in zip(counts_or_length[name], counting_lengths[name], strict=True):
            for length, exact in result["exact"].items():
                assert exact == pytest.approx(figure[length]), (name, length)  # the same inputs
                small, right = result["small"][length], result["exact_small"][length]
                assert exact >= small * right - 1e-5  # right on the small ones is part of it
                assert exact <= small * right + (1 - small) + 1e-5


def test_mixed_lengths_with_a_start_token_fail_for_the_counts_alone(counts_or_length):
    for result in counts_or_length["mixed lengths, start token"]:
        assert result["largest_class"] == 20
        for length in (20, 25, 30, 35, 40):
            # at least 90 % right on the inputs whose counts stay at most 10 (nearly all in most
            # seeds; one seed retrained with other rounding fell to 96 % at 40 tokens)
            assert result["exact_small"][length] >= 0.9, (length, result)
            assert result["padded"][length] >= 0.99, (length, result)
            # so the overall fall follows the share of inputs whose counts stay at most 10
            assert abs(result["exact"][length] - result["small"][length]) <= 0.05, length
        assert max(result["largest"].values()) <= 11  # "no seed answers more than 11"
        # at 40 tokens almost every input has a class for each count, yet most are wrong
        assert result["has_class"][40] >= 0.99 and result["exact"][40] < 0.2


def test_one_length_with_a_start_token_fails_for_both(counts_or_length):
    results = counts_or_length["one length, start token"]
    for result in results:
        assert result["largest_class"] == 10  # an input with a count of 11 or more is wrong
        assert max(result["largest"].values()) <= 8  # never 9 or 10, at any length
        assert result["exact_small"][25] < 0.9  # wrong on some inputs with every count <= 10
        assert result["padded"][15] >= 0.95  # 10-token inputs padded to 15 stay right
    # the length alone: where it breaks the padded inputs is an outcome of the run (retrained
    # with other rounding, one seed lost them all by 25 tokens, another most): at 25 tokens at
    # least one seed keeps nearly all; by 40 tokens at least one seed gets most of them wrong,
    # and the seeds lie far apart (how far, and which seed, changes from one run to the next)
    assert max(result["padded"][25] for result in results) >= 0.95
    assert min(result["padded"][25] for result in results) < 0.5  # "another gets most wrong"
    padded = sorted(result["padded"][40] for result in results)
    assert padded[0] < 0.5 and padded[-1] - padded[0] > 0.25, padded


def test_training_rarely_shows_the_counts_the_models_never_give():
    one = experiments.share_with_count_above(8, length=10, letters=3)
    mixed = sum(experiments.share_with_count_above(10, length=length, letters=3)
                for length in range(5, 21)) / 16
    assert one < 1e-4 and mixed < 0.01
    assert experiments.share_with_count_above(10, length=10, letters=3) == 0.0
