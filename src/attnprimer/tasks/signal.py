"""Signal: how many times does the first letter occur in the rest of the sequence?

Taught in the chapter "Positional encoding" (``docs/chapters/positional-encoding.md``).

The input is ``max_len + 1`` letters drawn uniformly at random (no blanks). The
first one is the *signal*; the output is one step, how many of the following
``max_len`` letters equal it::

    input   "BBABC"   signal B, then B A B C
    output  [2]

The signal is embedded exactly like the same letter anywhere else, so only its
position sets it apart. Without a positional encoding the model sees the
multiset of letters and can only guess which one was first
([`multiset_bound`][attnprimer.tasks.signal.multiset_bound] is the best any
such model can do).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import ClassVar

import torch
from torch.nn import functional as F

from attnprimer.models.signal import SignalModel
from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.tasks.base import BLANK, Batch, Task

__all__ = ["SignalTask", "multiset_bound"]


@dataclass(frozen=True)
class SignalTask(Task):
    """Count the occurrences of the first letter in the letters after it.

    Args:
        max_len: the number of letters after the signal (the input has ``max_len + 1``).
        vocab_size: V, the number of letters.
        hidden: D, the model's width.
        pos_enc: the positional encoding: none, learned, sinusoidal or rotary.
        projections: learned W_q, W_k in the self-attention for every encoding
            (the rotary model always has them; the others do not by default).
        balanced_loss: weight each example's loss by ``1 / (C p(count))``, the
            inverse of how often its count comes up (Binomial(max_len, 1/V)), so
            that every count weighs the same in expectation. Training only.

    Examples:
        >>> task = SignalTask()
        >>> task.targets_for(task.encode("BBABCAAAAAA")[None]).tolist()
        [[2]]
        >>> task.sample(2, torch.Generator().manual_seed(0)).inputs.shape
        torch.Size([2, 11])
    """

    name = "signal"
    description = "count how often the first letter occurs in the rest"
    # The original trained 2000 steps at a constant 1e-3 and reported losses only.
    train_defaults: ClassVar[dict] = {"steps": 3000, "lr": 3e-3}

    max_len: int = field(default=10, metadata={
        "help": "letters after the signal (the input has max_len + 1)"})
    hidden: int = field(default=64, metadata={"help": "model width D"})
    pos_enc: str = field(
        default="none",
        metadata={"help": "positional encoding", "choices": POSITIONAL_ENCODINGS},
    )
    projections: bool = field(default=False,
                              metadata={"help": "learned W_q, W_k in the self-attention"})
    balanced_loss: bool = field(default=False,
                                metadata={"help": "weight the loss by 1 / frequency of the count"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pos_enc not in POSITIONAL_ENCODINGS:
            raise ValueError(f"pos_enc must be one of {', '.join(POSITIONAL_ENCODINGS)}, "
                             f"got {self.pos_enc!r}")

    @property
    def length(self) -> int:
        """S, the input length: the signal and ``max_len`` letters."""
        return self.max_len + 1

    @property
    def num_classes(self) -> int:
        return self.max_len + 1

    def output_labels(self) -> list[str]:
        return ["count"]

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        signal = inputs[:, :1]  # (B, 1)
        return (inputs[:, 1:] == signal).sum(dim=1, keepdim=True)  # (B, 1)

    def count_probabilities(self) -> torch.Tensor:
        """p(count) of a random input, (C,): Binomial(max_len, 1/V).

        Examples:
            >>> SignalTask(max_len=2, vocab_size=2).count_probabilities()
            tensor([0.2500, 0.5000, 0.2500])
        """
        counts = range(self.num_classes)
        chance = 1 / self.vocab_size
        return torch.tensor([math.comb(self.max_len, count) * chance**count
                             * (1 - chance) ** (self.max_len - count) for count in counts])

    def loss(self, model, batch: Batch) -> torch.Tensor:
        """Cross-entropy; with ``balanced_loss``, each example weighted by 1 / (C p(count))."""
        if not self.balanced_loss:
            return super().loss(model, batch)
        logits = model(batch.inputs).logits[:, 0]  # (B, C)
        weights = 1 / (self.num_classes * self.count_probabilities())  # (C,): mean 1 over counts
        losses = F.cross_entropy(logits, batch.targets[:, 0], reduction="none")  # (B,)
        return (weights[batch.targets[:, 0]] * losses).mean()

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        inputs = torch.randint(
            1, self.vocab_size + 1, (batch_size, self.length), generator=generator
        )  # (B, S): letters only
        return Batch(inputs, self.targets_for(inputs))

    def encode(self, text: str) -> torch.Tensor:
        """Letters only, exactly ``max_len + 1`` of them (the first is the signal)."""
        if BLANK in text or len(text) != self.length:
            raise ValueError(f"the signal task's input is {self.length} letters (the signal, then "
                             f"{self.max_len} more), no blanks; got {text!r}")
        return self._tokens(text)

    def build_model(self) -> SignalModel:
        return SignalModel(
            num_tokens=self.vocab_size + 1,
            num_classes=self.num_classes,
            hidden=self.hidden,
            pos_enc=self.pos_enc,
            max_positions=max(64, self.length),
            projections=self.projections,
        )


@cache
def multiset_bound(max_len: int = 10, vocab_size: int = 3) -> Fraction:
    """The best exact match any model can reach that sees only the multiset of the letters.

    Given the counts n_X of each letter among the ``max_len + 1`` inputs, the
    signal is letter X with probability n_X / (max_len + 1) (every position is
    drawn alike), and then the answer is n_X - 1. The best guess is the answer
    with the largest total probability; averaging its probability over all
    count vectors, weighted by their multinomial probability, gives the bound.
    Computed exactly, as a fraction.

    Examples:
        >>> multiset_bound(max_len=1, vocab_size=2)    # "AA" or "BB": 1; "AB" or "BA": 0
        Fraction(1, 1)
        >>> round(float(multiset_bound()), 4)
        0.5901
    """
    length = max_len + 1
    total = Fraction(0)
    for counts in _compositions(length, vocab_size):
        ways = math.factorial(length)
        for count in counts:
            ways //= math.factorial(count)
        answers: dict[int, int] = {}
        for count in counts:
            if count:
                answers[count - 1] = answers.get(count - 1, 0) + count  # letters with that count
        total += Fraction(ways * max(answers.values()), length * vocab_size**length)
    return total


def _compositions(total: int, parts: int):
    """Every tuple of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)
