"""Repeated segments: next-token prediction that rewards copying from the context.

Taught in the chapter "Induction heads" (``docs/chapters/induction-heads.md``).

A sequence is ``max_len`` random letters in which one segment of ``min_repeat`` to
``max_repeat`` letters appears twice::

    position  0 1 2 3 4 5 6 7 8 9 ...
    tokens    Q D K F S B M K F S B A ...     the segment K F S B, at 2 and then at 7

The model predicts every next token. Outside the repeat a letter is a fresh random draw, so
nothing beats chance, ``ln V``. Inside the repeat, after its first letter, the next letter
can be read off the earlier occurrence: find where the current letter appeared before and
copy the letter that followed it. Only that copy can bring the loss there below chance.

So that copying cannot be replaced by memorising which letter follows which, the ordered
pairs of letters are split once: a quarter of each letter's successors are *held out*
([`held_out_pairs`][attnprimer.tasks.induction.held_out_pairs]). A training segment only ever
steps along the other pairs; the chapter's tests use segments that step only along held-out
pairs, letters that never stood next to each other in any training segment.

Positions count from 0. Shape legend: B batch, S sequence length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import torch

from attnprimer.models.attention_only import AttentionOnly, Snapshots
from attnprimer.tasks.base import Batch, Task

__all__ = ["HELD_OUT_SHARE", "InductionTask", "Repeats", "held_out_pairs"]

HELD_OUT_SHARE = 0.1
"""The share of each letter's possible successors held out of every training segment."""

SPLIT_SEED = 0
"""The seed of the split of the letter pairs: one split for every model and test."""


def held_out_pairs(vocab_size: int) -> torch.Tensor:
    """(V + 1, V + 1) bool: ``[a, b]`` is True when the pair "a then b" is held out.

    Each letter keeps ``HELD_OUT_SHARE`` of the other letters as held-out successors (at least
    one); a letter is never its own successor in a segment, and the blank is in no pair.

    Examples:
        >>> held = held_out_pairs(20)                 # two of each letter's 19 successors
        >>> held.shape, held.sum(dim=1).tolist()[:5]
        (torch.Size([21, 21]), [0, 2, 2, 2, 2])
        >>> bool(held.diagonal().any())
        False
    """
    generator = torch.Generator().manual_seed(SPLIT_SEED)
    held = torch.zeros(vocab_size + 1, vocab_size + 1, dtype=torch.bool)
    count = max(1, round(HELD_OUT_SHARE * (vocab_size - 1)))
    for letter in range(1, vocab_size + 1):
        others = [other for other in range(1, vocab_size + 1) if other != letter]
        order = torch.randperm(len(others), generator=generator)[:count]
        held[letter, [others[int(index)] for index in order]] = True
    return held


class Repeats(NamedTuple):
    """Sequences with a repeated segment, and where it is.

    Attributes:
        tokens: (B, S) letters 1..V.
        first: (B,) where the segment starts the first time.
        repeat: (B,) where it starts the second time.
        length: (B,) its length.
    """

    tokens: torch.Tensor
    first: torch.Tensor
    repeat: torch.Tensor
    length: torch.Tensor

    def predicted(self, start: torch.Tensor) -> torch.Tensor:
        """(B, S - 1) bool over the next-token predictions: those of letters 1.. of the
        segment starting at ``start`` (prediction t reads position t, predicts t + 1)."""
        t = torch.arange(self.tokens.shape[1] - 1)  # (S - 1,)
        return (t >= start[:, None]) & (t <= (start + self.length - 2)[:, None])

    def in_repeat(self) -> torch.Tensor:
        """(B, S - 1): the predictions inside the repeat, which copying can get right."""
        return self.predicted(self.repeat)

    def in_first(self) -> torch.Tensor:
        """(B, S - 1): the same predictions in the first occurrence, which nothing can."""
        return self.predicted(self.first)


