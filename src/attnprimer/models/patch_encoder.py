"""Patches as tokens: an encoder-only Transformer with a class token, a toy Vision Transformer.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``),
its second half, patches as tokens.

Dosovitskiy et al. (2021, "An image is worth 16x16 words") cut an image into patches, embed each
linearly with a learned position, put one learned vector more in front, the *class token*, and
run a Transformer encoder over them all; the class token's final vector alone is classified.
Every patch may attend to every other in every layer: nothing is causal and there is no decoder.
This is that model at toy size, built from the Transformer chapter's encoder blocks
([`attnprimer.transformer.EncoderBlock`][attnprimer.transformer.EncoderBlock]); with
``position=False`` the patches get no position at all, and the model sees a set of patches.

Shape legend: B batch, Hi x Wi image, N patches, L = N + 1 tokens (the class token first),
D model dim, H heads, C classes.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.models import ModelOutput
from attnprimer.patches import PatchEmbedding
from attnprimer.transformer import EncoderBlock, by_head

__all__ = ["PatchEncoder"]


# --8<-- [start:patch_encoder]
class PatchEncoder(nn.Module):
    """A class token and the patches, through pre-LN encoder blocks; the class token is read.

    Args:
        height: Hi, in pixels.
        width: Wi, in pixels.
        patch: P.
        dim: D.
        heads: H.
        layers: encoder blocks.
        num_outputs: C, the classes of each answer.
        steps: T, how many answers the class token gives.
        position: give each patch its 2-D position.

    Examples:
        >>> model = PatchEncoder(height=8, width=24, patch=4, dim=16, heads=2, layers=2,
        ...                      num_outputs=10, steps=2)
        >>> output = model(torch.rand(3, 8, 24))
        >>> output.logits.shape, output.attention["layer 2.1"].shape  # L = 1 + 2 * 6
        (torch.Size([3, 2, 10]), torch.Size([3, 13, 13]))
    """

    def __init__(self, height: int, width: int, patch: int, dim: int,
                 heads: int, layers: int, num_outputs: int, steps: int = 1,
                 *, position: bool = True) -> None:
        super().__init__()
        self.steps, self.num_outputs = steps, num_outputs
        self.embed = PatchEmbedding(patch, height // patch, width // patch,
                                    dim, position=position)
        # One learned vector more, the same for every image: (D,)
        self.class_token = nn.Parameter(torch.randn(dim) * 0.1)
        self.blocks = nn.ModuleList(
            EncoderBlock(dim, heads, 2 * dim, pre_norm=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(dim)  # pre-LN leaves the sum unnormalised
        self.out = nn.Linear(dim, steps * num_outputs)  # (D,) -> (T * C,)

    def forward(self, images: torch.Tensor) -> ModelOutput:
        """images (B, Hi, Wi) -> logits (B, T, C), each head's weights
        (B, L, L)."""
        patches = self.embed(images)  # (B, N, D)
        # The same class token in front of every image's patches: (B, 1, D)
        cls = self.class_token.expand(patches.shape[0], 1, -1)
        x = torch.cat([cls, patches], dim=1)  # (B, L, D): class token at 0
        attention = {}
        for layer, block in enumerate(self.blocks, start=1):
            x, weights = block(x)  # no mask: every token sees every token
            # one entry per head: (B, L, L) each
            attention |= by_head(f"layer {layer}", weights)
        read = self.norm(x[:, 0])  # the class token's vector: (B, D)
        # T answers at once: (B, T * C) -> (B, T, C)
        logits = self.out(read).unflatten(-1, (self.steps,
                                                self.num_outputs))
        return ModelOutput(logits, attention)  # (B, T, C)
# --8<-- [end:patch_encoder]
