"""The attention-at-scale lab's exercise: registered and faithful to the package
(its known mistakes are checked with every exercise's, in tests/test_exercises.py)."""

from __future__ import annotations

import torch

from attnprimer.online_softmax import RunningAverage, finish
from attnprimer.site.exercises import EXERCISES, diagnose
from attnprimer.site.exercises.attention_at_scale import ONLINE_STEP, online_step


def test_registered_for_check_by_name():
    assert EXERCISES["online_step"] is ONLINE_STEP


def test_the_reference_folds_blocks_into_the_softmax_average():
    generator = torch.Generator().manual_seed(0)
    scores = 4 * torch.randn(3, 10, generator=generator)  # (R, S)
    values = torch.randn(10, 2, generator=generator)  # (S, Dv)
    state = (torch.full((3, 1), -torch.inf), torch.zeros(3, 1), torch.zeros(3, 2))
    for begin in range(0, 10, 4):
        state = online_step(*state, scores[:, begin:begin + 4], values[begin:begin + 4])
    average, _ = finish(RunningAverage(*state))
    torch.testing.assert_close(average, torch.softmax(scores, -1) @ values)


def test_the_cases_grow_and_shrink_the_maximum():
    """Every rescale mistake shows: some rows' maximum grows in the block, some do not."""
    grows = [(case.arguments["scores"].amax(-1, keepdim=True) > case.arguments["maximum"])
             for case in ONLINE_STEP.cases()[1:]]
    assert any(bool(g.any()) for g in grows) and any(bool((~g).any()) for g in grows)


def test_a_wrong_answer_fails_without_naming_a_mistake():
    def wrong(*arguments):
        return tuple(output * 0 for output in online_step(*arguments))

    message = diagnose("online_step", wrong)
    assert message.startswith("✗ online_step")
    assert "known mistake" not in message


def test_the_nans_of_an_upside_down_rescale_are_explained():
    """A fresh state (maximum -inf, sum 0) rescaled by exp(new - maximum) gives exp(inf) * 0:
    the message names that cause beside the fully masked softmax row."""
    [upside_down] = [mistake.function for mistake in ONLINE_STEP.mistakes
                     if "upside down" in mistake.explanation]
    message = " ".join(diagnose("online_step", upside_down).split())  # lines unfolded
    assert "entries are NaN" in message and "exp() of an infinite difference" in message
    assert "known mistake" in message
