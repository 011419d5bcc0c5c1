"""Partners: every letter must report the digit its partner carries.

Taught in the chapter "Self-attention" (``docs/chapters/self-attention.md``).

The letters come in pairs, A with B, C with D, and so on. A sequence holds every letter once,
in a random order, and each carries a random digit. The output at each position is the digit
carried by that letter's partner::

    input   D3 A7 C0 B2     (A and B are partners, and C and D)
    output  0  2  3  7      D reports C's 0, A reports B's 2, ...

Where the partner stands changes from one sequence to the next, so a token must find it by
what it is, not by where it is: self-attention with no position information can do it, if a
token's query can differ from its key (the chapter's point).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from attnprimer.models.partners import PartnersModel
from attnprimer.tasks.base import Batch, Task

__all__ = ["PartnersTask"]

TOKEN = re.compile(r"([A-Z])(\d)")


@dataclass(frozen=True)
class PartnersTask(Task):
    """Report the digit carried by your partner letter (A-B, C-D, ...).

    Args:
        max_len: S, the number of tokens; always ``vocab_size``: each letter once.
        vocab_size: the number of letters, even (they pair up).
        digits: C, the digits a letter may carry, 0 to ``digits - 1``.
        hidden: D, the model's width.
        projections: learned W_q, W_k, W_v; without them each token's query is its key.

    Examples:
        >>> task = PartnersTask()
        >>> task.targets_for(task.encode("D3 A7 C0 B2 E1 F5 H8 G4")[None]).tolist()
        [[0, 2, 3, 7, 5, 1, 4, 8]]
        >>> task.decode(task.encode("D3 A7 C0 B2 E1 F5 H8 G4"))
        'D3 A7 C0 B2 E1 F5 H8 G4'
    """

    name = "partners"
    description = "give each letter the digit its partner letter carries"
    train_defaults: ClassVar[dict] = {"steps": 1500, "batch_size": 64, "lr": 1e-2}

    max_len: int = field(default=8, metadata={"help": "tokens per sequence (= vocab_size)"})
    vocab_size: int = field(default=8, metadata={"help": "number of letters (even)"})
    digits: int = field(default=10, metadata={"help": "digits a letter may carry"})
    hidden: int = field(default=16, metadata={"help": "model width D"})
    projections: bool = field(default=True, metadata={"help": "learned W_q, W_k, W_v"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.vocab_size % 2:
            raise ValueError(f"letters pair up: vocab_size must be even, got {self.vocab_size}")
        if self.max_len != self.vocab_size:
            raise ValueError("a sequence holds each letter once: max_len must equal vocab_size")
        if self.digits > 10:
            raise ValueError(f"digits are written 0-9: at most 10, got {self.digits}")

    @property
    def num_classes(self) -> int:
        return self.digits

    def output_labels(self) -> list[str]:
        return [f"position {position}" for position in range(self.max_len)]

    def step_labels(self, values: torch.Tensor) -> list[str]:
        return [f"{position}: {int(value)}" for position, value in enumerate(values)]

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        letters = torch.rand(batch_size, self.max_len, generator=generator).argsort(dim=1)
        digits = torch.randint(self.digits, (batch_size, self.max_len), generator=generator)
        inputs = 1 + letters * self.digits + digits
        return Batch(inputs, self.targets_for(inputs))

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        letters, digits = (inputs - 1) // self.digits, (inputs - 1) % self.digits
        where = letters.argsort(dim=1)                # where[b, letter] = its position
        partner = where.gather(1, letters ^ 1)       # the position of each token's partner
        return digits.gather(1, partner)

    def build_model(self) -> PartnersModel:
        return PartnersModel(letters=self.vocab_size, digits=self.digits, hidden=self.hidden,
                             projections=self.projections)

    def encode(self, text: str) -> torch.Tensor:
        """``"D3 A7 C0 B2 ..."`` to token ids (S,): every letter once, each with a digit."""
        pairs = TOKEN.findall(text.upper())
        letters = sorted(letter for letter, _ in pairs)
        if letters != list(string.ascii_uppercase[: self.vocab_size]):
            raise ValueError(f"write each of the letters {self.alphabet[1:]} once, each with a "
                             f"digit, e.g. 'D3 A7 C0 B2 ...'; got {text!r}")
        if any(int(digit) >= self.digits for _, digit in pairs):
            raise ValueError(f"digits run from 0 to {self.digits - 1}; got {text!r}")
        return torch.tensor([1 + (ord(letter) - ord("A")) * self.digits + int(digit)
                             for letter, digit in pairs])

    def decode(self, tokens: torch.Tensor) -> str:
        return " ".join(f"{string.ascii_uppercase[(int(t) - 1) // self.digits]}"
                        f"{(int(t) - 1) % self.digits}" for t in tokens)
