"""Reversal: write the input backwards. A sequence-to-sequence task whose alignment is known.

Taught in the chapters "RNN recap" (``docs/chapters/rnn-recap.md``) and "Bahdanau attention"
(``docs/chapters/bahdanau.md``).

The input is a sequence of 1 to ``max_len`` letters, padded at the end to
``max_len``; the output is the same letters in reverse order, then an
end-of-sequence token::

    input   "ABCDE"      (then padding)
    output  "EDCBA."     ("." marks the end)

Output step t should read input position n - 1 - t, where n is the input's
length: the correct alignment is an anti-diagonal, so an attention heatmap can
be checked against the truth. Lengths vary, so padding masks matter.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field, replace
from typing import ClassVar

import torch
from torch.nn import functional as F

from attnprimer.rnn import DECODERS, PAD, SCORES, Seq2Seq
from attnprimer.tasks.base import Batch, Task

__all__ = ["ReversalTask", "reversal_alignment"]

END = "."
"""How the end-of-sequence token is written."""


@dataclass(frozen=True)
class ReversalTask(Task):
    """Reverse a sequence of letters.

    Args:
        max_len: the longest input; inputs have 1 to ``max_len`` letters
            (``min_len`` to ``max_len`` with ``min_len`` set).
        min_len: the shortest input.
        vocab_size: the number of letters.
        hidden: the encoder GRU's size per direction.
        decoder: ``vanilla``, ``peeky`` or ``attention``.
        score: the attention decoder's score: ``additive``, ``dot`` or ``general``.
        bidirectional: read the input in both directions.

    Examples:
        >>> task = ReversalTask()
        >>> inputs = task.encode("ABCDE")
        >>> task.decode(inputs)
        'ABCDE'
        >>> task.decode_output(task.targets_for(inputs[None])[0])
        'EDCBA.'
    """

    name = "reversal"
    description = "write the input backwards (a task with a known alignment)"
    train_defaults: ClassVar[dict] = {"steps": 1200, "lr": 1e-2}
    teacher_forced = True

    max_len: int = field(default=10, metadata={"help": "the longest input (letters)"})
    vocab_size: int = field(default=8, metadata={"help": "number of letters"})
    min_len: int = field(default=1, metadata={"help": "the shortest input (letters)"})
    hidden: int = field(default=64, metadata={"help": "encoder GRU size per direction"})
    decoder: str = field(default="attention", metadata={"help": "the decoder",
                                                        "choices": DECODERS})
    score: str = field(default="additive", metadata={"help": "the attention score",
                                                     "choices": SCORES})
    bidirectional: bool = field(default=False, metadata={"help": "a bidirectional encoder"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_len > self.max_len:
            raise ValueError(f"min_len ({self.min_len}) is above max_len ({self.max_len})")
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, got {self.decoder!r}")
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {self.score!r}")

    @property
    def alphabet(self) -> str:
        """Token 0 is padding (shown as a space), then the letters."""
        return " " + string.ascii_uppercase[: self.vocab_size]

    @property
    def end(self) -> int:
        """The end-of-sequence token."""
        return self.vocab_size + 1

    @property
    def num_classes(self) -> int:
        return self.vocab_size + 2  # padding, the letters, the end

    def output_labels(self) -> list[str]:
        return [str(step) for step in range(self.max_len + 1)]

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        lengths = (inputs != PAD).sum(dim=1)  # (B,)
        steps = torch.arange(inputs.shape[1] + 1)  # (T,) with T = S + 1
        source = (lengths[:, None] - 1 - steps[None, :]).clamp(min=0)  # (B, T): n - 1 - t
        targets = inputs.gather(1, source.clamp(max=inputs.shape[1] - 1))
        targets = torch.where(steps[None, :] < lengths[:, None], targets, PAD)
        return targets.masked_fill(steps[None, :] == lengths[:, None], self.end)  # (B, T)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        lengths = torch.randint(self.min_len, self.max_len + 1, (batch_size,), generator=generator)
        letters = torch.randint(1, self.vocab_size + 1, (batch_size, self.max_len),
                                generator=generator)
        inputs = letters.masked_fill(torch.arange(self.max_len)[None, :] >= lengths[:, None], PAD)
        return Batch(inputs, self.targets_for(inputs))

    def build_model(self) -> Seq2Seq:
        return Seq2Seq(num_tokens=self.vocab_size + 1, num_outputs=self.num_classes,
                       embed_dim=32, hidden=self.hidden, kind=self.decoder, score=self.score,
                       bidirectional=self.bidirectional)

    def loss(self, model, batch: Batch) -> torch.Tensor:
        """Teacher-forced cross-entropy over the real output steps (padding ignored)."""
        logits = model(batch.inputs, batch.targets).logits  # (B, T, C)
        return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=PAD)

    def correct(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Right where the prediction matches; steps after the end count as right."""
        return (predictions == targets) | (targets == PAD)

    def encode(self, text: str) -> torch.Tensor:
        if not 1 <= len(text) <= self.max_len or " " in text:
            raise ValueError(f"the input is 1 to {self.max_len} letters, no spaces; got {text!r}")
        tokens = self._tokens(text)
        return F.pad(tokens, (0, self.max_len - len(text)), value=PAD)

    def decode(self, tokens: torch.Tensor) -> str:
        return "".join(self.alphabet[int(token)] for token in tokens if int(token) != PAD)

    def at_length(self, length: int) -> ReversalTask:
        """Inputs of exactly ``length`` letters."""
        return replace(self, min_len=length, max_len=length)

    def describe_output(self, values: torch.Tensor) -> str:
        return self.decode_output(values)

    def step_labels(self, values: torch.Tensor) -> list[str]:
        names = {PAD: "-", self.end: "end"}
        return [f"{step}: {names.get(int(value)) or self.alphabet[int(value)]}"
                for step, value in enumerate(values)]

    def decode_output(self, tokens: torch.Tensor) -> str:
        """Output tokens (T,) as text, up to and including the first end token."""
        text = ""
        for token in tokens.tolist():
            if token == self.end:
                return text + END
            text += self.alphabet[token] if 0 < token <= self.vocab_size else "?"
        return text


def reversal_alignment(length: int, steps: int | None = None) -> torch.Tensor:
    """The correct alignment of reversal: output step t reads input position n - 1 - t.

    Returns:
        (T, n) one-hot rows for the ``n`` letters' output steps (T = n unless ``steps``).

    Examples:
        >>> reversal_alignment(3).int()
        tensor([[0, 0, 1],
                [0, 1, 0],
                [1, 0, 0]], dtype=torch.int32)
    """
    steps = length if steps is None else steps
    return torch.eye(length).flip(1)[:steps]
