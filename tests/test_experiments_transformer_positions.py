"""Tests of the position interventions on Transformers (untrained models: the mechanics only)."""

from __future__ import annotations

import copy

import pytest
import torch

from attnprimer.positional import sinusoidal_encoding
from attnprimer.site.experiments.transformer_positions import (
    moved_positions,
    position_scores,
    shift,
    sinusoid_at,
    squeeze,
)
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.train import TrainConfig, train
from attnprimer.transformer import DecoderOnly, Transformer


def _models():
    torch.manual_seed(0)
    return (Transformer(num_tokens=6, num_outputs=8, dim=16, heads=2, layers=2).eval(),
            DecoderOnly(num_outputs=8, dim=16, heads=2, layers=2).eval())


def _shifted_table(model, k: int):
    """A copy of ``model`` whose own table starts at position k: every position k on."""
    copied = copy.deepcopy(model)
    copied.position.table = sinusoidal_encoding(64 + k, 16)[k:]
    return copied


INPUTS = torch.tensor([[1, 2, 3, 4], [5, 4, 3, 2]])
TARGETS = torch.tensor([[4, 3, 2, 1, 7], [2, 3, 4, 5, 7]])


def test_sinusoid_at_matches_the_table_and_takes_fractions():
    torch.testing.assert_close(sinusoid_at(torch.arange(20.0), 32), sinusoidal_encoding(20, 32))
    halfway = sinusoid_at(torch.tensor([2.5]), 32)[0]
    ends = sinusoidal_encoding(4, 32)[2:4]
    assert not torch.allclose(halfway, ends[0]) and not torch.allclose(halfway, ends[1])


@pytest.mark.parametrize("index", [0, 1])
def test_natural_moves_change_nothing(index):
    model = _models()[index]
    with torch.no_grad():
        expected = model(INPUTS, TARGETS).logits
        greedy = model(INPUTS).logits
        with moved_positions(model):
            torch.testing.assert_close(model(INPUTS, TARGETS).logits, expected)
            torch.testing.assert_close(model(INPUTS).logits, greedy)


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("greedy", [False, True])
def test_shifting_both_sides_is_a_table_that_starts_at_k(index, greedy):
    model = _models()[index]
    targets = None if greedy else TARGETS
    with torch.no_grad(), moved_positions(model, shift(3), shift(3)):
        moved = model(INPUTS, targets).logits
    expected = _shifted_table(model, 3)(INPUTS, targets).logits
    torch.testing.assert_close(moved, expected, atol=1e-5, rtol=1e-5)


def test_the_encoder_decoders_sides_move_apart():
    model, _ = _models()
    other = _shifted_table(model, 2)
    with torch.no_grad():
        with moved_positions(model, source=shift(2)):
            memory = model.encode(INPUTS)[0]
        torch.testing.assert_close(memory, other.encode(INPUTS)[0], atol=1e-5, rtol=1e-5)
        tokens = torch.tensor([[8, 4, 3], [8, 2, 3]])
        _, mask, _ = model.encode(INPUTS)
        with moved_positions(model, target=shift(2)):
            logits = model.decode(memory, mask, tokens)[0]
        torch.testing.assert_close(logits, other.decode(memory, mask, tokens)[0],
                                   atol=1e-5, rtol=1e-5)
        assert not torch.allclose(logits, model.decode(memory, mask, tokens)[0])


def test_the_decoder_only_models_input_moves_alone():
    _, model = _models()
    with torch.no_grad():
        before = model(INPUTS, TARGETS).logits
        with moved_positions(model, source=shift(1)):
            moved = model(INPUTS, TARGETS).logits
    assert not torch.allclose(moved, before)


def test_a_squeeze_maps_the_last_letter_to_nine():
    assert squeeze(15)(torch.tensor([0.0, 14.0])).tolist() == [0.0, 9.0]


def test_positions_are_restored_even_after_an_error():
    model, decoder_only = _models()
    with pytest.raises(RuntimeError), moved_positions(model, shift(1)):
        raise RuntimeError("inside")
    assert "encode" not in vars(model) and "decode" not in vars(model)
    with pytest.raises(ValueError, match="without padding"), \
            moved_positions(decoder_only, shift(1)):
        decoder_only(torch.tensor([[1, 2, 0]]))
    assert "run" not in vars(decoder_only)


def test_other_models_are_refused():
    with pytest.raises(TypeError, match="Transformer or a DecoderOnly"), \
            moved_positions(torch.nn.Linear(2, 2)):
        pass


def test_position_scores_are_shares_and_exact_needs_every_step():
    trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=20))
    scores = position_scores(trained, [3, 11], source="shift 1", samples=50)
    for exact, letters, end in zip(scores["exact"], scores["letters"], scores["end"],
                                   strict=True):
        assert 0 <= exact <= min(letters, end) + 1e-9 and max(letters, end) <= 1
    with pytest.raises(ValueError, match="a move is"):
        position_scores(trained, [3], source="sideways", samples=5)
