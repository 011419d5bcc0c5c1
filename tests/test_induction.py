"""The induction chapter's task, model, snapshots, scores and interventions, on tiny models."""

from __future__ import annotations

import itertools

import pytest
import torch

from attnprimer.masks import causal_mask
from attnprimer.models.attention_only import AttentionOnly
from attnprimer.site.experiments.induction_heads import induction_score, previous_token_score
from attnprimer.site.experiments.induction_interventions import (
    _stream_before,
    head_outputs,
    run_with,
)
from attnprimer.tasks import InductionTask
from attnprimer.tasks.induction import Repeats, held_out_pairs
from attnprimer.training.train import TrainConfig, train

TASK = InductionTask()


def _pairs(repeats: Repeats) -> list[tuple[int, int]]:
    """Every adjacent pair inside the segments (both occurrences)."""
    pairs = []
    for row, a, b, m in zip(repeats.tokens, repeats.first, repeats.repeat, repeats.length,
                            strict=True):
        for start in (int(a), int(b)):
            segment = row[start:start + int(m)].tolist()
            pairs += list(itertools.pairwise(segment))
    return pairs


def test_the_segment_is_written_twice_where_the_task_says():
    repeats = TASK.repeats(300, torch.Generator().manual_seed(1))
    for row, a, b, m in zip(*repeats, strict=True):
        assert b >= a + m and b + m <= TASK.max_len
        assert torch.equal(row[a:a + m], row[b:b + m])
        assert TASK.min_repeat <= m <= TASK.max_repeat
    assert int(repeats.length.min()) == TASK.min_repeat
    assert int(repeats.length.max()) == TASK.max_repeat


def test_training_segments_never_hold_a_held_out_pair_and_held_out_segments_only_those():
    held = held_out_pairs(TASK.vocab_size)
    training = _pairs(TASK.repeats(500, torch.Generator().manual_seed(2)))
    assert not any(held[a, b] for a, b in training)
    held_out = _pairs(TASK.repeats(500, torch.Generator().manual_seed(3), pairs="held-out"))
    assert all(held[a, b] for a, b in held_out)
    assert len(set(held_out)) > 0.9 * int(held.sum())  # they use (nearly) every held-out pair


def test_a_training_batch_is_the_sequence_shifted_by_one():
    generator = torch.Generator().manual_seed(4)
    batch = TASK.sample(8, generator)
    assert torch.equal(batch.inputs[:, 1:], batch.targets[:, :-1])
    assert batch.inputs.shape == (8, TASK.max_len - 1)


def test_the_model_is_causal():
    torch.manual_seed(0)
    model = AttentionOnly(tokens=6, dim=8, heads=2, layers=2, max_len=8)
    tokens = torch.randint(1, 6, (3, 8))
    changed = tokens.clone()
    changed[:, 5:] = (changed[:, 5:] % 5) + 1
    assert torch.allclose(model(tokens).logits[:, :5], model(changed).logits[:, :5])


def test_a_snapshot_is_the_model_trained_for_that_many_steps():
    """Snapshots change no training step: the copy at step 4 equals a model trained 4 steps."""
    task = InductionTask(hidden=8, max_len=12, max_repeat=5, snapshot_every=2, snapshots=3)
    config = TrainConfig(steps=6, batch_size=4, lr=3e-3, schedule="constant")
    longer, shorter = train(task, config), train(task, TrainConfig(
        steps=4, batch_size=4, lr=3e-3, schedule="constant"))
    assert longer.model.steps_of_snapshots() == [0, 2, 4]
    copy = longer.model.snapshot(2).state_dict()
    assert all(torch.equal(copy[name], value)
               for name, value in shorter.model.model.state_dict().items())


def _tiny():
    torch.manual_seed(0)
    return AttentionOnly(tokens=6, dim=8, heads=2, layers=2, max_len=10)


def test_run_with_nothing_changed_is_the_forward_pass():
    model, tokens = _tiny(), torch.randint(1, 6, (4, 10))
    logits, weights, _ = run_with(model, tokens)
    output = model(tokens)
    torch.testing.assert_close(logits, output.logits)
    for head, value in output.attention.items():
        torch.testing.assert_close(weights[head], value)


def test_the_heads_outputs_sum_to_what_the_block_adds():
    model, tokens = _tiny(), torch.randint(1, 6, (4, 10))
    _, _, contexts = run_with(model, tokens)
    stream = _stream_before(model, tokens, 1) - _stream_before(model, tokens, 0)
    by_heads = sum(head_outputs(model, head, contexts[head]) for head in ("layer 1.1",
                                                                          "layer 1.2"))
    torch.testing.assert_close(stream, by_heads + model.blocks[0].attention.out_proj.bias)


def test_zeroing_a_context_by_hand_matches_run_with():
    model, tokens = _tiny(), torch.randint(1, 6, (2, 10))
    _, _, contexts = run_with(model, tokens)
    zero = torch.zeros_like(contexts["layer 2.2"])
    logits = run_with(model, tokens, contexts={"layer 2.2": zero})[0]
    x = _stream_before(model, tokens, 1)
    block = model.blocks[1]
    context = torch.stack([contexts["layer 2.1"], zero], dim=1).transpose(1, 2).flatten(2)
    by_hand = model.readout(model.norm(x + block.attention.out_proj(context)))
    torch.testing.assert_close(logits, by_hand)
    assert not torch.allclose(logits, run_with(model, tokens)[0])


def test_keys_from_the_same_stream_change_nothing_and_another_stream_does():
    model, tokens = _tiny(), torch.randint(1, 6, (2, 10))
    stream = _stream_before(model, tokens, 1)
    same = run_with(model, tokens, key_streams={"layer 2.1": stream})
    torch.testing.assert_close(same[0], run_with(model, tokens)[0])
    other = run_with(model, tokens, key_streams={"layer 2.1": torch.randn_like(stream)})
    assert not torch.allclose(other[1]["layer 2.1"], same[1]["layer 2.1"])
    torch.testing.assert_close(other[1]["layer 2.2"], same[1]["layer 2.2"])


# --8<-- the scores, on weights made by hand ----------------------------------------------------

def _by_hand_repeats() -> Repeats:
    """One sequence of 8: the segment at 1 (3 letters) and again at 5."""
    return Repeats(torch.tensor([[7, 1, 2, 3, 8, 1, 2, 3]]), torch.tensor([1]),
                   torch.tensor([5]), torch.tensor([3]))


def test_a_perfect_induction_pattern_scores_one_and_a_previous_token_pattern_zero():
    repeats = _by_hand_repeats()
    length = 7  # the model reads positions 0..6
    induction = torch.zeros(1, length, length)
    induction[0, 5, 2] = induction[0, 6, 3] = 1.0  # 1 at 5 looks at 2; 2 at 6 looks at 3
    previous = torch.zeros(1, length, length)
    previous[0, torch.arange(1, length), torch.arange(length - 1)] = 1.0
    assert induction_score(induction, repeats) == 1.0
    assert induction_score(previous, repeats) == 0.0
    assert previous_token_score(previous) == 1.0
    assert previous_token_score(induction) == pytest.approx(0.0)


def test_uniform_causal_weights_score_the_mean_of_one_over_the_position():
    length = 7
    uniform = causal_mask(length).float()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None]
    assert induction_score(uniform, _by_hand_repeats()) == pytest.approx((1 / 6 + 1 / 7) / 2)
    assert previous_token_score(uniform) == pytest.approx(
        sum(1 / (i + 1) for i in range(1, length)) / (length - 1))
