"""The length-generalisation lab's exercise: registered and faithful to the package
(its known mistakes are checked with every exercise's, in tests/test_exercises.py)."""

from __future__ import annotations

import torch

from attnprimer.position_schemes import nope_position_signal
from attnprimer.site.exercises import EXERCISES, diagnose
from attnprimer.site.exercises.length_generalisation import CAUSAL_AVERAGE, causal_average


def test_registered_for_check_by_name():
    assert EXERCISES["causal_average"] is CAUSAL_AVERAGE


def test_the_reference_is_the_running_mean_and_gives_the_nope_signal():
    values = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    expected = torch.stack([values[:i + 1].mean(dim=0) for i in range(6)])
    torch.testing.assert_close(causal_average(values), expected)
    start = torch.zeros(6, 1)
    start[0] = 1.0
    torch.testing.assert_close(causal_average(start)[:, 0], nope_position_signal(6))


def test_a_wrong_answer_fails_without_naming_a_mistake():
    message = diagnose("causal_average", lambda values: causal_average(values) + 1)
    assert message.startswith("✗ causal_average")
    assert "known mistake" not in message
