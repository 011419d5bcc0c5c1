"""An attention-only Transformer: the Transformer's causal blocks without feed-forward networks.

Taught in the chapter "Induction heads" (``docs/chapters/induction-heads.md``).

Elhage et al. (2021) study Transformers with attention layers and nothing else, because then
everything a model computes is attention: each head reads the *residual stream* (the running
sum of the token's embedding and every earlier head's output) and adds its own output to it.
[`AttentionOnly`][attnprimer.models.attention_only.AttentionOnly] is that model at toy size:
token and learned position embeddings, ``layers`` pre-LN blocks of causal multi-head
self-attention ([`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention] under
[`causal_mask`][attnprimer.masks.causal_mask]), a final norm and a readout over the tokens.

[`Snapshots`][attnprimer.models.attention_only.Snapshots] wraps a model so that it keeps a copy
of its parameters every ``every`` training steps, in a buffer that is saved with its weights:
the chapter watches the model learn from those copies.

Shape legend: B batch, L sequence length, D model dim, H heads, V tokens (plus the blank).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from attnprimer.masks import causal_mask
from attnprimer.models import ModelOutput
from attnprimer.multihead import MultiHeadAttention

__all__ = ["AttentionBlock", "AttentionOnly", "Snapshots"]


# --8<-- [start:block]
class AttentionBlock(nn.Module):
    """Causal self-attention with a pre-LN residual connection: ``x + attention(norm(x))``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attention = MultiHeadAttention(dim, heads)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, L, D) -> x (B, L, D), weights (B, H, L, L)."""
        mask = causal_mask(x.shape[1])  # (L, L): position i sees 0..i
        context, weights = self.attention(self.norm(x), mask=mask)
        return x + context, weights  # the head outputs are added to the stream
# --8<-- [end:block]


# --8<-- [start:model]
class AttentionOnly(nn.Module):
    """Predict each next token of a sequence with ``layers`` attention blocks and nothing else.

    Args:
        tokens: V + 1, the token ids (0 is the blank).
        dim: D.
        heads: H per layer.
        layers: attention blocks.
        max_len: the longest sequence (learned position embeddings).

    Examples:
        >>> model = AttentionOnly(tokens=5, dim=8, heads=2, layers=2, max_len=6)
        >>> output = model(torch.tensor([[1, 2, 3, 1]]))
        >>> output.logits.shape, sorted(output.attention)
        (torch.Size([1, 4, 5]), ['layer 1.1', 'layer 1.2', 'layer 2.1', 'layer 2.2'])
    """

    def __init__(self, tokens: int, dim: int, heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(tokens, dim)
        self.position = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(AttentionBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.readout = nn.Linear(dim, tokens)

    def forward(self, inputs: torch.Tensor) -> ModelOutput:
        """inputs (B, L) -> logits (B, L, V + 1) for the token after each position."""
        length = inputs.shape[1]
        x = self.embed(inputs) + self.position.weight[:length]  # (B, L, D)
        attention = {}
        for layer, block in enumerate(self.blocks, start=1):
            x, weights = block(x)  # (B, L, D), (B, H, L, L)
            for head in range(weights.shape[1]):
                attention[f"layer {layer}.{head + 1}"] = weights[:, head]  # (B, L, L)
        return ModelOutput(self.readout(self.norm(x)), attention)
# --8<-- [end:model]


class Snapshots(nn.Module):
    """A model that keeps a copy of its parameters every ``every`` training steps.

    Each forward pass in training mode is one training step: before the ``n``-th (counted
    from 0) the model has taken ``n`` optimiser steps, and when ``n`` is a multiple of
    ``every`` its parameters are copied into row ``n // every`` of the buffer ``snapshots``
    (``count`` rows: steps 0, every, ..., (count - 1) every). The buffer is saved and loaded
    with the weights; the parameters after the last step are the model's own. A forward pass
    in eval mode counts nothing and copies nothing.

    Examples:
        >>> model = Snapshots(nn.Linear(2, 1), every=2, count=2)
        >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> for _ in range(3):
        ...     optimizer.zero_grad(); model(torch.ones(1, 2)).sum().backward(); optimizer.step()
        >>> model.steps_of_snapshots()
        [0, 2]
        >>> torch.equal(model.snapshot(1).weight, model.model.weight)   # 2 steps, not 3
        False
    """

    def __init__(self, model: nn.Module, every: int, count: int) -> None:
        super().__init__()
        self.model = model
        self.every = every
        size = parameters_to_vector(model.parameters()).numel()
        self.register_buffer("forwards", torch.zeros((), dtype=torch.long))
        self.register_buffer("snapshots", torch.zeros(count, size))

    def forward(self, *args, **kwargs):
        if self.training:
            step = int(self.forwards)
            if step % self.every == 0 and step // self.every < len(self.snapshots):
                self.snapshots[step // self.every] = parameters_to_vector(
                    self.model.parameters()).detach()
            self.forwards += 1
        return self.model(*args, **kwargs)

    def steps_of_snapshots(self) -> list[int]:
        """The training step of each snapshot that was taken."""
        taken = min(len(self.snapshots), -(-int(self.forwards) // self.every))
        return [index * self.every for index in range(taken)]

    def snapshot(self, index: int) -> nn.Module:
        """A copy of the wrapped model with the parameters of snapshot ``index``, in eval mode."""
        model = copy.deepcopy(self.model)
        vector_to_parameters(self.snapshots[index].clone(), model.parameters())
        return model.eval()
