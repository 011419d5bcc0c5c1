"""Train short, test long: what the length-generalisation chapter measures on its models.

Each model of [`CopyReverseTask`][attnprimer.tasks.copy_reverse.CopyReverseTask] trained on
inputs of 1 to N letters is scored on held-out inputs of every length up to 2N:

* [`first_errors`][attnprimer.site.experiments.length_generalisation.first_errors]: for each
  length, where each input's output first goes wrong (or that it never does), from which
  exact match follows;
* [`source_attention`][attnprimer.site.experiments.length_generalisation.source_attention]: how
  much weight each head puts on the letter the output step should write, and the weights of
  one input for the chapter's heatmaps.

One teacher-forced pass is enough: the outputs a model writes greedily are all right exactly
when every teacher-forced prediction is (both runs see the same tokens up to the first
mistake), and the first wrong step is the same in both.

Held-out inputs, ``torch.no_grad``, forward only, on the CPU. Shape legend: B batch, S input
length, T output steps (S + 1), L sequence length, H heads.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["cached_first_errors", "cached_source_attention", "exact_match", "first_errors",
           "source_attention", "source_columns"]


@torch.no_grad()
def first_errors(trained: TrainedModel, lengths: Iterable[int],
                 samples: int = 1000) -> dict[int, list[float]]:
    """For each input length n, the share of inputs whose first wrong output step is t.

    Returns:
        ``{n: shares}``, ``shares[t]`` for the output steps t = 0..n (step n is the end
        token), then ``shares[n + 1]``: the share with no wrong step (the exact match).

    Examples:
        >>> from attnprimer.tasks import CopyReverseTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(CopyReverseTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> shares = first_errors(trained, [3], samples=10)[3]
        >>> len(shares), round(sum(shares), 6)
        (5, 1.0)
    """
    results = {}
    for length in lengths:
        batch = trained.task.at_length(length).sample(samples, held_out_generator())
        logits = trained.model(batch.inputs, batch.targets).logits  # (B, T, C)
        wrong = ~trained.task.correct(logits.argmax(dim=-1), batch.targets)  # (B, T)
        # The first wrong step, or T when there is none: (B,)
        steps = torch.arange(wrong.shape[1], 0, -1)  # T..1: the earliest step scores highest
        first = torch.where(wrong.any(dim=1), (wrong * steps).argmax(dim=1), wrong.shape[1])
        counts = torch.bincount(first, minlength=wrong.shape[1] + 1)
        results[length] = (counts / samples).tolist()
    return results


def exact_match(shares: list[float]) -> float:
    """The exact match of one length's
    [`first_errors`][attnprimer.site.experiments.length_generalisation.first_errors]
    shares: the share of inputs with no wrong step."""
    return shares[-1]


def source_columns(task, inputs: torch.Tensor) -> torch.Tensor:
    """Where output step t should read, as a column of the model's sequence: (B, T - 1).

    The sequence is ``pad, input, separator, ...`` (S + 2 columns before the outputs), and
    the query of output step t is the column before that step's token: S + 1 + t.
    """
    length = inputs.shape[1]  # inputs of one length: no padding
    steps = torch.arange(length)  # the letter steps (the end reads no letter)
    letter = length - 1 - steps if task.operation == "reverse" else steps
    return (1 + letter)[None, :].expand(inputs.shape[0], -1)  # column of input letter


@torch.no_grad()
def source_attention(trained: TrainedModel, length: int,
                     samples: int = 500) -> dict[str, object]:
    """How much weight each head puts on the letter each output step should write.

    Returns:
        ``"on_source"``: ``{head: mean weight}`` over the letter steps of ``samples`` held-out
        inputs of ``length`` letters; ``"example"``: the first input's letters, and for every
        head its weights from the letter steps' queries to the input's columns (n, n) as lists.
    """
    task = trained.task
    batch = task.at_length(length).sample(samples, held_out_generator())
    attention = trained.model(batch.inputs, batch.targets).attention  # {head: (B, L, L)}
    queries = length + 1 + torch.arange(length)  # the separator, then each output token
    columns = source_columns(task, batch.inputs)  # (B, n)
    on_source, example = {}, {}
    for head, weights in attention.items():
        rows = weights[:, queries]  # (B, n, L): the letter steps' queries
        on_source[head] = rows.gather(2, columns[..., None]).mean().item()
        example[head] = rows[0, :, 1:length + 1].tolist()  # (n, n): onto the letters
    return {"on_source": on_source, "example": example,
            "letters": task.decode(batch.inputs[0])}


def cached_first_errors(trained: TrainedModel, lengths: Iterable[int],
                        samples: int = 1000) -> dict[int, list[float]]:
    """[`first_errors`][attnprimer.site.experiments.length_generalisation.first_errors] through the
    result cache: the page and the claims tests read the same numbers."""
    return cached_result(first_errors, trained, lengths=list(lengths), samples=samples,
                         decode=lambda data: {int(n): shares for n, shares in data.items()})


def cached_source_attention(trained: TrainedModel, length: int,
                            samples: int = 500) -> dict[str, object]:
    """[`source_attention`][attnprimer.site.experiments.length_generalisation.source_attention]
    through the result cache."""
    return cached_result(source_attention, trained, length=length, samples=samples)
