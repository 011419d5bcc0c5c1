"""The exercise checker: it passes the references, and says precisely what is wrong otherwise."""

from __future__ import annotations

import re

import pytest
import torch
from torch.nn import functional as F

from attnprimer.positional import sinusoidal_encoding
from attnprimer.site.exercises import EXERCISES, ExerciseError, check
from attnprimer.site.exercises import diagnose as _diagnose
from attnprimer.site.exercises.qkv import reference_attention

NAMES = sorted(EXERCISES)


def _flat(message: str) -> str:
    """The message with its line folding undone (long lines are folded at 78 columns)."""
    return " ".join(message.split())


def diagnose(name, function) -> str:
    return _flat(_diagnose(name, function))


def test_the_labs_exercises_are_all_there():
    assert set(NAMES) == {"additive_attention", "scaled_dot_product_attention", "causal_mask",
                          "split_heads", "merge_heads", "sinusoidal_encoding", "encoder_block",
                          "decoder_mask", "online_step", "causal_average", "patchify",
                          "induction_score"}


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes(name):
    passed = check(name, EXERCISES[name].reference)
    cases = len(EXERCISES[name].cases())
    assert repr(passed) == f"✓ {name} matches the reference on {cases} cases."


@pytest.mark.parametrize("name", NAMES)
def test_every_case_is_seeded(name):
    first, second = EXERCISES[name].cases(), EXERCISES[name].cases()
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a.arguments.values(), b.arguments.values(), strict=True):
            assert _same_argument(x, y)


def _same_argument(x, y) -> bool:
    """Tensors by value, modules (the encoder block) by their weights, the rest by ==."""
    if isinstance(x, torch.Tensor):
        return torch.equal(x, y)
    if isinstance(x, torch.nn.Module):
        mine, theirs = x.state_dict(), y.state_dict()
        return mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    return x == y


@pytest.mark.parametrize(("name", "index"), [
    (name, index) for name in NAMES for index in range(len(EXERCISES[name].mistakes))
])
def test_each_known_mistake_fails_and_is_named(name, index):
    mistake = EXERCISES[name].mistakes[index]
    with pytest.raises(ExerciseError) as raised:
        check(name, mistake.function)
    message = _flat(str(raised.value))
    assert message.startswith(f"✗ {name}")
    assert f"This looks like a known mistake: {_flat(mistake.explanation)}" in message
    others = [_flat(other.explanation)
              for other in EXERCISES[name].mistakes if other is not mistake]
    assert not any(other in message for other in others)  # exactly one mistake named


def test_a_stub_is_reported_as_not_written_yet():
    def scaled_dot_product_attention(query, key, value, mask=None):
        raise NotImplementedError

    message = diagnose("scaled_dot_product_attention", scaled_dot_product_attention)
    assert message.startswith("✗ scaled_dot_product_attention is not written yet")


def test_a_wrong_shape_names_the_output_both_shapes_and_the_legend():
    def transposed(query, key, value, mask=None):
        context, weights = reference_attention(query, key, value, mask)
        return context, weights.transpose(-2, -1)

    message = diagnose("scaled_dot_product_attention", transposed)
    # the first case: query (1, 4), key (3, 4) -> weights (1, 3)
    assert "weights has shape (3, 1); expected (1, 3), that is (..., L, S)" in message
    assert "for query (1, 4), key (3, 4), value (3, 2) and no mask" in message
    assert "a transpose missing" in message


def test_wrong_values_give_the_count_the_worst_entry_and_both_values():
    def off_by_one_entry(length, dim):
        encoding = sinusoidal_encoding(length, dim)
        if length == 4:
            encoding[2, 3] += 0.5
        return encoding

    message = diagnose("sinusoidal_encoding", off_by_one_entry)
    reference = sinusoidal_encoding(4, 6)[2, 3].item()
    assert "1 of 24 entries differ from the reference, for length = 4 and dim = 6." in message
    expected = f"at [2, 3]: yours {reference + 0.5:.6g}, reference {reference:.6g} (off by 0.5)"
    assert expected in message


