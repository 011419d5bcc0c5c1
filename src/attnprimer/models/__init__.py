"""The toy tasks' models, one module each, assembled from the concept modules.

Taught in the chapters "Queries, keys and values" (``docs/chapters/qkv.md``), "Self-attention"
(``docs/chapters/self-attention.md``) and "Positional encoding" (``docs/chapters/positional-
encoding.md``).

* [`attnprimer.models.counting`][attnprimer.models.counting]: attention and nothing else
  (the queries, keys and values chapter);
* [`attnprimer.models.difference`][attnprimer.models.difference]: the counting model with
  self-attention over its output steps (the self-attention chapter);
* [`attnprimer.models.partners`][attnprimer.models.partners]: self-attention over tokens, with
  and without learned projections (the self-attention chapter);
* [`attnprimer.models.signal`][attnprimer.models.signal]: one encoder layer with a positional
  encoding (the positional-encoding chapter).

The encoder-decoders of the RNN chapters are in [`attnprimer.rnn`][attnprimer.rnn]. Every
model answers with a [`ModelOutput`][attnprimer.models.ModelOutput]. This file imports no
model, so that a model's cache key covers only the modules it is built from.

Shape legend: B batch, S input length, T output steps (= number of queries),
D hidden size, C classes.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

__all__ = ["ModelOutput"]


class ModelOutput(NamedTuple):
    """What every task's model returns.

    Attributes:
        logits: (B, T, C) unnormalised scores over the C classes of each of the T output steps.
        attention: attention weights by name, e.g. ``{"encoder-decoder": (B, T, S)}``.
    """

    logits: torch.Tensor
    attention: dict[str, torch.Tensor]
