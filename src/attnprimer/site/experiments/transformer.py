"""The experiments of the chapter "The Transformer": where the trained models fail, and why.

* [`copies_by_position`][attnprimer.site.experiments.transformer.copies_by_position]:
  teacher-forced, how often a model writes the right letter, grouped by the input position that
  letter is copied from, and how often it ends at the right step. On inputs longer than any in
  training it separates "cannot read position 12" from "has lost its way after an early mistake".

When a model first reached 99 % while training is the Bahdanau chapter's
[`first_step_reaching`][attnprimer.site.experiments.bahdanau.first_step_reaching], used as it is.

Everything runs on held-out inputs, under ``torch.no_grad``, forward only, on the CPU.
Shape legend: B batch, S input length, T output steps, C output classes.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["cached_copies_by_position", "copies_by_position"]


@torch.no_grad()
def copies_by_position(trained: TrainedModel, lengths: Iterable[int], samples: int = 500,
                       seed: int = 0) -> dict[str, list[float]]:
    """Teacher-forced accuracy of each copied letter by its input position, and of the end.

    Output step t of an input of n letters copies position n - 1 - t; step n writes the end.
    Every step is fed the correct previous letter, so a mistake does not carry over.

    Returns:
        ``{"position": [accuracy of the letters copied from position j, for j = 0, 1, ...],
        "ended": [share of the steps that copy position j at which the model wrote the end
        token instead], "seen": [how many steps copy position j], "end": [accuracy of the end
        step at each length]}``.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> result = copies_by_position(trained, [2, 3], samples=10)
        >>> len(result["position"]), len(result["ended"]), result["seen"], len(result["end"])
        (3, 3, [20.0, 20.0, 10.0], 2)
    """
    lengths = list(lengths)
    right = torch.zeros(max(lengths))
    ended = torch.zeros(max(lengths))
    seen = torch.zeros(max(lengths))
    ends = []
    trained.model.eval()
    for length in lengths:
        task = trained.task.at_length(length)
        batch = task.sample(samples, held_out_generator(seed))
        logits = trained.model(batch.inputs, batch.targets).logits  # (B, T, C)
        written = logits.argmax(dim=-1)  # (B, T), T = n + 1
        correct = written == batch.targets
        # Step t copies position n - 1 - t: the letters' steps, reversed.
        right[:length] += correct[:, :length].sum(dim=0).flip(0).float()
        ended[:length] += (written[:, :length] == task.end).sum(dim=0).flip(0).float()
        seen[:length] += samples
        ends.append(correct[:, length].float().mean().item())
    return {"position": (right / seen).tolist(), "ended": (ended / seen).tolist(),
            "seen": seen.tolist(), "end": ends}


def cached_copies_by_position(trained: TrainedModel, lengths: Iterable[int],
                              samples: int = 500) -> dict[str, list[float]]:
    """[`copies_by_position`][attnprimer.site.experiments.transformer.copies_by_position] through
    the result cache: the page's figure and the claims tests read the same numbers."""
    return cached_result(copies_by_position, trained, lengths=list(lengths), samples=samples)
