"""Exact match against the input length, for any trained model: the length figures of the RNN,
Bahdanau, positional-encoding and Transformer chapters, and the home page's.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, _exact_match, held_out_generator

__all__ = ["accuracy_by_length", "cached_accuracy_by_length"]


def cached_accuracy_by_length(trained: TrainedModel, lengths: Iterable[int],
                              samples: int = 2000) -> list[float]:
    """[`accuracy_by_length`][attnprimer.site.experiments.length_curves.accuracy_by_length]
    of a cached model,
    computed once per model and per code
    ([`cached_result`][attnprimer.training.model_cache.cached_result]):
    the pages' length figures and the claims tests read the same numbers."""
    return cached_result(accuracy_by_length, trained, lengths=list(lengths), samples=samples)


@torch.no_grad()
def accuracy_by_length(
    trained: TrainedModel, lengths: Iterable[int], samples: int = 2000, seed: int = 0
) -> list[float]:
    """Exact match of a model trained at one length, on held-out inputs of other lengths.

    The task is rebuilt at each length ([`Task.at_length`][attnprimer.tasks.Task.at_length]);
    the model and its classes stay as trained, so a count the model has no
    class for is simply wrong. The exact match of greedy decoding, which a teacher-forced
    model gives in one pass fed the right outputs, as training scores it (a sequence is wholly
    right greedily exactly when every teacher-forced guess is; ``tests/test_train_monitor.py``
    checks the two agree on the site's models).

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> len(accuracy_by_length(trained, [5, 10, 20], samples=50))
        3
    """
    scores = []
    for length in lengths:
        task = trained.task.at_length(length)
        batch = task.sample(samples, held_out_generator(seed))
        scores.append(_exact_match(task, trained.model, batch))  # one pass if teacher-forced
    return scores
