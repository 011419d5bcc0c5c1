"""The interventions the explorer offers are the chapters' interventions, as forward passes.

Each function must equal the model's own forward pass when it intervenes on nothing, agree
with the chapters' batch experiments where they overlap, and change exactly what it says.
Checked here on the site's trained models, on held-out inputs.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.bahdanau import teacher_forced
from attnprimer.site.experiments.difference_model import block_and_swap
from attnprimer.site.explorer.interventions import difference_intervened, reversal_forced
from attnprimer.training.train import held_out_generator


def _inputs(trained, count=300):
    return trained.task.sample(count, held_out_generator()).inputs


@pytest.fixture(scope="module")
def difference(site_models):
    return site_models(site_model("difference", self_att=True))


@pytest.fixture(scope="module")
def reversal(site_models):
    return site_models(site_model("reversal", decoder="attention", score="additive"))


def test_blocking_is_the_models_own_mask_on_the_last_row(difference):
    model, tokens = difference.model, _inputs(difference)
    for blocked in ([0], [1], [0, 3], [0, 1, 2, 3]):
        mask = torch.ones(4, 4, dtype=torch.bool)
        mask[3, blocked] = False
        ours = difference_intervened(model, tokens, blocked=blocked)
        torch.testing.assert_close(ours.logits, model(tokens, self_mask=mask).logits)
        weights = ours.attention["self"]
        assert (weights[:, 3, blocked] == 0).all()
        torch.testing.assert_close(weights[:, :3], model(tokens).attention["self"][:, :3])


def test_a_fully_blocked_row_reads_nothing_and_the_residual_remains(difference):
    output = difference_intervened(difference.model, _inputs(difference), blocked=range(4))
    assert (output.attention["self"][:, 3] == 0).all()
    assert torch.isfinite(output.logits).all()


def test_swap_exchanges_two_weights_and_scores_as_the_chapters_swap(difference):
    model = difference.model
    tokens = difference.task.sample(2000, held_out_generator(0)).inputs  # block_and_swap's
    plain = model(tokens).attention["self"][:, 3]
    swapped = difference_intervened(model, tokens, swap=True)
    row = swapped.attention["self"][:, 3]
    assert torch.equal(row[:, [0, 1]], plain[:, [1, 0]]) and torch.equal(row[:, 2:], plain[:, 2:])
    # The chapter's batch experiment, on the sequences it scores (count(A) != count(B)):
    targets = difference.task.targets_for(tokens)
    unequal = targets[:, 0] != targets[:, 1]
    right = swapped.logits[unequal, 3].argmax(-1) == targets[unequal, 3]
    chapter = block_and_swap(difference, samples=2000)["swap the A and B weights"]
    assert right.float().mean().item() == pytest.approx(chapter, abs=1e-9)


def test_unforced_decoding_is_the_models_greedy_decoding(reversal):
    tokens = _inputs(reversal)
    ours, plain = reversal_forced(reversal.model, tokens), reversal.model(tokens)
    torch.testing.assert_close(ours.logits, plain.logits)
    torch.testing.assert_close(ours.attention["encoder-decoder"],
                               plain.attention["encoder-decoder"])


def test_forcing_changes_the_forced_step_onwards_and_nothing_before(reversal):
    tokens = _inputs(reversal)
    plain = reversal_forced(reversal.model, tokens)
    forced = reversal_forced(reversal.model, tokens, {3: 0})
    weights = forced.attention["encoder-decoder"]
    assert torch.equal(weights[:, 3], torch.nn.functional.one_hot(
        torch.zeros(len(tokens), dtype=torch.long), tokens.shape[1]).float())
    torch.testing.assert_close(forced.logits[:, :3], plain.logits[:, :3])
    assert not torch.equal(forced.logits[:, 3], plain.logits[:, 3])


def test_forcing_the_first_step_matches_the_chapters_teacher_forced_run(reversal):
    """At step 0 greedy and teacher-forced decoding are fed the same start token."""
    tokens = _inputs(reversal)
    targets = reversal.task.targets_for(tokens)

    def force(step, weights):
        return (torch.nn.functional.one_hot(torch.full((len(tokens),), 2), tokens.shape[1])
                .float() if step == 0 else weights)

    logits, _ = teacher_forced(reversal.model, tokens, targets, force)
    ours = reversal_forced(reversal.model, tokens, {0: 2})
    torch.testing.assert_close(ours.logits[:, 0], logits[:, 0])


def test_padding_changes_nothing_the_page_shows(reversal):
    """The page feeds an input without padding: the real steps and positions must agree."""
    tokens = _inputs(reversal, 50)
    padded = reversal_forced(reversal.model, tokens, {1: 0})
    for index, row in enumerate(tokens):
        n = int((row != 0).sum())
        alone = reversal_forced(reversal.model, row[None, :n], {1: 0})
        # Equal up to float32 rounding: batched and single products round a little apart.
        torch.testing.assert_close(alone.logits[0], padded.logits[index, : n + 1],
                                   atol=1e-4, rtol=0)
        assert torch.equal(alone.logits[0].argmax(-1), padded.logits[index, : n + 1].argmax(-1))
        torch.testing.assert_close(alone.attention["encoder-decoder"][0],
                                   padded.attention["encoder-decoder"][index, : n + 1, :n],
                                   atol=1e-5, rtol=0)

