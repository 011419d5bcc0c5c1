"""The claims of the chapter "Attention over images" about its trained patch readers and patch
encoders (with and without positions), three seeds each.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's tables.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attnprimer.site.catalogue import PAIR_VARIANTS, site_seeds
from attnprimer.site.experiments.attention_over_images import (
    cached_blanking_by_step,
    cached_reading,
    read,
)
from attnprimer.site.experiments.patch_tokens import (
    cached_distances,
    cached_half_shares,
    cached_pair_reading,
    patch_distances,
)
from attnprimer.site.figures.attention_over_images import example_canvas
from attnprimer.tasks.digit_reading import END


@pytest.fixture(scope="module")
def readers(site_models):
    return [site_models(model) for model in site_seeds("digit-reading")]


@pytest.fixture(scope="module")
def readings(readers):
    return [cached_reading(trained) for trained in readers]


def test_three_seeds(readers):
    assert [trained.config.seed for trained in readers] == [0, 1, 2]


def test_every_model_was_trained_to_its_plateau(readers):
    """The held-out exact match of the last fifth of training moved by under 5 points."""
    for trained in readers:
        curve = trained.history["held_out_exact_match"]
        last_fifth = curve[-max(2, len(curve) // 5):]
        assert max(last_fifth) - min(last_fifth) < 0.05, (trained.config.seed, curve)


def test_they_read_most_held_out_canvases_wholly_right(readings):
    # "The trained models read most held-out canvases wholly right"
    assert all(reading.exact_match > 0.5 for reading in readings), readings


def test_a_digit_step_puts_nearly_all_its_weight_on_its_digit(readings):
    # "a digit step puts nearly all of its weight on the patches of the digit it writes"
    assert all(reading.on_digit > 0.9 for reading in readings), readings


def test_the_example_maps_move_left_to_right_and_the_end_looks_nowhere_much(readers):
    # "Each step's weight moves to the next digit along, left to right ... the step that
    # writes "end" spreads its weight thinly": the example canvas, in every trained model
    for trained in readers:
        image, _ = example_canvas(trained)
        predictions, weights = read(trained, image[None])
        cols = torch.arange(weights.shape[-1]) % (trained.task.width // trained.task.patch)
        centres = (weights[0, :4] * cols).sum(-1)  # the four digit steps' centres, in columns
        assert bool((centres[1:] > centres[:-1]).all()), (trained.config.seed, centres)
        assert predictions[0, 4] == END
        assert weights[0, 4].max() < 0.2, (trained.config.seed, weights[0, 4].max())


def test_blanking_what_a_step_looks_at_changes_its_digit_far_more_than_the_control(readings):
    # "Blanking the patches a step looks at changes the digit it writes far more often than
    # blanking as many other inked patches"
    for reading in readings:
        assert reading.blanked_changes > 0.5, reading
        assert reading.blanked_changes > 3 * reading.control_changes, reading


def test_a_moved_digit_is_still_read_and_the_map_follows_it(readings):
    # "A digit moved up or down is still read, and the map goes with it"
    for reading in readings:
        assert reading.moved_same > 0.8, reading
        assert reading.moved_follows > 0.8, reading


def test_swapped_digits_are_read_in_their_new_order(readings):
    # "Swapped digits are read in their new order"
    assert all(reading.swapped > 0.8 for reading in readings), readings


def test_blanking_at_every_digit_step_changes_that_digit_and_spares_the_earlier_ones(readers):
    # "Blank the patches holding 80 % of one later step's weight, and that step's digit changes
    # as often as the first step's did, while the digits before it are nearly always still read
    # as before ... The control, blanked at a later step, often hits an earlier digit"
    for trained in readers:
        steps = cached_blanking_by_step(trained)
        assert [step.step for step in steps] == [0, 1, 2, 3]
        assert steps[0].blanked_changes == cached_reading(trained).blanked_changes
        for step in steps:
            assert step.canvases >= 400, step  # enough canvases with a digit there
            assert step.blanked_changes >= steps[0].blanked_changes - 0.05, step
            assert step.blanked_changes > 3 * step.control_changes, step
            assert step.blanked_kept > 0.95, step
        for step in steps[1:]:
            assert step.control_kept < step.blanked_kept - 0.15, step


# --- Patches as tokens: the patch encoder with a class token, with and without positions ---


@pytest.fixture(scope="module")
def encoders(site_models):
    return {variant: [site_models(model) for model in site_seeds("digit-pair", **settings)]
            for variant, settings in PAIR_VARIANTS.items()}


@pytest.fixture(scope="module")
def pairs(encoders):
    return {variant: [cached_pair_reading(trained) for trained in models]
            for variant, models in encoders.items()}


def test_three_seeds_of_each_encoder_differing_only_in_the_positions(encoders):
    assert all([t.config.seed for t in models] == [0, 1, 2] for models in encoders.values())
    for with_, without in zip(encoders["with"], encoders["without"], strict=True):
        assert with_.config == without.config
        assert replace(with_.task, position=False) == without.task


def test_every_encoder_was_trained_to_its_plateau(encoders):
    """The held-out exact match of the last fifth of training moved by under 5 points."""
    for models in encoders.values():
        for trained in models:
            curve = trained.history["held_out_exact_match"]
            last_fifth = curve[-max(2, len(curve) // 5):]
            assert max(last_fifth) - min(last_fifth) < 0.05, (trained.config.seed, curve)


def test_with_positions_most_pairs_are_named_in_order_without_few(pairs):
    # "With positions, the trained models name both digits in order on about nine held-out
    # canvases in ten ... [without] right on about one canvas in seven"
    assert all(reading.exact_match > 0.85 for reading in pairs["with"]), pairs["with"]
    assert all(0.1 < reading.exact_match < 0.2 for reading in pairs["without"]), pairs["without"]


def test_without_positions_the_swap_changes_nothing_so_one_order_is_wrong(pairs):
    # "Without positions, the swapped canvas gets the same answer as the canvas, every logit
    # equal up to float rounding": the same set of patches (permutation invariance), so when
    # the digits differ one of the two orders is wrong
    for reading in pairs["without"]:
        assert reading.swap_unchanged == 1.0, reading
        assert reading.swap_largest_change < 1e-4, reading  # summed in another order
        assert reading.wrong_on_one_order == 1.0, reading


def test_with_positions_the_answer_follows_the_swap(pairs):
    # "when the halves are swapped their answer follows the swap more than nine times in ten"
    assert all(reading.swap_follows > 0.9 for reading in pairs["with"]), pairs["with"]


def test_without_positions_the_digits_are_not_even_recognised_in_either_order(pairs):
    # "That is worse than guessing the order: they do not even name the two digits in either
    # order on most canvases"
    assert all(reading.either_order < 0.3 for reading in pairs["without"]), pairs["without"]
    assert all(reading.either_order < 0.3 * with_.either_order
               for reading, with_ in zip(pairs["without"], pairs["with"], strict=True))


def test_with_positions_some_class_token_heads_read_one_half_each(encoders):
    # "Each trained model with positions has a head that puts at least 90 % of the class
    # token's weight on the left half, and another that puts at least 90 % on the right half.
    # Without positions, every head splits its weight between the halves about evenly"
    for trained in encoders["with"]:
        halves = cached_half_shares(trained)
        shares = [share for layer in halves["left"] for share in layer]
        rights = [share for layer in halves["right"] for share in layer]
        assert max(shares) >= 0.9 and max(rights) >= 0.9, (trained.config.seed, shares, rights)
    for trained in encoders["without"]:
        shares = [share for layer in cached_half_shares(trained)["left"] for share in layer]
        assert all(0.4 <= share <= 0.6 for share in shares), (trained.config.seed, shares)


def test_layer_two_heads_look_farther_than_layer_one_heads_on_average(encoders):
    # "In all six models, the heads of layer 2 look farther on average than those of layer 1"
    for models in encoders.values():
        for trained in models:
            first, second = cached_distances(trained)
            assert sum(second) / len(second) > sum(first) / len(first), (trained.config.seed,
                                                                           first, second)


def test_a_short_attention_distance_does_not_need_positions(encoders):
    # "the models without positions also have heads in layer 1 that look nearer than even
    # weights would" (by a pixel or more)
    task = encoders["without"][0].task
    even = patch_distances(task.height // task.patch, task.width // task.patch,
                           task.patch).mean().item()
    for trained in encoders["without"]:
        first, _ = cached_distances(trained)
        assert min(first) < even - 1.0, (trained.config.seed, first, even)

