"""The plain-text report that ``attnprimer test`` prints and the site shows."""

from __future__ import annotations

import ast
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer.site.report import attended_mainly, attention_report
from attnprimer.tasks import CountingTask

# --- attended_mainly ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "weights, expected",
    [
        ([0.0, 0.0, 1.0, 0.0], [2]),  # one-hot: only that step
        ([0.25, 0.25, 0.25, 0.25], [0, 1, 2, 3]),  # uniform: every step
        ([0.5, 0.25, 0.25], [0, 1, 2]),  # exactly half the largest still counts
        ([0.5, 0.2, 0.3], [0, 2]),
        ([0.1, 0.6, 0.3], [1, 2]),
        ([0.4, 0.1, 0.1, 0.4], [0, 3]),  # ties
        ([0.05, 0.05, 0.9], [2]),
        ([1.0], [0]),
    ],
)
def test_attended_mainly_examples(weights, expected):
    assert attended_mainly(torch.tensor(weights)) == expected


def test_attended_mainly_returns_plain_ints():
    result = attended_mainly(torch.tensor([0.4, 0.6], dtype=torch.float64))
    assert result == [0, 1]
    assert all(type(step) is int for step in result)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=20)
       .filter(lambda values: max(values) > 0))
def test_attended_mainly_keeps_the_peak_and_drops_the_background(values):
    weights = torch.tensor(values, dtype=torch.float64)
    weights = weights / weights.sum()  # a row of attention weights
    steps = attended_mainly(weights)
    assert steps == sorted(set(steps))
    assert int(weights.argmax()) in steps
    largest = float(weights.max())
    for step, weight in enumerate(weights.tolist()):
        assert (step in steps) == (weight >= largest / 2)


# --- attention_report --------------------------------------------------------------------------

TASK = CountingTask(max_len=6, vocab_size=3)
TOKENS = TASK.encode("AB CA")  # A B _ C A _
WEIGHTS = torch.tensor([
    [0.41234, 0.01111, 0.02222, 0.03333, 0.40006, 0.12094],
    [0.05, 0.6789, 0.05, 0.05, 0.05, 0.1211],
    [0.16666, 0.16667, 0.16667, 0.16667, 0.16666, 0.16667],
])


def report(prediction=(2, 1, 1), target=None, attention=None) -> str:
    return attention_report(
        TASK, TOKENS, torch.tensor(prediction),
        {"encoder-decoder": WEIGHTS} if attention is None else attention,
        None if target is None else torch.tensor(target),
    )


def line_starting(text: str, prefix: str) -> str:
    matches = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(matches) == 1, (prefix, text)
    return matches[0]


def test_report_shows_the_input():
    text = report()
    assert line_starting(text, "Input:").split()[1:] == ["A", "B", "_", "C", "A", "_"]
    steps_line = text.splitlines()[1]
    assert steps_line.split() == ["0", "1", "2", "3", "4", "5", "(step)"]


def test_report_aligns_long_inputs():
    task = CountingTask(max_len=12, vocab_size=3)
    text = attention_report(task, task.encode("ABCABCABCABC"), torch.tensor([4, 4, 4]),
                            {"encoder-decoder": torch.full((3, 12), 1 / 12)})
    input_line, steps_line = text.splitlines()[:2]
    assert steps_line.split()[-3:] == ["10", "11", "(step)"]
    # Each letter sits right above the last digit of its step number.
    letter_columns = [column for column, char in enumerate(input_line) if char in "ABC"]
    digit_columns = [match.end() - 1 for match in re.finditer(r"\d+", steps_line)]
    assert len(letter_columns) == 12
    assert letter_columns == digit_columns


def test_report_shows_the_prediction():
    prediction_line = line_starting(report(prediction=(2, 1, 3)), "Prediction:")
    assert prediction_line.split()[1:] == ["A=2", "B=1", "C=3"]


