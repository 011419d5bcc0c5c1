"""Probes, ablations and interventions on difference models (small ones, trained here)."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from attnprimer.site.experiments.difference_model import (
    block_and_swap,
    difference_step_profile,
    encoder_weight_by_token,
    mean_self_attention,
    probe_difference_step,
)
from attnprimer.site.experiments.probes import linear_probe
from attnprimer.tasks import DifferenceTask
from attnprimer.training.train import TrainConfig, held_out_generator, train


@pytest.fixture(scope="module")
def with_self():
    return train(DifferenceTask(hidden=16, self_att=True), TrainConfig(steps=300, lr=3e-2))


@pytest.fixture(scope="module")
def without_self():
    return train(DifferenceTask(hidden=16), TrainConfig(steps=50, lr=3e-2))


def unequal_batch(trained, samples: int, seed: int):
    inputs, targets = trained.task.sample(samples, held_out_generator(seed))
    keep = targets[:, 0] != targets[:, 1]
    return inputs[keep], targets[keep]


@pytest.mark.parametrize("function", [mean_self_attention, difference_step_profile, block_and_swap])
def test_self_attention_analyses_refuse_a_model_without_it(function, without_self):
    with pytest.raises(ValueError, match="self_att=True"):
        function(without_self, samples=20)


def test_mean_self_attention_is_the_mean_of_the_models_weights(with_self):
    inputs, _ = with_self.task.sample(300, held_out_generator(4))
    expected = with_self.model(inputs).attention["self"].mean(0)
    torch.testing.assert_close(mean_self_attention(with_self, samples=300, seed=4), expected)


def test_profile_groups_by_the_signed_difference(with_self):
    differences, rows = difference_step_profile(with_self, samples=2000, seed=5, min_count=50)
    assert differences == sorted(differences)
    assert rows.shape == (len(differences), 4)
    torch.testing.assert_close(rows.sum(-1), torch.ones(len(differences)))
    inputs, targets = with_self.task.sample(2000, held_out_generator(5))
    signed = targets[:, 0] - targets[:, 1]
    weights = with_self.model(inputs).attention["self"][:, -1]
    for difference, row in zip(differences, rows, strict=True):
        assert int((signed == difference).sum()) >= 50
        torch.testing.assert_close(row, weights[signed == difference].mean(0))


def test_block_and_swap_as_trained_is_the_models_own_accuracy(with_self):
    results = block_and_swap(with_self, samples=1000, seed=6)
    inputs, targets = unequal_batch(with_self, 1000, 6)
    predicted = with_self.model(inputs).logits[:, -1].argmax(-1)
    right = (predicted == targets[:, -1]).float().mean().item()
    assert results["as trained"] == pytest.approx(right)


def test_blocking_the_larger_count_agrees_with_the_models_own_mask(with_self):
    results = block_and_swap(with_self, samples=1000, seed=6)
    inputs, targets = unequal_batch(with_self, 1000, 6)
    larger = torch.where(targets[:, 0] > targets[:, 1], 0, 1)
    mask = torch.ones(len(inputs), 4, 4, dtype=torch.bool)
    mask[torch.arange(len(inputs)), 3, larger] = False
    output = with_self.model(inputs, self_mask=mask)
    assert torch.all(output.attention["self"][torch.arange(len(inputs)), 3, larger] == 0)
    accuracy = (output.logits[:, -1].argmax(-1) == targets[:, -1]).float().mean().item()
    assert results["block the larger count"] == pytest.approx(accuracy)


def test_swapping_the_a_and_b_weights_matches_a_hand_computation(with_self):
    results = block_and_swap(with_self, samples=1000, seed=6)
    inputs, targets = unequal_batch(with_self, 1000, 6)
    model = with_self.model
    hidden, _ = model.read(inputs)
    weights = model(inputs).attention["self"].clone()
    weights[:, 3, [0, 1]] = weights[:, 3, [1, 0]]
    after = F.layer_norm(hidden + weights @ hidden, (16,), model.self_attention.norm.weight,
                         model.self_attention.norm.bias)  # projection-free: values = states
    accuracy = (model.classifier(after[:, 3]).argmax(-1) == targets[:, 3]).float().mean().item()
    assert results["swap the A and B weights"] == pytest.approx(accuracy)


def test_block_and_swap_reports_every_condition_as_a_fraction(with_self):
    results = block_and_swap(with_self, samples=500)
    assert list(results) == ["as trained", "block the larger count", "block the smaller count",
                             "block the other letters", "block itself", "swap the A and B weights"]
    assert all(0.0 <= value <= 1.0 for value in results.values())


def test_linear_probe_reads_a_linear_quantity_and_not_noise():
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(2000, 6, generator=generator)
    labels = (features[:, 0] + features[:, 1] > 0).long()
    assert linear_probe(features[:1000], labels[:1000], features[1000:], labels[1000:], 2) > 0.95
    noise = torch.randint(0, 2, (2000,), generator=generator)
    assert linear_probe(features[:1000], noise[:1000], features[1000:], noise[1000:], 2) < 0.6


def test_linear_probe_is_deterministic():
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(300, 4, generator=generator)
    labels = torch.randint(0, 3, (300,), generator=generator)
    first = linear_probe(features, labels, features, labels, 3)
    assert first == linear_probe(features, labels, features, labels, 3)


def test_probes_read_before_and_after_self_attention(with_self, without_self):
    names = [(probe.target, probe.state) for probe in probe_difference_step(with_self, samples=300)]
    assert names == [("count(A)", "before"), ("count(B)", "before"),
                     ("count(A) + count(B)", "before"), ("|A-B|", "before"), ("|A-B|", "after")]
    plain = probe_difference_step(without_self, samples=300)
    assert all(probe.state == "before" for probe in plain)
    assert all(0.0 <= probe.accuracy <= 1.0 for probe in plain)


def test_encoder_weight_by_token_averages_over_positions_of_each_kind(with_self):
    weights = encoder_weight_by_token(with_self, samples=500, seed=2)
    inputs, _ = with_self.task.sample(500, held_out_generator(2))
    attention = with_self.model(inputs).attention["encoder-decoder"][:, -1]
    assert weights.shape == (4,)
    assert weights[1].item() == pytest.approx(attention[inputs == 1].mean().item())
    # Weighted by how often each kind occurs, the kinds share the whole row.
    share = sum(weights[token] * (inputs == token).sum() for token in range(4)) / len(inputs)
    assert share.item() == pytest.approx(1.0, abs=1e-5)
