"""Show, attend and read: Bahdanau's decoder reading an image cut into patches.

Taught in the chapter "Attention over images" (``docs/chapters/attention-over-images.md``).

Xu et al. (2015, "Show, attend and tell") let a recurrent decoder attend over the parts of an
image, as Bahdanau et al. (2015) had let one attend over the words of a sentence. Here the
"words" are patches: each 4 x 4 patch of the canvas becomes a vector by a linear map of its
pixels plus a learned 2-D position ([`attnprimer.patches.PatchEmbedding`]
[attnprimer.patches.PatchEmbedding]). A 4 x 4 patch holds only a piece of a stroke, so before the
decoder reads them the patches pass once through a self-attention block (the Transformer
chapter's [`EncoderBlock`][attnprimer.transformer.EncoderBlock]), where each patch's vector may
take in its neighbours': Xu et al.'s annotation vectors came from a convolutional network, and
this block is our convolution-free stand-in for it. There is no encoder RNN. The decoder is
the Bahdanau chapter's, unchanged ([`attnprimer.rnn.Decoder`][attnprimer.rnn.Decoder]): at each
output step its state scores every patch with the additive score, and it reads their weighted
average. Its first state comes from the mean of the patches, as Xu et al.'s did.

Shape legend: B batch, Hi x Wi canvas, N patches, D model dim, T output steps, C classes.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.models import ModelOutput
from attnprimer.patches import PatchEmbedding
from attnprimer.rnn import Decoder
from attnprimer.transformer import EncoderBlock

__all__ = ["PatchReader"]


# --8<-- [start:patch_reader]
class PatchReader(nn.Module):
    """Patches in, one class per output step out, with a map over the patches at each step.

    Args:
        height: Hi, in pixels.
        width: Wi, in pixels.
        patch: P.
        dim: D, the patch vectors' and the decoder state's size.
        num_outputs: C, the output classes.
        steps: T, the output steps of greedy decoding.

    Examples:
        >>> model = PatchReader(height=16, width=32, patch=4, dim=8, num_outputs=12, steps=5)
        >>> output = model(torch.rand(2, 16, 32))
        >>> output.logits.shape, output.attention["encoder-decoder"].shape  # N = 4 * 8
        (torch.Size([2, 5, 12]), torch.Size([2, 5, 32]))
    """

    def __init__(self, height: int, width: int, patch: int, dim: int,
                 num_outputs: int, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.embed = PatchEmbedding(patch, height // patch, width // patch,
                                    dim)
        # Self-attention, once: a patch's vector may take in the others'
        self.mix = EncoderBlock(dim, heads=4, hidden=2 * dim, pre_norm=True)
        self.decoder = Decoder(num_outputs, embed_dim=16, memory_dim=dim)

    def forward(self, images: torch.Tensor,
                targets: torch.Tensor | None = None) -> ModelOutput:
        """images (B, Hi, Wi) -> logits (B, T, C), weights over the patches (B, T, N).

        With ``targets`` (B, T) the decoder is teacher-forced; without, greedy.
        """
        # The patches' vectors: (B, N, D)
        memory, _ = self.mix(self.embed(images))
        summary = memory.mean(dim=1)  # (B, D): starts the decoder
        # Every patch may be read: (B, 1, N)
        mask = memory.new_ones(memory.shape[0], 1, memory.shape[1],
                               dtype=torch.bool)
        state = self.decoder.initial_state(summary)  # (B, D)
        token = images.new_full((images.shape[0],), self.decoder.start,
                                dtype=torch.long)  # the start token: (B,)
        keys = self.decoder.keys(memory)  # W_k h, once: (B, N, D)
        steps = self.steps if targets is None else targets.shape[1]
        all_logits, all_weights = [], []
        for step in range(steps):
            # logits (B, C), state (B, D), weights (B, N)
            logits, state, weights = self.decoder.step(
                token, state, memory, summary, mask, keys)
            all_logits.append(logits)
            all_weights.append(weights)
            token = (logits.argmax(dim=-1) if targets is None
                     else targets[:, step])
        return ModelOutput(
            torch.stack(all_logits, dim=1),  # (B, T, C)
            {"encoder-decoder": torch.stack(all_weights,
                                            dim=1)})  # (B, T, N)
# --8<-- [end:patch_reader]
