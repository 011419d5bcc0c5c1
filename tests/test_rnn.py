"""The recurrent encoder-decoders: padding, teacher forcing, and the attention decoder's scores."""

from __future__ import annotations

import pytest
import torch

from attnprimer.additive import AdditiveAttention, additive_scores
from attnprimer.rnn import DECODERS, SCORES, Decoder, Encoder, Seq2Seq


def make(kind="attention", score="additive", bidirectional=False, seed=0) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(num_tokens=6, num_outputs=8, embed_dim=8, hidden=12, kind=kind, score=score,
                   bidirectional=bidirectional).double().eval()


@pytest.mark.parametrize("bidirectional", [False, True])
def test_the_encoder_ignores_padding(bidirectional):
    torch.manual_seed(0)
    encoder = Encoder(6, 8, 12, bidirectional=bidirectional).double()
    alone_states, alone_final = encoder(torch.tensor([[1, 2, 3]]))
    padded_states, padded_final = encoder(torch.tensor([[1, 2, 3, 0, 0], [4, 4, 4, 4, 4]]))
    torch.testing.assert_close(padded_final[:1], alone_final)
    torch.testing.assert_close(padded_states[:1, :3], alone_states)
    assert torch.all(padded_states[0, 3:] == 0)


def test_the_final_state_is_the_last_real_step_forwards_and_the_first_backwards():
    torch.manual_seed(0)
    encoder = Encoder(6, 8, 12, bidirectional=True).double()
    states, final = encoder(torch.tensor([[1, 2, 3, 0]]))
    torch.testing.assert_close(final[0, :12], states[0, 2, :12])  # forward: after the last letter
    torch.testing.assert_close(final[0, 12:], states[0, 0, 12:])  # backward: after the first


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_does_not_change_a_prediction(kind, bidirectional):
    model = make(kind, bidirectional=bidirectional)
    alone = model(torch.tensor([[1, 2, 3]])).logits  # (1, 4, C)
    batch = model(torch.tensor([[1, 2, 3, 0, 0], [5, 4, 3, 2, 1]])).logits  # (2, 6, C)
    torch.testing.assert_close(batch[0, :4], alone[0])


@pytest.mark.parametrize("kind", DECODERS)
def test_teacher_forcing_feeds_the_targets_and_only_earlier_ones(kind):
    model = make(kind)
    inputs = torch.tensor([[1, 2, 3, 4]])
    targets = torch.tensor([[4, 3, 2, 1, 7]])
    changed = targets.clone()
    changed[0, 3] = 5  # change step 3's target: steps 0..3 must not see it
    first, second = model(inputs, targets).logits, model(inputs, changed).logits
    torch.testing.assert_close(first[0, :4], second[0, :4])
    assert not torch.allclose(first[0, 4], second[0, 4])


def test_greedy_decoding_feeds_back_its_own_choices():
    model = make()
    inputs = torch.tensor([[1, 2, 3]])
    greedy = model(inputs).logits
    choices = greedy.argmax(-1)  # (1, T)
    torch.testing.assert_close(model(inputs, choices).logits, greedy)


@pytest.mark.parametrize("score", SCORES)
def test_attention_weights_are_a_distribution_over_real_positions(score):
    model = make(score=score)
    weights = model(torch.tensor([[1, 2, 3, 0], [1, 2, 3, 4]])).attention["encoder-decoder"]
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 5, dtype=torch.float64))
    assert torch.all(weights[0, :, 3] == 0)


def test_other_decoders_have_no_attention():
    for kind in ("vanilla", "peeky"):
        assert make(kind)(torch.tensor([[1, 2]])).attention == {}


def test_the_additive_decoder_scores_as_bahdanau_wrote_them(generator):
    torch.manual_seed(0)
    decoder = Decoder(num_outputs=8, embed_dim=4, memory_dim=6, kind="attention").double()
    state = torch.randn(3, 6, generator=generator, dtype=torch.float64)
    memory = torch.randn(3, 5, 6, generator=generator, dtype=torch.float64)
    fast = decoder.align(state[:, None, :], decoder.keys(memory))  # W_k h computed once
    score = decoder.score
    by_hand = additive_scores(state[:, None, :], memory, score.query_proj.weight,
                              score.key_proj.weight, score.v)
    torch.testing.assert_close(fast, by_hand)
    module = AdditiveAttention(6, 6, 6).double()
    module.score.load_state_dict(score.state_dict())
    _, weights = module(state[:, None, :], memory, memory)
    torch.testing.assert_close(weights, by_hand.softmax(-1))


def test_bad_decoder_settings_are_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        Decoder(8, 4, 6, kind="peeking")
    with pytest.raises(ValueError, match="score must be one of"):
        Decoder(8, 4, 6, score="cosine")
