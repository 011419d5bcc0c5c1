"""The length-generalisation lab's exercise: registered, faithful to the package, mistakes named."""

from __future__ import annotations

import pytest
import torch

from attnprimer.exercises import EXERCISES, ExerciseError, check, diagnose
from attnprimer.exercises_length_generalisation import CAUSAL_AVERAGE, causal_average
from attnprimer.position_schemes import nope_position_signal


def _flat(message: str) -> str:
    return " ".join(message.split())


def test_registered_for_check_by_name():
    assert EXERCISES["causal_average"] is CAUSAL_AVERAGE


def test_the_reference_is_the_running_mean_and_gives_the_nope_signal():
    values = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    expected = torch.stack([values[:i + 1].mean(dim=0) for i in range(6)])
    torch.testing.assert_close(causal_average(values), expected)
    start = torch.zeros(6, 1)
    start[0] = 1.0
    torch.testing.assert_close(causal_average(start)[:, 0], nope_position_signal(6))


@pytest.mark.parametrize("index", range(len(CAUSAL_AVERAGE.mistakes)))
def test_each_mistake_fails_and_is_named(index):
    mistake = CAUSAL_AVERAGE.mistakes[index]
    with pytest.raises(ExerciseError):
        check("causal_average", mistake.function)
    message = _flat(diagnose("causal_average", mistake.function))
    assert _flat(mistake.explanation) in message
    for other in CAUSAL_AVERAGE.mistakes[:index]:  # named as itself, not as an earlier mistake
        assert _flat(other.explanation) not in message


def test_a_wrong_answer_fails_without_naming_a_mistake():
    message = diagnose("causal_average", lambda values: causal_average(values) + 1)
    assert message.startswith("✗ causal_average")
    assert "known mistake" not in message