def test_report_shows_each_output_steps_weights_to_3_decimals():
    lines = report().splitlines()
    for step, (label, row) in enumerate(zip("ABC", WEIGHTS, strict=True)):
        header = f"Output step {step} ({label}) attended mainly to input steps"
        index = next(i for i, line in enumerate(lines) if line.startswith(header))
        assert lines[index].endswith(str(attended_mainly(row)))
        shown = ast.literal_eval(lines[index + 1].strip())
        assert len(shown) == TASK.max_len
        torch.testing.assert_close(torch.tensor(shown), row, atol=5e-4, rtol=0)
        for text in lines[index + 1].strip(" []").split(","):
            assert len(text.strip().split(".")[1]) <= 3, text


def test_report_rounds_rather_than_truncates():
    text = report()
    assert "0.412" in text and "0.400" not in text and "0.4," in text  # 0.40006 -> 0.4
    assert "0.679" in text  # 0.6789, not 0.678
    assert "0.167" in text  # 0.16666 and 0.16667 alike
    assert "0.121" in text  # 0.12094 and 0.1211 alike


def test_report_names_where_each_step_looked():
    text = report()
    assert "Output step 0 (A) attended mainly to input steps [0, 4]" in text
    assert "Output step 1 (B) attended mainly to input steps [1]" in text
    assert "Output step 2 (C) attended mainly to input steps [0, 1, 2, 3, 4, 5]" in text


def test_report_names_the_attention():
    text = report()
    assert "Encoder-decoder attention:" in text
    self_weights = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.05, 0.5, 0.45]])
    both = report(attention={"encoder-decoder": WEIGHTS, "self": self_weights})
    assert "Encoder-decoder attention:" in both
    assert "Self-attention over the output steps:" in both
    assert both.count("Output step 0 (A)") == 2
    # Self-attention reads output steps, and says so.
    assert "Output step 2 (C) attended mainly to output steps [1, 2]" in both
    assert "  [0.05, 0.5, 0.45]" in both


def test_report_names_unknown_attention_kinds_generically():
    text = report(attention={"memory": WEIGHTS})
    assert "Memory attention:" in text
    assert "Output step 0 (A) attended mainly to steps [0, 4]" in text


@pytest.mark.parametrize("target, verdict", [((2, 1, 1), "all correct"), ((2, 1, 2), "WRONG")])
def test_report_compares_with_the_target(target, verdict):
    target_line = line_starting(report(target=target), "Target:")
    assert target_line.split()[1:4] == [f"{label}={value}"
                                        for label, value in zip("ABC", target, strict=True)]
    assert target_line.endswith(f"({verdict})")
    other = "WRONG" if verdict == "all correct" else "all correct"
    assert other not in report(target=target)


def test_report_without_target_has_no_target_line():
    assert "Target" not in report()


def test_report_rejects_a_prediction_of_the_wrong_length():
    with pytest.raises(ValueError):
        report(prediction=(1, 2))


def test_report_labels_encoder_self_attention_rows_by_input_step():
    from attnprimer.tasks import SignalTask

    task = SignalTask(max_len=3)
    tokens = task.encode("ABAB")
    weights = torch.tensor([[0.7, 0.1, 0.1, 0.1]] * 4)
    text = attention_report(task, tokens, torch.tensor([1]),
                            {"encoder self": weights, "encoder-decoder": weights[:1]})
    assert "Encoder self-attention over the input:" in text
    assert "Input step 2 (A) attended mainly to input steps [0]" in text
    assert "Output step 0 (count) attended mainly to input steps [0]" in text


def test_a_long_list_of_steps_is_shortened_to_fit_80_columns():
    weights = torch.full((1, 40), 1 / 40)  # every step counts: 40 of them
    task = CountingTask(max_len=40, vocab_size=2)
    text = attention_report(task, task.encode("AB" * 20), torch.tensor([20, 20]),
                            {"encoder-decoder": weights})
    line = next(line for line in text.splitlines() if "attended mainly" in line)
    assert line.endswith("[0, ..., 39]") and len(line) <= 80
    assert "attended mainly to input steps [0, 4]" in report()  # short lists stay whole
