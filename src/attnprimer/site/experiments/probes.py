"""Linear probes: what a model's hidden states hold, read by a classifier fitted on them.

A probe is fitted on the states of one held-out set and scored on another, so that a probe that
memorised its training states scores no better than chance. Used by the self-attention chapter
(the difference step's state) and the Bahdanau chapter (the encoder's states).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.training.train import single_thread

__all__ = ["linear_probe"]


def linear_probe(
    train_features: torch.Tensor,
    train_labels: torch.Tensor,
    test_features: torch.Tensor,
    test_labels: torch.Tensor,
    num_classes: int,
    *,
    weight_decay: float = 1e-4,
) -> float:
    """Fit a multinomial logistic regression on one set, return its accuracy on another.

    A linear probe asks whether a quantity can be *read off* a hidden state by
    a linear map, which is all the model's own classifier can do with it. The
    fit is deterministic (zero initialisation, full-batch L-BFGS).

    Examples:
        >>> features = torch.tensor([[0.0, 1.0], [1.0, 0.0]]).repeat(20, 1)
        >>> labels = torch.tensor([0, 1]).repeat(20)
        >>> linear_probe(features, labels, features, labels, num_classes=2)
        1.0
    """
    probe = nn.Linear(train_features.shape[-1], num_classes)
    nn.init.zeros_(probe.weight)
    nn.init.zeros_(probe.bias)
    optimizer = torch.optim.LBFGS(probe.parameters(), max_iter=300, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(probe(train_features), train_labels)
        loss = loss + weight_decay * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    with single_thread(), torch.enable_grad():  # hundreds of small steps
        optimizer.step(closure)
    with torch.no_grad():
        return (probe(test_features).argmax(dim=-1) == test_labels).float().mean().item()
