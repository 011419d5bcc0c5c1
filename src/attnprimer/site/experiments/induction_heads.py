"""Induction heads, watched while they learn: the scores of every head at every snapshot.

Used by the chapter "Induction heads" (``docs/chapters/induction-heads.md``).

The models are the attention-only Transformers of
[`InductionTask`][attnprimer.tasks.induction.InductionTask], two layers and the one-layer
control, each in three seeds; each kept a copy of its parameters every 50 training steps
([`Snapshots`][attnprimer.models.attention_only.Snapshots]). Here every copy is scored on the
same fresh sequences (a fixed held-out seed):

* the loss on the repeat (the predictions copying can get right) and on the first occurrence
  of the segment (the same letters, which nothing can predict): the learning curves;
* for every head, its *previous-token score*, the mean weight a position puts on the one just
  before it, and its *induction score*, the mean weight a position inside the repeat puts on
  the position just after the earlier occurrence of its own letter (Olsson et al., 2022).

The interventions on the trained models are in
[`induction_interventions`][attnprimer.site.experiments.induction_interventions].

Positions count from 0. Shape legend: B batch, L sequence length, H heads.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch.nn import functional as F

from attnprimer.site.catalogue import site_seeds
from attnprimer.tasks.induction import Repeats
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["SAMPLES", "Curves", "cached_curves", "curves", "drop_step", "heads_of",
           "induction_models", "induction_score", "previous_token_score", "repeat_losses"]

SAMPLES = 1000
"""Held-out sequences every snapshot is scored on."""


def induction_models(layers: int = 2) -> list[TrainedModel]:
    """The trained induction models with ``layers`` attention layers, in seed order."""
    return [model.trained() for model in site_seeds("induction", layers=layers)]


# --8<-- [start:scores]
def previous_token_score(weights: torch.Tensor) -> float:
    """The mean weight a position puts on the position just before it.

    Args:
        weights: (B, L, L) one head's attention weights; position 0 has no previous one.
    """
    previous = weights.diagonal(offset=-1, dim1=1, dim2=2)  # w[b, i, i - 1]
    return previous.mean().item()


def induction_score(weights: torch.Tensor, repeats: Repeats) -> float:
    """The mean weight a query inside the repeat puts on the token after its letter's
    earlier occurrence.

    The query at ``b + j`` (the repeat starts at b) holds letter j of the segment, which
    first stood at ``a + j``; the letter after it, the one to copy, is at ``a + j + 1``:
    ``distance = b - a`` positions back, plus one. Queries j = 0 .. m - 2 (the last letter
    of the repeat has no next letter in the segment).

    Args:
        weights: (B, L, L) one head's attention weights over ``repeats.tokens``.
        repeats: the sequences and where their segments are.
    """
    queries = repeats.in_repeat()  # (B, L): b <= t <= b + m - 2
    distance = (repeats.repeat - repeats.first)[:, None]        # (B, 1)
    t = torch.arange(weights.shape[1])
    target = (t - distance + 1).clamp(min=0)  # (B, L): the key to look at
    on_target = weights.gather(2, target[..., None]).squeeze(-1)  # (B, L)
    return on_target[queries[:, : weights.shape[1]]].mean().item()
# --8<-- [end:scores]


def repeat_losses(logits: torch.Tensor, repeats: Repeats) -> tuple[float, float]:
    """The mean next-token loss (nats) on the repeat and on the first occurrence.

    Args:
        logits: (B, S - 1, V + 1) the model's outputs on ``repeats.tokens[:, :-1]``.
    """
    losses = F.cross_entropy(logits.transpose(1, 2), repeats.tokens[:, 1:],
                             reduction="none")  # (B, S - 1)
    return (losses[repeats.in_repeat()].mean().item(),
            losses[repeats.in_first()].mean().item())


@dataclass(frozen=True)
class Curves:
    """One model scored at every snapshot and at the end of training.

    Attributes:
        steps: the training step of each point (the last: the trained model).
        repeat_loss: the loss on the repeat at each step.
        first_loss: the loss on the first occurrence.
        previous_token: per head (``"layer 1.2"``), its previous-token score at each step.
        induction: per head, its induction score at each step.
        chance: ln V, the loss of a uniform guess among the V letters.
    """

    steps: list[int]
    repeat_loss: list[float]
    first_loss: list[float]
    previous_token: dict[str, list[float]]
    induction: dict[str, list[float]]
    chance: float


def curves(trained: TrainedModel, samples: int = SAMPLES) -> Curves:
    """Score every snapshot of ``trained`` on ``samples`` held-out sequences."""
    task, snapshots = trained.task, trained.model
    repeats = task.repeats(samples, held_out_generator())
    steps = [*snapshots.steps_of_snapshots(), trained.config.steps]
    models = [snapshots.snapshot(i) for i in range(len(steps) - 1)] + [snapshots.model]
    result = Curves(steps, [], [], {}, {}, math.log(task.vocab_size))
    for model in models:
        with torch.no_grad():
            output = model(repeats.tokens[:, :-1])
        repeat, first = repeat_losses(output.logits, repeats)
        result.repeat_loss.append(repeat)
        result.first_loss.append(first)
        for head, weights in output.attention.items():
            result.previous_token.setdefault(head, []).append(previous_token_score(weights))
            result.induction.setdefault(head, []).append(induction_score(weights, repeats))
    return result


def cached_curves(trained: TrainedModel) -> Curves:
    """:func:`curves`, computed once per model and code version."""
    return cached_result(curves, trained, encode=asdict, decode=lambda data: Curves(**data))


def drop_step(result: Curves) -> int:
    """The first step at which the loss on the repeat is below halfway from chance to its
    final value: where the curve drops."""
    halfway = (result.chance + result.repeat_loss[-1]) / 2
    return next(step for step, loss in zip(result.steps, result.repeat_loss, strict=True)
                if loss < halfway)


def heads_of(result: Curves) -> tuple[str, str]:
    """The model's previous-token head (the layer-1 head with the highest previous-token
    score at the end) and its induction head (the layer-2 head with the highest induction
    score at the end)."""
    def best(layer: str, scores: dict[str, list[float]]) -> str:
        return max((head for head in scores if head.startswith(layer)),
                   key=lambda head: scores[head][-1])
    return best("layer 1.", result.previous_token), best("layer 2.", result.induction)
