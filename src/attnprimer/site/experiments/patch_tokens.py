"""The experiments of "Patches as tokens", in the chapter "Attention over images": what a class
token reads, with and without the patches' positions.

Every function takes a trained [`DigitPairTask`][attnprimer.tasks.digit_pair.DigitPairTask]
model (three seeds with 2-D positions, three without, on the page) and works on held-out
canvases, built only from held-out images (a fixed held-out stream, ``held_out_generator``):

* [`pair_reading`][attnprimer.site.experiments.patch_tokens.pair_reading]: how often both digits
  are named in order, how often the two digits are named in either order, and what happens when
  the canvas's halves are swapped (which moves whole patches and nothing else);
* [`mean_attention_distance`][attnprimer.site.experiments.patch_tokens.mean_attention_distance]:
  Dosovitskiy et al.'s measure of how far a head looks, the distance in pixels between a query
  patch and the patches it attends to, weighted by the attention;
* [`half_shares`][attnprimer.site.experiments.patch_tokens.half_shares]: how much of the class
  token's weight, head by head, falls on each half of the canvas.

Shape legend: B batch, H heads, L = N + 1 tokens (the class token first), N patches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from attnprimer.patches import patch_grid
from attnprimer.tasks.digit_pair import DigitPairTask, swap_halves
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["SAMPLES", "PairReading", "attention_distances", "cached_distances",
           "cached_half_shares", "cached_pair_reading", "encode", "half_shares",
           "layer_weights", "mean_attention_distance", "pair_reading", "patch_distances"]

SAMPLES = 2000
"""Held-out canvases each measurement reads."""


def encode(trained: TrainedModel, canvases: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Run the model on canvases (B, Hi, Wi): its logits (B, 2, 10) and every head's weights."""
    with torch.no_grad():
        output = trained.model(canvases)
    return output.logits, output.attention


def layer_weights(attention: dict, layer: int) -> torch.Tensor:
    """The weights of every head of ``layer`` (counted from 1), stacked: (B, H, L, L)."""
    names = sorted(name for name in attention if name.startswith(f"layer {layer}."))
    return torch.stack([attention[name] for name in names], dim=1)


# --8<-- [start:mean_attention_distance]
def patch_distances(rows: int, cols: int, patch: int) -> torch.Tensor:
    """(N, N): the distance in pixels between the centres of every two patches."""
    row, col = patch_grid(rows, cols)  # (N,), (N,)
    centres = torch.stack([row, col], dim=-1).float() * patch  # (N, 2)
    return torch.cdist(centres, centres)  # (N, N)


def mean_attention_distance(weights: torch.Tensor,
                            distances: torch.Tensor) -> torch.Tensor:
    """How far each head looks: weights (..., L, L) -> (...,).

    Each patch's row of weights, over the patches (the class token left out as query and as
    key), times the distance to each: the weighted distance of one query; averaged over them.

    Examples:
        >>> far = patch_distances(1, 3, patch=4)[0]      # from patch 0 to patches 0, 1, 2
        >>> far
        tensor([0., 4., 8.])
        >>> (torch.tensor([0.5, 0.25, 0.25]) * far).sum()  # one query's weighted distance
        tensor(3.)
    """
    patches = weights[..., 1:, 1:]  # (..., N, N): patch queries, patch keys
    per_query = (patches * distances).sum(dim=-1)  # (..., N)
    return per_query.mean(dim=-1)
# --8<-- [end:mean_attention_distance]


@dataclass(frozen=True)
class PairReading:
    """One patch encoder on held-out digit pairs.

    Attributes:
        exact_match: the share of canvases whose two digits are named right, left first.
        either_order: the share whose two digits are named, in either order.
        different: the share of canvases whose two digits differ.
        swap_unchanged: the share whose answer stays the same when the halves are swapped.
        swap_largest_change: the largest change of any logit the swap makes.
        swap_follows: of the canvases read right whose digits differ, the share read as the
            swap (the right digit first) once the halves are swapped.
        wrong_on_one_order: of the canvases whose digits differ, the share where the canvas or
            its swap is read wrong.
    """

    exact_match: float
    either_order: float
    different: float
    swap_unchanged: float
    swap_largest_change: float
    swap_follows: float
    wrong_on_one_order: float


def pair_reading(trained: TrainedModel, samples: int = SAMPLES) -> PairReading:
    """Read held-out pairs, then the same canvases with their halves swapped."""
    task: DigitPairTask = trained.task
    layout = task.layout(samples, held_out_generator())
    canvases, targets = task.paint(layout), task.targets_of(layout)
    logits, _ = encode(trained, canvases)
    answers = logits.argmax(dim=-1)  # (B, 2)
    right = (answers == targets).all(dim=1)
    either = right | (answers == targets.flip(1)).all(dim=1)
    different = targets[:, 0] != targets[:, 1]

    swapped_logits, _ = encode(trained, swap_halves(canvases))
    swapped = swapped_logits.argmax(dim=-1)
    unchanged = (swapped == answers).all(dim=1)
    follows = (swapped == targets.flip(1)).all(dim=1)  # read as the swap: right digit first
    return PairReading(
        exact_match=right.float().mean().item(),
        either_order=either.float().mean().item(),
        different=different.float().mean().item(),
        swap_unchanged=unchanged.float().mean().item(),
        swap_largest_change=(swapped_logits - logits).abs().max().item(),
        swap_follows=follows[right & different].float().mean().item(),
        wrong_on_one_order=(~right | ~follows)[different].float().mean().item())


def cached_pair_reading(trained: TrainedModel) -> PairReading:
    """:func:`pair_reading`, computed once per model and code version."""
    return cached_result(pair_reading, trained, encode=asdict,
                         decode=lambda data: PairReading(**data))


def attention_distances(trained: TrainedModel, samples: int = 500) -> list[list[float]]:
    """Each head's mean attention distance in pixels, by layer: ``[layer][head]``, averaged
    over held-out canvases."""
    task: DigitPairTask = trained.task
    canvases = task.sample(samples, held_out_generator()).inputs
    _, attention = encode(trained, canvases)
    distances = patch_distances(task.height // task.patch, task.width // task.patch, task.patch)
    return [mean_attention_distance(layer_weights(attention, layer), distances).mean(0).tolist()
            for layer in range(1, task.layers + 1)]


def cached_distances(trained: TrainedModel) -> list[list[float]]:
    """:func:`attention_distances`, computed once per model and code version."""
    return cached_result(attention_distances, trained)


def half_shares(trained: TrainedModel, samples: int = 500) -> dict[str, list[list[float]]]:
    """The class token's weight on the left half's patches and on the right half's, head by
    head: ``{"left": [layer][head], "right": ...}``, averaged over held-out canvases (what is
    left over, the class token keeps on itself)."""
    task: DigitPairTask = trained.task
    canvases = task.sample(samples, held_out_generator()).inputs
    _, attention = encode(trained, canvases)
    _, col = patch_grid(task.height // task.patch, task.width // task.patch)  # (N,)
    left = (col < task.width // task.patch // 2).float()  # (N,): 1 on the left half
    shares: dict[str, list[list[float]]] = {"left": [], "right": []}
    for layer in range(1, task.layers + 1):
        weights = layer_weights(attention, layer)[:, :, 0, 1:]  # the class token's: (B, H, N)
        for side, mask in (("left", left), ("right", 1 - left)):
            shares[side].append((weights * mask).sum(-1).mean(0).tolist())  # (H,)
    return shares


def cached_half_shares(trained: TrainedModel) -> dict[str, list[list[float]]]:
    """:func:`half_shares`, computed once per model and code version."""
    return cached_result(half_shares, trained)
