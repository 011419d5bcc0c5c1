"""Nadaraya–Watson kernel regression: attention pooling before neural networks.

Taught in the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

Given samples ``(x_j, y_j)`` of an unknown function, Nadaraya (1964, "On estimating
regression") and Watson (1964, "Smooth regression analysis") estimate its value at a new
point ``x`` as a weighted average of the ``y_j``, weighted by a kernel ``K`` of how close each
``x_j`` is to ``x``:

    f(x) = sum_j K(x - x_j) y_j / sum_k K(x - x_k).

In the words of attention: ``x`` is the query, the ``x_j`` are the keys, the ``y_j`` the
values, and the normalised kernel is the weight row. With the Gaussian kernel
``K(d) = exp(-|d|^2 / (2 h^2))`` the weights are exactly a softmax of the scores
``-|x - x_j|^2 / (2 h^2)``, so the kernel width ``h`` acts as a temperature: a narrow kernel
gives nearly one-hot weights (the nearest sample, a dictionary lookup), a wide one nearly
uniform weights (the mean of all samples). Nothing here is learned but ``h``.

Expanding the square, ``-|q - k|^2 / (2 h^2) = q.k / h^2 - |q|^2 / (2 h^2) - |k|^2 / (2 h^2)``:
the ``|q|^2`` term is the same for every key and cancels in the softmax, so for keys of equal
length the Gaussian weights *are* dot-product attention weights with scale ``1 / h^2``.

Shape legend: L queries, S samples (keys), D input dim, Dv value dim; ``...`` any leading
batch dimensions.
"""

from __future__ import annotations

import torch

from attnprimer.attention import attend

__all__ = ["gaussian_scores", "nadaraya_watson"]


# --8<-- [start:gaussian_scores]
def gaussian_scores(
    query: torch.Tensor, key: torch.Tensor, width: float
) -> torch.Tensor:
    """Scores whose softmax is the normalised Gaussian kernel: ``-|q - k|^2 / (2 width^2)``.

    Args:
        query: (..., L, D).
        key: (..., S, D).
        width: the kernel width h (> 0).

    Returns:
        Scores (..., L, S).

    Examples:
        >>> gaussian_scores(torch.tensor([[0.5]]), torch.tensor([[0.0], [1.0], [2.5]]), 1.0)
        tensor([[-0.1250, -0.1250, -2.0000]])
    """
    _check(query, key, width)
    distances = torch.cdist(query, key)  # (..., L, S): every |q - k|
    return -distances.square() / (2 * width**2)
# --8<-- [end:gaussian_scores]


# --8<-- [start:nadaraya_watson]
def nadaraya_watson(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, width: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The Nadaraya–Watson estimate at each query, with its weights.

    Args:
        query: (..., L, D) where to estimate.
        key: (..., S, D) the sample inputs.
        value: (..., S, Dv) the sample outputs.
        width: the Gaussian kernel's width h (> 0).

    Returns:
        ``(estimate, weights)``: estimate (..., L, Dv), weights (..., L, S); each weight row
        sums to 1, its weights non-negative (a narrow kernel's far weights underflow to 0).

    Examples:
        >>> key = torch.tensor([[0.0], [1.0]])
        >>> value = torch.tensor([[0.0], [10.0]])
        >>> estimate, weights = nadaraya_watson(torch.tensor([[0.5]]), key, value, width=1.0)
        >>> weights, estimate            # halfway between the samples: equal weights
        (tensor([[0.5000, 0.5000]]), tensor([[5.]]))
    """
    scores = gaussian_scores(query, key, width)  # (..., L, S)
    return attend(scores, value)  # softmax, then the weighted average
# --8<-- [end:nadaraya_watson]


def _check(query: torch.Tensor, key: torch.Tensor, width: float) -> None:
    if not width > 0:
        raise ValueError(f"the kernel width must be positive, got {width}")
    if query.dim() < 2 or key.dim() < 2 or query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query (..., L, D) and key (..., S, D) need at least 2 dimensions and the same D: "
            f"query {tuple(query.shape)}, key {tuple(key.shape)}"
        )
