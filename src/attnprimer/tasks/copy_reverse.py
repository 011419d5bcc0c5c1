"""Copy or reverse, trained short and tested long: the length-generalisation chapter's task.

Taught in the chapter "Train short, test long" (``docs/chapters/length-generalisation.md``).

The input is 1 to ``max_len`` letters; the output is the same letters in order (``copy``) or
backwards (``reverse``), then the end token. Inputs are padded on the *left*, for the
decoder-only model of [`attnprimer.position_schemes`][attnprimer.position_schemes]::

    input   "  ABC"      (max_len 5: two pads, then the letters)
    output  "CBA."       (reverse; "." marks the end), then padding

Outputs, scoring and decoding are the reversal task's
([`ReversalTask`][attnprimer.tasks.reversal.ReversalTask]): teacher-forced cross-entropy over
the real output steps, an output step after the end counts as right. A model is trained on
lengths up to ``max_len`` and tested beyond with
[`at_length`][attnprimer.tasks.copy_reverse.CopyReverseTask.at_length].
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import torch
from torch.nn import functional as F

from attnprimer.position_schemes import PAD, POSITION_SCHEMES, SchemeDecoder
from attnprimer.tasks.base import Batch, Task
from attnprimer.tasks.reversal import ReversalTask

__all__ = ["OPERATIONS", "CopyReverseTask"]

OPERATIONS = ("copy", "reverse")
"""What the output does with the input, by name."""


@dataclass(frozen=True)
class CopyReverseTask(Task):
    """Copy or reverse a sequence of letters with a decoder-only Transformer.

    Args:
        max_len: the longest input; inputs have ``min_len`` to ``max_len`` letters.
        min_len: the shortest input.
        vocab_size: the number of letters.
        operation: ``copy`` or ``reverse``.
        pos_enc: the position scheme (``none``, ``sinusoidal``, ``relative``, ``alibi``,
            ``rotary``).
        dim: D, the model dimension.
        heads: H, attention heads per layer.
        layers: blocks in the stack.

    Examples:
        >>> task = CopyReverseTask(max_len=5)
        >>> inputs = task.encode("ABC")
        >>> inputs.tolist(), task.decode(inputs)
        ([0, 0, 1, 2, 3], 'ABC')
        >>> task.decode_output(task.targets_for(inputs[None])[0])
        'CBA.'
        >>> task.at_length(7).sample(2, torch.Generator()).inputs.shape
        torch.Size([2, 7])
        >>> task.encode("ABCDEFG").shape                  # longer than max_len: kept whole
        torch.Size([7])
    """

    name: ClassVar[str] = "copy-reverse"
    description: ClassVar[str] = "copy or reverse the input, with a decoder-only Transformer"
    train_defaults: ClassVar[dict] = {"steps": 1500, "lr": 1e-2, "batch_size": 64,
                                      "schedule": "warmup-cosine"}
    teacher_forced: ClassVar[bool] = True

    max_len: int = field(default=8, metadata={"help": "the longest input (letters)"})
    vocab_size: int = field(default=8, metadata={"help": "number of letters"})
    min_len: int = field(default=1, metadata={"help": "the shortest input (letters)"})
    operation: str = field(default="reverse", metadata={"help": "what the output does",
                                                        "choices": OPERATIONS})
    pos_enc: str = field(default="none", metadata={"help": "the position scheme",
                                                   "choices": POSITION_SCHEMES})
    dim: int = field(default=32, metadata={"help": "model dimension D"})
    heads: int = field(default=4, metadata={"help": "attention heads H"})
    layers: int = field(default=2, metadata={"help": "blocks in the stack"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_len > self.max_len:
            raise ValueError(f"min_len ({self.min_len}) is above max_len ({self.max_len})")
        if self.operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}, "
                             f"got {self.operation!r}")
        if self.pos_enc not in POSITION_SCHEMES:
            raise ValueError(f"pos_enc must be one of {', '.join(POSITION_SCHEMES)}, "
                             f"got {self.pos_enc!r}")
        if self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be a multiple of heads ({self.heads})")

    # The reversal task's outputs, scoring and decoding.
    alphabet = ReversalTask.alphabet
    end = ReversalTask.end
    num_classes = ReversalTask.num_classes
    output_labels = ReversalTask.output_labels
    correct = ReversalTask.correct
    decode = ReversalTask.decode
    describe_output = ReversalTask.describe_output
    step_labels = ReversalTask.step_labels
    decode_output = ReversalTask.decode_output

    def targets_for(self, inputs: torch.Tensor) -> torch.Tensor:
        """The letters, in order or backwards, then the end, then padding: (B, S + 1)."""
        batch, length = inputs.shape
        letters = (inputs != PAD).sum(dim=1, keepdim=True)  # (B, 1): n
        steps = torch.arange(length + 1)[None, :]  # (1, T)
        if self.operation == "reverse":  # step t reads column S - 1 - t
            source = length - 1 - steps
        else:  # step t reads column S - n + t
            source = length - letters + steps
        targets = inputs.gather(1, source.clamp(0, length - 1).expand(batch, -1))
        targets = targets.masked_fill(steps >= letters, PAD)  # (B, T)
        return targets.masked_fill(steps == letters, self.end)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        lengths = torch.randint(self.min_len, self.max_len + 1, (batch_size,), generator=generator)
        letters = torch.randint(1, self.vocab_size + 1, (batch_size, self.max_len),
                                generator=generator)
        # Padding on the left: column j is a letter when j >= S - n
        pads = torch.arange(self.max_len)[None, :] < (self.max_len - lengths)[:, None]
        inputs = letters.masked_fill(pads, PAD)
        return Batch(inputs, self.targets_for(inputs))

    def build_model(self) -> SchemeDecoder:
        return SchemeDecoder(num_outputs=self.num_classes, dim=self.dim, heads=self.heads,
                             layers=self.layers, scheme=self.pos_enc, max_offset=self.max_len)

    def loss(self, model, batch: Batch) -> torch.Tensor:
        """Teacher-forced cross-entropy over the real output steps (padding ignored)."""
        logits = model(batch.inputs, batch.targets).logits  # (B, T, C)
        return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=PAD)

    def encode(self, text: str) -> torch.Tensor:
        """Letters -> token ids, padded on the left to ``max_len``. Longer inputs than
        ``max_len`` are kept whole: testing beyond the training lengths is the point."""
        if not text or " " in text:
            raise ValueError(f"the input is 1 letter or more, no spaces; got {text!r}")
        return F.pad(self._tokens(text), (max(0, self.max_len - len(text)), 0), value=PAD)

    def at_length(self, length: int) -> CopyReverseTask:
        """Inputs of exactly ``length`` letters (no padding), the same model settings.

        The model is built from ``max_len`` (the relative bias's offsets): build it from the
        training task, and sample test inputs from this one.
        """
        return replace(self, min_len=length, max_len=length)