def test_a_constant_factor_is_pointed_out():
    def doubled(length, dim):
        return 2 * sinusoidal_encoding(length, dim)

    assert "Every entry is 2 × the reference" in diagnose("sinusoidal_encoding", doubled)


def test_wrong_boolean_entries_are_listed_by_kind():
    def one_more(length):
        mask = torch.ones(length, length, dtype=torch.bool).tril()
        mask[0, -1] = True
        return mask

    message = diagnose("causal_mask", one_more)
    assert "1 of 4 entries differ" in message  # length 2 is the first case that differs
    assert "False in the reference, True in yours at [0, 1]" in message
    assert "known mistake" not in message


def test_nans_are_explained():
    def nan_rows(query, key, value, mask=None):
        scores = query @ key.transpose(-2, -1) / query.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        weights = weights.masked_fill(weights < 0.01, float("nan"))
        return weights @ value, weights

    message = diagnose("scaled_dot_product_attention", nan_rows)
    assert re.search(r"\d+ of \d+ entries are NaN", message)


def test_wrong_dtypes_and_types_say_what_was_expected():
    assert "dtype torch.float32; expected torch.bool" in diagnose(
        "causal_mask", lambda length: torch.ones(length, length).tril())
    assert "expected torch.float32" in diagnose(
        "sinusoidal_encoding",
        lambda length, dim: sinusoidal_encoding(length, dim).double())
    assert "should be a torch.Tensor; it is a list" in diagnose(
        "causal_mask", lambda length: [[True]])
    assert "should return a tuple (context, weights); it returned a Tensor" in diagnose(
        "scaled_dot_product_attention",
        lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v, mask))


def test_an_additive_float_mask_is_named_as_such_not_as_a_flipped_boolean_one():
    # -inf above the diagonal cast to bool is True there: the old checker then named the
    # "True marks the blocked keys" mistake, which is not what the reader wrote
    message = diagnose("causal_mask",
                       lambda length: torch.full((length, length), float("-inf")).triu(1))
    assert "dtype torch.float32; expected torch.bool" in message
    assert "additive mask" in message
    assert "known mistake" not in message


def test_an_exception_is_reported_with_the_case_and_a_hint_for_view():
    def merge_with_view(x):
        batch, heads, length, head_dim = x.shape
        return x.transpose(1, 2).view(batch, length, heads * head_dim)

    message = diagnose("merge_heads", merge_with_view)
    assert message.startswith("✗ merge_heads raised RuntimeError")
    assert "when called with x (2, 3, 4, 5)" in message
    assert "use `.reshape`" in message


def test_changing_an_input_in_place_is_caught():
    def in_place(query, key, value, mask=None):
        query /= query.shape[-1] ** 0.5  # scales the caller's tensor
        weights = torch.softmax(query @ key.transpose(-2, -1), dim=-1)
        return weights @ value, weights

    assert "changed its input query in place" in diagnose("scaled_dot_product_attention", in_place)


def test_a_right_answer_written_differently_passes():
    # PyTorch's fused kernel for the context, our weights: equal within the tolerance.
    def fused(query, key, value, mask=None):
        context = F.scaled_dot_product_attention(query, key, value, mask)
        return context, reference_attention(query, key, value, mask)[1]

    assert repr(check("scaled_dot_product_attention", fused)).startswith("✓")


def test_ipython_shows_the_message_not_a_traceback():
    error = ExerciseError("✗ first line\n  second line")
    assert error._render_traceback_() == ["✗ first line", "  second line"]


def test_an_unknown_exercise_lists_the_known_ones():
    with pytest.raises(KeyError, match="causal_mask"):
        check("softmax", lambda x: x)


def test_long_lines_are_folded_for_a_notebook_and_keep_their_indent():
    mistake = EXERCISES["sinusoidal_encoding"].mistakes[0]
    message = _diagnose("sinusoidal_encoding", mistake.function)
    lines = message.splitlines()
    assert max(len(line) for line in lines) <= 78  # a notebook output area, unscrolled
    hint = next(index for index, line in enumerate(lines) if "known mistake" in line)
    assert lines[hint].startswith("  This") and lines[hint + 1].startswith("    ")
