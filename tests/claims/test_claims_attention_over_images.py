"""The claims of the chapter "Attention over images" about its trained patch readers, three seeds.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's tables.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.catalogue import site_seeds
from attnprimer.site.experiments.attention_over_images import (
    cached_blanking_by_step,
    cached_reading,
    read,
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
