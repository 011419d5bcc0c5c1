"""The pure measurements of "Patches as tokens": patch distances and mean attention distance."""

from __future__ import annotations

import torch

from attnprimer.site.experiments.patch_tokens import mean_attention_distance, patch_distances


def test_patch_distances_are_pixels_between_patch_centres():
    distances = patch_distances(2, 3, patch=4)  # patches 0 1 2 / 3 4 5
    assert distances.shape == (6, 6)
    assert distances[0, 2] == 8.0 and distances[0, 3] == 4.0
    torch.testing.assert_close(distances[0, 4], torch.tensor(32.0).sqrt())  # one down, one over
    torch.testing.assert_close(distances, distances.T)
    assert bool((distances.diagonal() == 0).all())


def test_mean_attention_distance_leaves_the_class_token_out_and_averages_the_queries():
    distances = patch_distances(1, 3, patch=4)
    weights = torch.zeros(2, 4, 4)  # (B, L, L), L = 1 + 3: the class token at 0
    weights[0, 1:, 1:] = torch.eye(3)  # every patch attends to itself: distance 0
    weights[1, :, 0] = 1.0  # everything on the class token: it is left out, distance 0
    assert mean_attention_distance(weights, distances).tolist() == [0.0, 0.0]
    weights[0, 1, 1:] = torch.tensor([0.5, 0.25, 0.25])  # the worked example's row: 3 pixels
    weights[0, 3, 1:] = torch.tensor([1.0, 0.0, 0.0])  # patch 2 looks at patch 0: 8 pixels
    torch.testing.assert_close(mean_attention_distance(weights, distances)[0],
                               torch.tensor((3.0 + 0.0 + 8.0) / 3))
