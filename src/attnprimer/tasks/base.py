"""What every toy task provides.

Used by every chapter, from "RNN recap" (``docs/chapters/rnn-recap.md``) on.

A task is a frozen dataclass whose fields are its settings (sequence length,
vocabulary, model size). It samples batches from an explicit
``torch.Generator``, builds its model, and turns letters into token ids and
back. Token 0 is the blank; tokens 1..V are the letters A, B, C, ...

Every model answers with a [`ModelOutput`][attnprimer.models.ModelOutput]: logits over
the classes of each output step, and the attention weights it used, by name,
so that the CLI and the figures can show them.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["BLANK", "Batch", "Task"]

BLANK = " "
"""The character that stands for token 0, the blank."""


class Batch(NamedTuple):
    """A batch of examples: ``inputs`` (B, S) token ids, ``targets`` (B, T) class ids."""

    inputs: torch.Tensor
    targets: torch.Tensor


@dataclass(frozen=True)
class Task:
    """Base class of the toy tasks. Subclasses are frozen dataclasses of their settings."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    train_defaults: ClassVar[dict[str, Any]] = {}
    """Training settings (TrainConfig fields) this task uses unless told otherwise."""
    teacher_forced: ClassVar[bool] = False
    """Whether the model takes the targets too, ``model(inputs, targets)``, and then feeds
    each output step the right previous output (teacher forcing) instead of its own guess."""

    max_len: int = field(default=10, metadata={"help": "input length S"})
    vocab_size: int = field(default=3, metadata={"help": "number of letters V (plus the blank)"})

    def __post_init__(self) -> None:
        for setting in fields(self):
            value = getattr(self, setting.name)
            if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
                raise ValueError(f"{setting.name} must be positive, got {value}")
        if self.vocab_size > len(string.ascii_uppercase):
            raise ValueError(f"vocab_size must be at most 26, got {self.vocab_size}")

    @property
    def alphabet(self) -> str:
        """The characters of tokens 0..V: the blank, then the letters."""
        return BLANK + string.ascii_uppercase[: self.vocab_size]

    @property
    def num_classes(self) -> int:
        """C, the number of classes of each output step."""
        raise NotImplementedError

    def output_labels(self) -> list[str]:
        """A short name for each output step, e.g. ``["A", "B", "C"]``."""
        raise NotImplementedError

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Draw a batch of random examples from ``generator``."""
        raise NotImplementedError

    def build_model(self) -> nn.Module:
        """A freshly initialised model for this task (seed torch first for repeatability)."""
        raise NotImplementedError

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        """The correct outputs (B, T) for inputs (B, S)."""
        raise NotImplementedError

    def at_length(self, length: int) -> Task:
        """The same task on inputs of another length (the length-generalisation tests)."""
        return replace(self, max_len=length)

    def describe_output(self, values: torch.Tensor) -> str:
        """One example's outputs (T,) as text, e.g. ``"A=2  B=1  C=0"``."""
        return "  ".join(f"{label}={int(value)}"
                         for label, value in zip(self.output_labels(), values, strict=True))

    def step_labels(self, values: torch.Tensor) -> list[str]:
        """A label for each output step holding ``values`` (T,), e.g. ``["A = 2", ...]``."""
        return [f"{label} = {int(value)}"
                for label, value in zip(self.output_labels(), values, strict=True)]

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """The training loss on ``batch``: cross-entropy over every output step."""
        logits = model(batch.inputs).logits  # (B, T, C)
        return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten())  # mean over B * T

    def correct(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """(B, T) bool: which output steps are right."""
        return predictions == targets

    def encode(self, text: str) -> torch.Tensor:
        """Turn letters and spaces into token ids (S,), padding with blanks to ``max_len``.

        Raises:
            ValueError: a character outside the alphabet, or a text longer than ``max_len``.
        """
        if len(text) > self.max_len:
            raise ValueError(f"input has {len(text)} characters; max_len is {self.max_len}")
        return self._tokens(text.ljust(self.max_len, BLANK))

    def _tokens(self, text: str) -> torch.Tensor:
        """Token ids (S,) of ``text``, which may use only the alphabet."""
        unknown = sorted({char for char in text if char not in self.alphabet})
        if unknown:
            raise ValueError(
                f"input may only use the letters {self.alphabet[1:]!r} and spaces (blanks); "
                f"got {''.join(unknown)!r}"
            )
        return torch.tensor([self.alphabet.index(char) for char in text])

    def decode(self, tokens: torch.Tensor) -> str:
        """Turn token ids (S,) back into a string; blanks become spaces."""
        return "".join(self.alphabet[int(token)] for token in tokens)
