"""The toy tasks: sampling, targets, encoding, and settings checks."""

from __future__ import annotations

import string
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprimer.tasks import BLANK, TASKS, CountingTask, Task, get_task


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- sampling ----------------------------------------------------------------------------------


def test_sample_is_deterministic_for_a_seeded_generator():
    task = CountingTask()
    first = task.sample(32, seeded(7))
    second = task.sample(32, seeded(7))
    assert torch.equal(first.inputs, second.inputs)
    assert torch.equal(first.targets, second.targets)


def test_sample_differs_across_seeds():
    task = CountingTask()
    batches = [task.sample(32, seeded(seed)).inputs for seed in range(4)]
    for i in range(len(batches)):
        for j in range(i + 1, len(batches)):
            assert not torch.equal(batches[i], batches[j]), (i, j)


def test_sample_advances_the_generator():
    task = CountingTask()
    stream = seeded(3)
    assert not torch.equal(task.sample(16, stream).inputs, task.sample(16, stream).inputs)


def test_sample_does_not_touch_the_global_generator():
    task = CountingTask()
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    task.sample(8, seeded(1))
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("max_len, vocab_size", [(10, 3), (5, 1), (7, 6)])
def test_sample_shapes_and_token_range(max_len, vocab_size):
    task = CountingTask(max_len=max_len, vocab_size=vocab_size)
    batch = task.sample(200, seeded(0))
    assert batch.inputs.shape == (200, max_len)
    assert batch.targets.shape == (200, vocab_size)
    assert batch.inputs.min() >= 0 and batch.inputs.max() <= vocab_size
    # With 200 x max_len draws every token (blank included) shows up.
    assert set(batch.inputs.unique().tolist()) == set(range(vocab_size + 1))
    assert batch.targets.min() >= 0
    assert batch.targets.max() < task.num_classes


@pytest.mark.parametrize("max_len, vocab_size", [(10, 3), (6, 2), (12, 5)])
def test_targets_are_the_letter_counts(max_len, vocab_size):
    task = CountingTask(max_len=max_len, vocab_size=vocab_size)
    batch = task.sample(64, seeded(11))
    letters = string.ascii_uppercase[:vocab_size]
    for tokens, target in zip(batch.inputs, batch.targets, strict=True):
        counts = Counter(task.decode(tokens))
        assert target.tolist() == [counts[letter] for letter in letters]


def test_targets_for_matches_sample_targets():
    task = CountingTask()
    batch = task.sample(50, seeded(5))
    assert torch.equal(task.targets_for(batch.inputs), batch.targets)


def test_targets_for_a_hand_written_input():
    task = CountingTask(max_len=8, vocab_size=3)
    tokens = task.encode("CAB CC A")  # A twice, B once, C three times, two blanks
    assert task.targets_for(tokens[None]).tolist() == [[2, 1, 3]]


# --- the blank ---------------------------------------------------------------------------------


def test_token_zero_is_the_blank():
    task = CountingTask(max_len=4, vocab_size=3)
    assert BLANK == " "
    assert task.alphabet[0] == BLANK
    assert task.alphabet[1:] == "ABC"
    assert task.decode(torch.zeros(4, dtype=torch.long)) == BLANK * 4
    assert task.encode(BLANK * 4).tolist() == [0, 0, 0, 0]
    assert task.encode("A").tolist() == [1, 0, 0, 0]


def test_blanks_are_not_counted():
    task = CountingTask(max_len=6, vocab_size=3)
    assert task.targets_for(task.encode("")[None]).tolist() == [[0, 0, 0]]
    assert task.targets_for(task.encode("   B  ")[None]).tolist() == [[0, 1, 0]]


def test_num_classes_and_output_labels():
    task = CountingTask(max_len=7, vocab_size=4)
    assert task.num_classes == 8  # counts 0..7
    assert task.output_labels() == ["A", "B", "C", "D"]


# --- encode / decode ---------------------------------------------------------------------------


def test_encode_pads_with_blanks_to_max_len():
    task = CountingTask(max_len=10, vocab_size=3)
    tokens = task.encode("AB")
    assert tokens.shape == (10,)
    assert tokens[:2].tolist() == [1, 2]
    assert tokens[2:].tolist() == [0] * 8
    assert task.decode(tokens) == "AB" + BLANK * 8


def test_encode_accepts_exactly_max_len():
    task = CountingTask(max_len=5, vocab_size=3)
    assert task.encode("CBACB").tolist() == [3, 2, 1, 3, 2]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_decode_encode_round_trip(data):
    max_len = data.draw(st.integers(1, 12), label="max_len")
    vocab_size = data.draw(st.integers(1, 26), label="vocab_size")
    task = CountingTask(max_len=max_len, vocab_size=vocab_size)
    alphabet = BLANK + string.ascii_uppercase[:vocab_size]
    text = data.draw(st.text(alphabet=alphabet, max_size=max_len), label="text")
    tokens = task.encode(text)
    assert tokens.shape == (max_len,)
    assert task.decode(tokens) == text + BLANK * (max_len - len(text))
    assert torch.equal(task.encode(task.decode(tokens)), tokens)


