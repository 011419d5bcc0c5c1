"""Counting letters: how many times does each letter occur?

Taught in the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

The input is a sequence of ``max_len`` tokens, each a letter or a blank drawn
uniformly at random. The output has one step per letter: the number of times
that letter occurs, a class from 0 to ``max_len``::

    input   "AB BC"  (padded with blanks to max_len)
    output  [1, 2, 1]     A once, B twice, C once

No recurrence or convolution is needed: one learned query per letter attends
over the input, and what it reads off is enough to count (see
[`CountingModel`][attnprimer.models.counting.CountingModel]).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import torch
from torch.nn import functional as F

from attnprimer.models.counting import CountingModel, StartTokenCountingModel
from attnprimer.tasks.base import Batch, Task

__all__ = ["CountingTask"]


@dataclass(frozen=True)
class CountingTask(Task):
    """Count each letter of a random sequence.

    Args:
        max_len: S, the input length; counts run from 0 to S.
        vocab_size: V, the number of letters (the blank comes on top).
        hidden: D, the model's width.
        start_token: the model reads a start token before the input
            ([`StartTokenCountingModel`][attnprimer.models.counting.StartTokenCountingModel]).
        mixed_lengths: each batch has its own length, drawn uniformly from
            ``max_len // 4`` to ``max_len`` (every sequence of a batch alike);
            counts still run from 0 to ``max_len``.

    Examples:
        >>> task = CountingTask()
        >>> inputs = task.encode("AB BC")
        >>> task.decode(inputs)
        'AB BC     '
        >>> task.targets_for(inputs[None]).tolist()
        [[1, 2, 1]]
        >>> batch = task.sample(4, torch.Generator().manual_seed(0))
        >>> batch.inputs.shape, batch.targets.shape
        (torch.Size([4, 10]), torch.Size([4, 3]))
    """

    name = "counting"
    description = "count how many times each letter occurs"
    # The original trained 2000 steps at a constant 1e-2 and never measured accuracy;
    # the QKV page compares the two recipes one change at a time, in three seeds.
    train_defaults: ClassVar[dict] = {"steps": 6000, "lr": 3e-2}

    hidden: int = field(default=64, metadata={"help": "model width D"})
    start_token: bool = field(default=False, metadata={"help": "read a start token first"})
    mixed_lengths: bool = field(
        default=False, metadata={"help": "batches of every length from max_len // 4 to max_len"})

    @property
    def num_classes(self) -> int:
        return self.max_len + 1

    def output_labels(self) -> list[str]:
        return list(self.alphabet[1:])

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        one_hot = F.one_hot(inputs, self.vocab_size + 1)  # (B, S) -> (B, S, V+1)
        return one_hot[..., 1:].sum(dim=1)  # drop the blank, count over S -> (B, V)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        length = self.max_len
        if self.mixed_lengths:  # one length for the whole batch
            length = int(torch.randint(max(1, self.max_len // 4), self.max_len + 1, (1,),
                                       generator=generator))
        inputs = torch.randint(
            0, self.vocab_size + 1, (batch_size, length), generator=generator
        )  # (B, S), 0 = blank
        return Batch(inputs, self.targets_for(inputs))

    def at_length(self, length: int) -> CountingTask:
        """The same task on inputs of exactly ``length`` tokens (never mixed)."""
        return replace(self, max_len=length, mixed_lengths=False)

    def build_model(self) -> CountingModel:
        model = StartTokenCountingModel if self.start_token else CountingModel
        return model(
            num_tokens=self.vocab_size + 1,
            num_queries=self.vocab_size,
            num_classes=self.num_classes,
            hidden=self.hidden,
        )
