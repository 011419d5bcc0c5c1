"""The induction-heads lab's exercise: registered and faithful to the package (its known
mistakes are checked with every exercise's, in tests/test_exercises.py)."""

from __future__ import annotations

import torch

from attnprimer.site.exercises import EXERCISES, diagnose
from attnprimer.site.exercises.induction_heads import INDUCTION_SCORE, induction_score


def test_registered_for_check_by_name():
    assert EXERCISES["induction_score"] is INDUCTION_SCORE


def test_a_head_that_looks_at_the_next_letter_scores_one():
    """The segment (3 letters) at 1 and 5: queries 5 and 6 look at 2 and 3."""
    weights = torch.zeros(1, 7, 7)
    weights[0, torch.arange(7), torch.arange(7)] = 1.0
    weights[0, 5] = 0
    weights[0, 6] = 0
    weights[0, 5, 2] = weights[0, 6, 3] = 1.0
    score = induction_score(weights, torch.tensor([1]), torch.tensor([5]), torch.tensor([3]))
    assert float(score) == 1.0


def test_a_wrong_answer_fails_without_naming_a_mistake():
    def doubled(weights, first, repeat, length):
        return 2 * induction_score(weights, first, repeat, length)
    message = diagnose("induction_score", doubled)
    assert message.startswith("✗ induction_score")
    assert "known mistake" not in message