def test_encode_decode_round_trip_on_sampled_tokens():
    task = CountingTask(max_len=9, vocab_size=5)
    for tokens in task.sample(20, seeded(2)).inputs:
        assert torch.equal(task.encode(task.decode(tokens)), tokens)


@pytest.mark.parametrize("text", ["ABD", "abc", "A-B", "A1", "AB\tC", "É"])
def test_encode_rejects_unknown_letters(text):
    task = CountingTask(max_len=10, vocab_size=3)
    with pytest.raises(ValueError, match="input may only use"):
        task.encode(text)


def test_encode_rejects_too_long_input():
    task = CountingTask(max_len=4, vocab_size=3)
    with pytest.raises(ValueError, match="max_len"):
        task.encode("AAAAA")
    with pytest.raises(ValueError, match="max_len"):
        task.encode("     ")  # blanks count towards the length too


# --- the registry and settings -----------------------------------------------------------------


def test_get_task_builds_a_task_with_settings():
    task = get_task("counting", max_len=6, hidden=16)
    assert isinstance(task, CountingTask)
    assert (task.max_len, task.vocab_size, task.hidden) == (6, 3, 16)
    assert TASKS["counting"] is CountingTask
    assert all(issubclass(task_class, Task) for task_class in TASKS.values())


@pytest.mark.parametrize("name", ["sorting", "", "Counting", "count"])
def test_get_task_rejects_unknown_names(name):
    with pytest.raises(ValueError, match="unknown task"):
        get_task(name)


def test_get_task_rejects_unknown_settings():
    with pytest.raises(TypeError):
        get_task("counting", width=3)


