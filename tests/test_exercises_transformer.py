"""The Transformer lab's exercises: registered, faithful to the models, and their mistakes named."""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.exercises import EXERCISES, ExerciseError, check, diagnose
from attnprimer.site.exercises.transformer import DECODER_MASK, ENCODER_BLOCK, decoder_mask
from attnprimer.transformer import DecoderOnly, EncoderBlock


def _flat(message: str) -> str:
    return " ".join(message.split())


def test_both_are_registered_for_check_by_name():
    assert EXERCISES["encoder_block"] is ENCODER_BLOCK
    assert EXERCISES["decoder_mask"] is DECODER_MASK


def test_the_block_reference_is_a_pre_ln_encoder_block():
    torch.manual_seed(0)
    block = EncoderBlock(dim=8, heads=2, hidden=16, pre_norm=True)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        torch.testing.assert_close(ENCODER_BLOCK.reference(x, block), block(x)[0])
    assert all(case.arguments["block"].pre_norm for case in ENCODER_BLOCK.cases())


def test_the_cases_leave_the_readers_random_state_alone():
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    ENCODER_BLOCK.cases()
    assert torch.equal(torch.rand(3), expected)


def test_the_decoder_mask_is_the_one_decoder_only_attends_under():
    # Every weight the model gives where the reference mask is False is zero, and the masks
    # differ from a plain causal one at the input's padding.
    torch.manual_seed(0)
    model = DecoderOnly(num_outputs=6, dim=8, heads=2, layers=1, pre_norm=True).eval()
    inputs = torch.tensor([[1, 2, 0, 0], [3, 4, 5, 0]])
    targets = torch.tensor([[2, 1, 5, 0, 0], [5, 4, 3, 5, 0]])
    with torch.no_grad():
        output = model(inputs, targets)
    sequence = torch.cat([inputs, torch.full((2, 1), model.separator), targets[:, :-1]], dim=1)
    mask = decoder_mask(sequence, inputs.shape[1])  # (B, L, L)
    weights = output.attention["decoder self 1.1"]  # (B, L, L)
    assert weights.shape == mask.shape
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights[mask] > 0)


@pytest.mark.parametrize("exercise", [ENCODER_BLOCK, DECODER_MASK], ids=lambda e: e.name)
def test_a_wrong_answer_fails_without_naming_a_mistake(exercise):
    def wrong(*arguments):
        return exercise.reference(*arguments) * 0  # zeros: the right shape, wrong values

    def wrong_mask(sequence, source_length):
        return torch.ones(sequence.shape[0], sequence.shape[1], sequence.shape[1],
                          dtype=torch.bool)

    function = wrong_mask if exercise is DECODER_MASK else wrong
    with pytest.raises(ExerciseError) as raised:
        check(exercise.name, function)
    assert "known mistake" not in str(raised.value)


@pytest.mark.parametrize(("name", "words"), [
    ("encoder_block", "attention's residual connection is missing"),
    ("encoder_block", "feed-forward's residual connection is missing"),
    ("encoder_block", "post-LN order"),
    ("encoder_block", "applied to the sublayer's output"),
    ("decoder_mask", "sees one token ahead"),
    ("decoder_mask", "upside down"),
])
def test_the_mistakes_the_lab_promises_are_known(name, words):
    mistakes = [m for m in EXERCISES[name].mistakes if words in _flat(m.explanation)]
    assert len(mistakes) == 1
    assert words in _flat(diagnose(name, mistakes[0].function))


def test_a_block_that_forgets_to_unpack_the_attention_says_so():
    def encoder_block(x, block):
        x = x + block.attention(block.norm_attention(x))  # a tuple: (context, weights)
        return x + block.feed_forward(block.norm_feed_forward(x))

    message = _flat(diagnose("encoder_block", encoder_block))
    assert message.startswith("✗ encoder_block raised TypeError")
