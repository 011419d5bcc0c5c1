"""Multi-head attention.

Taught in the chapter "Self-attention" (``docs/chapters/self-attention.md``).

One attention head produces one weighted average per query, so it can follow
only one notion of relevance at a time. Multi-head attention (Vaswani et al.,
2017, section 3.2.2) runs H heads side by side: the model dimension D is cut
into H slices of size Dh = D / H after learned projections, each slice attends
on its own, and the H results are concatenated and mixed by an output
projection.

Self-attention is the case ``key = value = query``; cross-attention takes its
keys and values from another sequence, so L and S may differ.

Shape legend: B batch, L query length, S key length, D model dim, H heads,
Dh = D / H head dim.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.dot_product import scaled_dot_product_attention

__all__ = ["MultiHeadAttention", "merge_heads", "split_heads"]


# --8<-- [start:split_merge]
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Cut the model dimension into heads: (B, L, D) -> (B, H, L, Dh).

    Examples:
        >>> x = torch.arange(8.0).reshape(1, 2, 4)   # B=1, L=2, D=4
        >>> split_heads(x, num_heads=2)[0, 1]         # head 1 sees columns 2..3
        tensor([[2., 3.],
                [6., 7.]])
    """
    if x.dim() != 3:
        raise ValueError(f"expected x of shape (B, L, D), got {tuple(x.shape)}")
    batch, length, dim = x.shape
    if dim % num_heads != 0:
        raise ValueError(f"D={dim} is not divisible by num_heads={num_heads}")
    head_dim = dim // num_heads
    x = x.view(batch, length, num_heads, head_dim)  # (B, L, D) -> (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, L, H, Dh) -> (B, H, L, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Concatenate the heads back: (B, H, L, Dh) -> (B, L, D). Undoes
    [`split_heads`][attnprimer.multihead.split_heads].

    Examples:
        >>> x = torch.randn(2, 3, 4)
        >>> torch.equal(merge_heads(split_heads(x, num_heads=2)), x)
        True
    """
    if x.dim() != 4:
        raise ValueError(f"expected x of shape (B, H, L, Dh), got {tuple(x.shape)}")
    batch, num_heads, length, head_dim = x.shape
    x = x.transpose(1, 2)  # (B, H, L, Dh) -> (B, L, H, Dh)
    return x.reshape(batch, length, num_heads * head_dim)  # -> (B, L, D)
# --8<-- [end:split_merge]


class MultiHeadAttention(nn.Module):
    """Multi-head attention for self- and cross-attention, returning per-head weights.

    Args:
        embed_dim: D, the model dimension of the queries and of the output.
        num_heads: H; must divide D.
        key_dim: size of the key inputs, if not D (cross-attention).
        value_dim: size of the value inputs, if not D.
        bias: whether the four projections have biases.

    Examples:
        >>> attention = MultiHeadAttention(embed_dim=8, num_heads=2)
        >>> x = torch.randn(3, 5, 8)                      # B=3, L=S=5, D=8
        >>> output, weights = attention(x)                # self-attention
        >>> output.shape, weights.shape                   # (B, L, D), (B, H, L, S)
        (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
        >>> memory = torch.randn(3, 7, 8)                 # another sequence, S=7
        >>> output, weights = attention(x, memory)        # cross-attention
        >>> weights.shape
        torch.Size([3, 2, 5, 7])
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        key_dim: int | None = None,
        value_dim: int | None = None,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads != 0:
            raise ValueError(
                f"embed_dim must be a positive multiple of num_heads, "
                f"got embed_dim={embed_dim}, num_heads={num_heads}"
            )
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.query_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.key_proj = nn.Linear(key_dim or embed_dim, embed_dim, bias=bias)
        self.value_proj = nn.Linear(value_dim or embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    # --8<-- [start:forward]
    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from every query position over every key position, in H heads.

        Args:
            query: (B, L, D).
            key: (B, S, Dk); defaults to ``query`` (self-attention).
            value: (B, S, Dv); defaults to ``key``.
            mask: bool, True = may attend; (L, S), (B, L, S) or (B, H, L, S).

        Returns:
            ``(output, weights)``: output (B, L, D) and weights (B, H, L, S).
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, tensor in (("query", query), ("key", key), ("value", value)):
            if tensor.dim() != 3:
                raise ValueError(
                    f"expected {name} of shape (B, len, dim), got {tuple(tensor.shape)}")
        if mask is not None and mask.dim() == 3:
            # The same mask for every head: (B, L, S) -> (B, 1, L, S)
            mask = mask.unsqueeze(1)
        heads = self.num_heads
        # Project, then split into heads: (B, L, D) -> (B, H, L, Dh)
        q = split_heads(self.query_proj(query), heads)  # (B, H, L, Dh)
        k = split_heads(self.key_proj(key), heads)  # (B, H, S, Dh)
        v = split_heads(self.value_proj(value), heads)  # (B, H, S, Dh)
        # Every head at once: (B, H, L, Dh), (B, H, L, S)
        context, weights = scaled_dot_product_attention(q, k, v, mask)
        # Merge, then project: (B, H, L, Dh) -> (B, L, D) -> (B, L, D)
        output = self.out_proj(merge_heads(context))
        return output, weights
    # --8<-- [end:forward]

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Build a copy of a ``torch.nn.MultiheadAttention`` with the same weights.

        PyTorch stores the three input projections stacked in one
        ``in_proj_weight`` (3D, D) when keys and values have size D, and
        separately otherwise; both layouts are read. Dropout is not copied.

        Examples:
            >>> reference = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(reference)
            >>> x = torch.randn(1, 4, 8)
            >>> torch.allclose(ours(x)[0], reference(x, x, x)[0], atol=1e-6)
            True
        """
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn have no counterpart here")
        has_bias = module.in_proj_bias is not None
        copy = cls(
            module.embed_dim,
            module.num_heads,
            key_dim=module.kdim,
            value_dim=module.vdim,
            bias=has_bias,
        ).to(module.out_proj.weight.dtype)  # before copying, so float64 weights stay exact
        if module._qkv_same_embed_dim:
            weights = module.in_proj_weight.chunk(3)  # (3D, D) -> 3 x (D, D)
        else:
            weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
        projections = (copy.query_proj, copy.key_proj, copy.value_proj)
        biases = module.in_proj_bias.chunk(3) if has_bias else (None, None, None)
        with torch.no_grad():
            for projection, weight, bias in zip(projections, weights, biases, strict=True):
                projection.weight.copy_(weight)
                if bias is not None:
                    projection.bias.copy_(bias)
            copy.out_proj.weight.copy_(module.out_proj.weight)
            if has_bias:
                copy.out_proj.bias.copy_(module.out_proj.bias)
        return copy