@pytest.mark.parametrize("setting", ["max_len", "vocab_size", "hidden"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_settings_raise(setting, value):
    with pytest.raises(ValueError, match=setting):
        CountingTask(**{setting: value})
    with pytest.raises(ValueError, match=setting):
        get_task("counting", **{setting: value})


def test_vocab_size_beyond_the_alphabet_raises():
    assert CountingTask(vocab_size=26).alphabet[-1] == "Z"
    with pytest.raises(ValueError, match="vocab_size"):
        CountingTask(vocab_size=27)


def test_tasks_are_frozen_and_hashable():
    task = CountingTask()
    with pytest.raises(AttributeError):
        task.max_len = 3  # type: ignore[misc]
    assert task == CountingTask(max_len=10, vocab_size=3, hidden=64)
    assert hash(task) == hash(CountingTask())


def test_build_model_matches_the_settings():
    task = CountingTask(max_len=6, vocab_size=4, hidden=12)
    torch.manual_seed(0)
    model = task.build_model()
    output = model(task.sample(5, seeded(0)).inputs)
    assert output.logits.shape == (5, 4, task.num_classes)
    assert output.attention["encoder-decoder"].shape == (5, 4, 6)


# --- the difference task ---------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(2, 5), st.integers(0, 2**31 - 1))
def test_difference_targets_are_counts_then_the_first_two_counts_apart(max_len, vocab_size, seed):
    from attnprimer.tasks import DifferenceTask

    task = DifferenceTask(max_len=max_len, vocab_size=vocab_size)
    batch = task.sample(8, seeded(seed))
    assert batch.targets.shape == (8, vocab_size + 1)
    for tokens, target in zip(batch.inputs, batch.targets, strict=True):
        counts = Counter(task.decode(tokens))
        letters = task.alphabet[1:]
        expected = [counts[letter] for letter in letters]
        expected.append(abs(counts[letters[0]] - counts[letters[1]]))
        assert target.tolist() == expected
        assert 0 <= int(target.max()) < task.num_classes


def test_difference_on_the_primer_example():
    from attnprimer.tasks import DifferenceTask

    task = DifferenceTask()
    assert task.targets_for(task.encode("BBBA ACABB")[None]).tolist() == [[3, 5, 1, 2]]
    assert task.targets_for(task.encode("A AABC CB")[None]).tolist() == [[3, 2, 2, 1]]


def test_difference_output_labels_name_the_difference():
    from attnprimer.tasks import DifferenceTask

    assert DifferenceTask(vocab_size=2).output_labels() == ["A", "B", "|A-B|"]
    assert DifferenceTask(vocab_size=4).output_labels() == ["A", "B", "C", "D", "|A-B|"]


def test_difference_needs_two_letters_and_projections_need_self_attention():
    from attnprimer.tasks import DifferenceTask

    with pytest.raises(ValueError, match="vocab_size >= 2"):
        DifferenceTask(vocab_size=1)
    with pytest.raises(ValueError, match="projections needs self_att"):
        DifferenceTask(projections=True)
    assert DifferenceTask(self_att=True, projections=True).projections


@pytest.mark.parametrize("self_att, projections", [(False, False), (True, False), (True, True)])
def test_difference_builds_the_model_its_settings_ask_for(self_att, projections):
    from attnprimer.models.difference import DifferenceModel
    from attnprimer.tasks import DifferenceTask

    task = DifferenceTask(hidden=8, self_att=self_att, projections=projections)
    model = task.build_model()
    assert isinstance(model, DifferenceModel)
    assert (model.self_attention is not None) == self_att
    if self_att:
        assert model.self_attention.projections == projections
    output = model(task.sample(3, seeded(0)).inputs)
    assert output.logits.shape == (3, task.vocab_size + 1, task.num_classes)
    assert ("self" in output.attention) == self_att


def test_difference_is_registered_and_settings_round_trip():
    from dataclasses import asdict

    assert "difference" in TASKS
    task = get_task("difference", self_att=True, hidden=16)
    assert get_task("difference", **asdict(task)) == task


# --- the signal task -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_signal_targets_count_the_first_letter_in_the_rest(max_len, vocab_size, seed):
    from attnprimer.tasks import SignalTask

    task = SignalTask(max_len=max_len, vocab_size=vocab_size)
    batch = task.sample(8, seeded(seed))
    assert batch.inputs.shape == (8, max_len + 1)
    assert int(batch.inputs.min()) >= 1  # letters only: no blanks
    for tokens, target in zip(batch.inputs, batch.targets, strict=True):
        text = task.decode(tokens)
        assert target.tolist() == [text[1:].count(text[0])]


def test_signal_on_the_primer_example():
    from attnprimer.tasks import SignalTask

    task = SignalTask()
    assert task.targets_for(task.encode("BCACABBAACB")[None]).tolist() == [[3]]
    assert task.output_labels() == ["count"] and task.num_classes == 11


@pytest.mark.parametrize("text", ["BCA", "BCACABBAACBA", "BCACA BAACB", "BCACABBAACX"])
def test_signal_input_must_be_exactly_the_letters(text):
    from attnprimer.tasks import SignalTask

    with pytest.raises(ValueError):
        SignalTask().encode(text)


def test_signal_refuses_an_unknown_encoding():
    from attnprimer.tasks import SignalTask

    with pytest.raises(ValueError,
                       match="pos_enc must be one of none, learned, sinusoidal, rotary"):
        SignalTask(pos_enc="relative")


@pytest.mark.parametrize("encoding", ["none", "learned", "sinusoidal", "rotary"])
def test_signal_builds_its_encoding(encoding):
    from attnprimer.positional import LearnedEncoding, SinusoidalEncoding
    from attnprimer.tasks import SignalTask

    model = SignalTask(hidden=8, pos_enc=encoding).build_model()
    expected = {"none": type(None), "rotary": type(None), "learned": LearnedEncoding,
                "sinusoidal": SinusoidalEncoding}[encoding]
    assert isinstance(model.position, expected)
    assert model.encoder.rotary == (encoding == "rotary")


def test_multiset_bound_matches_a_simulation_of_the_best_guess():
    from attnprimer.tasks.signal import multiset_bound

    task_len, vocab = 6, 3
    generator = seeded(0)
    inputs = torch.randint(1, vocab + 1, (200_000, task_len + 1), generator=generator)
    counts = torch.nn.functional.one_hot(inputs, vocab + 1)[..., 1:].sum(1)  # (N, V)
    answers = (inputs[:, 1:] == inputs[:, :1]).sum(1)
    # The best guess from the multiset: the count - 1 shared by the most letters (weighted).
    score = torch.zeros(len(inputs), task_len + 1)
    for letter in range(vocab):
        present = counts[:, letter] > 0
        index = (counts[:, letter] - 1).clamp(min=0)
        score[present, index[present]] += counts[present, letter].float()
    simulated = (score.argmax(1) == answers).float().mean().item()
    assert simulated == pytest.approx(float(multiset_bound(task_len, vocab)), abs=0.005)


# --- the reversal task ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(6, 12), st.integers(2, 9), st.integers(0, 2**31 - 1))
def test_reversal_targets_are_the_letters_backwards_then_the_end(min_len, max_len, vocab, seed):
    from attnprimer.tasks import ReversalTask

    task = ReversalTask(min_len=min_len, max_len=max_len, vocab_size=vocab)
    batch = task.sample(16, seeded(seed))
    assert batch.inputs.shape == (16, max_len) and batch.targets.shape == (16, max_len + 1)
    for tokens, target in zip(batch.inputs, batch.targets, strict=True):
        text = task.decode(tokens)
        assert min_len <= len(text) <= max_len
        assert torch.all(tokens[len(text):] == 0)  # padding only at the end
        assert task.decode_output(target) == text[::-1] + "."
        assert torch.all(target[len(text) + 1:] == 0)


def test_reversal_correct_ignores_steps_after_the_end():
    from attnprimer.tasks import ReversalTask

    task = ReversalTask(max_len=4)
    targets = task.targets_for(task.encode("ABC")[None])  # C B A . pad
    predictions = targets.clone()
    predictions[0, 4] = 2  # garbage after the end
    assert task.correct(predictions, targets).all()
    predictions[0, 3] = 1  # no end where it belongs
    assert not task.correct(predictions, targets).all()


def test_reversal_alignment_is_the_anti_diagonal():
    from attnprimer.tasks.reversal import reversal_alignment

    alignment = reversal_alignment(4)
    assert torch.equal(alignment.argmax(1), torch.tensor([3, 2, 1, 0]))


@pytest.mark.parametrize("text", ["", "ABCDEFGHIJK", "AB CD", "ABZ"])
def test_reversal_refuses_bad_input(text):
    from attnprimer.tasks import ReversalTask

    with pytest.raises(ValueError):
        ReversalTask().encode(text)


def test_reversal_settings_are_checked():
    from attnprimer.tasks import ReversalTask

    with pytest.raises(ValueError, match="min_len"):
        ReversalTask(min_len=11)
    with pytest.raises(ValueError, match="decoder must be one of"):
        ReversalTask(decoder="peeking")
    with pytest.raises(ValueError, match="score must be one of"):
        ReversalTask(score="cosine")


# --- options of the positional-encoding page's experiments --------------------------------------


def test_counting_mixed_lengths_draw_one_length_per_batch_in_range():
    from attnprimer.tasks import CountingTask

    task = CountingTask(max_len=20, mixed_lengths=True)
    generator = torch.Generator().manual_seed(0)
    lengths = {task.sample(3, generator).inputs.shape[1] for _ in range(300)}
    assert lengths == set(range(5, 21))
    assert task.num_classes == 21
    fixed = task.at_length(30)
    assert not fixed.mixed_lengths
    assert fixed.sample(2, generator).inputs.shape == (2, 30)


def test_counting_start_token_model_reads_one_more_key():
    from attnprimer.models.counting import StartTokenCountingModel
    from attnprimer.tasks import CountingTask

    model = CountingTask(hidden=8, start_token=True).build_model()
    assert isinstance(model, StartTokenCountingModel)
    with torch.no_grad():
        output = model(torch.tensor([[1, 2, 0, 3]]))
    weights = output.attention["encoder-decoder"]  # (B, T, S): on the input tokens only
    assert weights.shape == (1, 3, 4)
    # zero queries at initialisation: even weights over the start token and the four inputs
    torch.testing.assert_close(weights, torch.full((1, 3, 4), 0.2))


def test_signal_balanced_loss_weighs_every_count_alike():
    from attnprimer.tasks import SignalTask
    from attnprimer.tasks.base import Batch

    task = SignalTask(max_len=4, vocab_size=2, hidden=8, balanced_loss=True)
    probabilities = task.count_probabilities()
    torch.testing.assert_close(probabilities.sum(), torch.tensor(1.0))
    plain = SignalTask(max_len=4, vocab_size=2, hidden=8)
    torch.manual_seed(0)
    model = plain.build_model()
    inputs = torch.tensor([[1, 1, 1, 1, 1], [1, 2, 2, 2, 2]])  # counts 4 and 0
    batch = Batch(inputs, task.targets_for(inputs))
    per_example = torch.stack([plain.loss(model, Batch(inputs[i:i + 1], batch.targets[i:i + 1]))
                               for i in range(2)])
    weights = 1 / (task.num_classes * probabilities[batch.targets[:, 0]])
    torch.testing.assert_close(task.loss(model, batch), (weights * per_example).mean())


def test_signal_projections_give_every_encoding_w_q_and_w_k():
    from attnprimer.tasks import SignalTask

    for encoding in ("learned", "sinusoidal", "none"):
        assert not hasattr(SignalTask(hidden=8, pos_enc=encoding).build_model().encoder, "query")
        model = SignalTask(hidden=8, pos_enc=encoding, projections=True).build_model()
        assert isinstance(model.encoder.query, torch.nn.Linear)
    assert hasattr(SignalTask(hidden=8, pos_enc="rotary").build_model().encoder, "query")