@dataclass(frozen=True)
class InductionTask(Task):
    """Predict the next letter of random letters with one segment repeated.

    Args:
        max_len: S, letters per sequence.
        vocab_size: V, the letters.
        hidden: D, the model's width.
        heads: H, heads per layer.
        layers: attention layers (2, or 1 for the control).
        min_repeat: the shortest segment.
        max_repeat: the longest segment of training.
        snapshot_every: training steps between two saved copies of the parameters.
        snapshots: how many copies (steps 0, snapshot_every, ...).

    Examples:
        >>> task = InductionTask()
        >>> batch = task.repeats(2, torch.Generator().manual_seed(0))
        >>> batch.tokens.shape, bool((batch.length >= 4).all() and (batch.length <= 12).all())
        (torch.Size([2, 32]), True)
        >>> row = batch.tokens[0]; a, b, m = batch.first[0], batch.repeat[0], batch.length[0]
        >>> torch.equal(row[a:a + m], row[b:b + m]) and bool(b >= a + m)
        True
    """

    name = "induction"
    description = "predict the next letter; one segment of the sequence is repeated"
    train_defaults: ClassVar[dict] = {"steps": 2000, "batch_size": 64, "lr": 3e-3,
                                      "schedule": "constant"}

    max_len: int = field(default=32, metadata={"help": "letters per sequence S"})
    vocab_size: int = field(default=20, metadata={"help": "number of letters V"})
    hidden: int = field(default=32, metadata={"help": "model width D"})
    heads: int = field(default=2, metadata={"help": "heads per layer"})
    layers: int = field(default=2, metadata={"help": "attention layers"})
    min_repeat: int = field(default=4, metadata={"help": "shortest repeated segment"})
    max_repeat: int = field(default=12, metadata={"help": "longest repeated segment"})
    snapshot_every: int = field(default=50, metadata={"help": "steps between snapshots"})
    snapshots: int = field(default=40, metadata={"help": "snapshots kept"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 2 <= self.min_repeat <= self.max_repeat or 2 * self.max_repeat > self.max_len:
            raise ValueError(f"need 2 <= min_repeat <= max_repeat <= max_len / 2, got "
                             f"{self.min_repeat}, {self.max_repeat}, {self.max_len}")

    @property
    def num_classes(self) -> int:
        return self.vocab_size + 1

    def output_labels(self) -> list[str]:
        return [f"after {position}" for position in range(self.max_len - 1)]

    def describe_output(self, values: torch.Tensor) -> str:
        """The predicted next letters, ``_`` for a blank: ``"M A E _"``."""
        return " ".join("_" if int(value) == 0 else self.alphabet[int(value)]
                        for value in values)

    # --8<-- [start:repeats]
    def repeats(self, batch_size: int, generator: torch.Generator, *,
                lengths: tuple[int, int] | None = None,
                pairs: str = "training") -> Repeats:
        """Random letters with one segment written twice, and where it is.

        Args:
            lengths: the shortest and longest segment (default: the training range).
            pairs: ``"training"``: the segment steps only along training pairs;
                ``"held-out"``: only along held-out pairs.
        """
        low, high = lengths or (self.min_repeat, self.max_repeat)
        if pairs not in ("training", "held-out") or not 2 <= low <= high <= self.max_len // 2:
            raise ValueError(f"pairs must be 'training' or 'held-out' and 2 <= lengths <= "
                             f"{self.max_len // 2}; got {pairs!r}, {(low, high)}")
        size, letters = self.max_len, self.vocab_size
        tokens = torch.randint(1, letters + 1, (batch_size, size), generator=generator)
        length = torch.randint(low, high + 1, (batch_size,), generator=generator)
        # first start a in 0..S-2m, second start b in a+m..S-m: (B,)
        first = (torch.rand(batch_size, generator=generator) * (size - 2 * length + 1)).long()
        room = size - length - (first + length) + 1
        repeat = first + length + (torch.rand(batch_size, generator=generator) * room).long()
        segment = self._walk(batch_size, high, generator, held_out=pairs == "held-out")
        for j in range(high):  # letter j of the segment, written at a + j and b + j
            inside = j < length  # (B,)
            rows = torch.nonzero(inside).squeeze(1)
            tokens[rows, first[rows] + j] = segment[rows, j]
            tokens[rows, repeat[rows] + j] = segment[rows, j]
        return Repeats(tokens, first, repeat, length)
    # --8<-- [end:repeats]

    def _walk(self, batch_size: int, length: int, generator: torch.Generator, *,
              held_out: bool) -> torch.Tensor:
        """(B, length) letters, each one a successor of the last along the allowed pairs."""
        held = held_out_pairs(self.vocab_size)
        allowed = held.clone() if held_out else ~held
        allowed[0] = False
        allowed[:, 0] = False
        allowed.fill_diagonal_(False)
        walk = [torch.randint(1, self.vocab_size + 1, (batch_size,), generator=generator)]
        for _ in range(length - 1):
            choices = allowed[walk[-1]].float()  # (B, V + 1)
            walk.append(torch.multinomial(choices, 1, generator=generator).squeeze(1))
        return torch.stack(walk, dim=1)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        tokens = self.repeats(batch_size, generator).tokens
        return Batch(tokens[:, :-1], tokens[:, 1:])  # read 0..S-2, predict 1..S-1

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        """The next letter of each position (B, L): the input shifted by one, a blank after
        the last letter (what follows it is not known)."""
        return torch.cat([inputs[:, 1:], torch.zeros_like(inputs[:, :1])], dim=1)

    def build_model(self) -> Snapshots:
        model = AttentionOnly(self.vocab_size + 1, self.hidden, self.heads, self.layers,
                              self.max_len)
        return Snapshots(model, every=self.snapshot_every, count=self.snapshots)

    def encode(self, text: str) -> torch.Tensor:
        """Letters to token ids (L,), no padding: ``"ABCAB"`` -> ``[1, 2, 3, 1, 2]``."""
        text = text.strip().upper()
        if not 1 <= len(text) <= self.max_len - 1:
            raise ValueError(f"write 1 to {self.max_len - 1} letters; got {len(text)}")
        if " " in text:
            raise ValueError("letters only, no spaces")
        return self._tokens(text)
