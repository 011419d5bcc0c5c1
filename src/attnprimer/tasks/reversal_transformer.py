"""Reversal, learned by Transformers: the RNN chapters' task, data and scoring, another model.

Taught in the chapter "The Transformer" (``docs/chapters/transformer.md``).

[`ReversalTransformerTask`][attnprimer.tasks.reversal_transformer.ReversalTransformerTask]
is [`ReversalTask`][attnprimer.tasks.reversal.ReversalTask] with a Transformer in place of the
GRU encoder-decoder. It samples, pads, scores and decodes exactly as the parent class does, so
the same seed gives the same training batches and the same held-out sequences as the RNN
models, and the Transformers are compared with them on identical inputs. Two architectures
([`attnprimer.transformer`][attnprimer.transformer]):

* ``encoder-decoder``: the input is encoded, the decoder writes the reversal;
* ``decoder-only``: one causal stack reads ``input, separator`` and writes the reversal after
  it. Its loss covers the output steps only: the model is never asked to predict its input.

The parent's GRU settings (``hidden``, ``decoder``, ``score``, ``bidirectional``) are inherited
with the class and must stay at their defaults: they describe no part of a Transformer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

from torch import nn

from attnprimer.models.no_residual import DecoderOnlyWithoutResidual, TransformerWithoutResidual
from attnprimer.tasks.reversal import ReversalTask
from attnprimer.transformer import DecoderOnly, Transformer

__all__ = ["ARCHITECTURES", "ReversalTransformerTask"]

ARCHITECTURES = ("encoder-decoder", "decoder-only")
"""The Transformers, by name."""

_RNN_SETTINGS = ("hidden", "decoder", "score", "bidirectional")


@dataclass(frozen=True)
class ReversalTransformerTask(ReversalTask):
    """Reverse a sequence of letters with a Transformer.

    Args:
        architecture: ``encoder-decoder`` or ``decoder-only``.
        dim: D, the model dimension.
        heads: H, attention heads per attention layer.
        layers: blocks in each stack.
        pre_norm: pre-LN blocks instead of the original post-LN.
        residual: blocks with residual connections (``False``: the chapter's ablation).

    Examples:
        >>> task = ReversalTransformerTask(architecture="decoder-only")
        >>> model = task.build_model()
        >>> type(model).__name__, task.decode_output(task.targets_for(task.encode("ABC")[None])[0])
        ('DecoderOnly', 'CBA.')
        >>> ReversalTransformerTask(decoder="vanilla")
        Traceback (most recent call last):
        ...
        ValueError: decoder is a setting of the GRU models; a Transformer has none
    """

    name: ClassVar[str] = "reversal-transformer"
    description: ClassVar[str] = "write the input backwards, with a Transformer"
    train_defaults: ClassVar[dict] = {"steps": 500, "lr": 3e-3}

    architecture: str = field(default="encoder-decoder",
                              metadata={"help": "the Transformer", "choices": ARCHITECTURES})
    dim: int = field(default=32, metadata={"help": "model dimension D"})
    heads: int = field(default=4, metadata={"help": "attention heads H"})
    layers: int = field(default=2, metadata={"help": "blocks per stack"})
    pre_norm: bool = field(default=False, metadata={"help": "pre-LN blocks (default post-LN)"})
    residual: bool = field(default=True,
                           metadata={"help": "residual connections (off: the ablation)"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)}, "
                             f"got {self.architecture!r}")
        if self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be a multiple of heads ({self.heads})")
        defaults = {setting.name: setting.default for setting in fields(ReversalTask)}
        for name in _RNN_SETTINGS:
            if getattr(self, name) != defaults[name]:
                raise ValueError(f"{name} is a setting of the GRU models; a Transformer has none")

    def build_model(self) -> nn.Module:
        if self.architecture == "decoder-only":
            stack = DecoderOnly if self.residual else DecoderOnlyWithoutResidual
            return stack(num_outputs=self.num_classes, dim=self.dim, heads=self.heads,
                         layers=self.layers, pre_norm=self.pre_norm)
        model = Transformer if self.residual else TransformerWithoutResidual
        return model(num_tokens=self.vocab_size + 1, num_outputs=self.num_classes,
                     dim=self.dim, heads=self.heads, layers=self.layers,
                     pre_norm=self.pre_norm)
