"""Grouped-query attention: fewer key/value heads than query heads.

Taught in the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

A [key/value cache][attnprimer.kv_cache] holds, per layer and per position, one key and one
value of size Dh for every head: 2 x H x Dh numbers, as many as the model dimension twice.
During decoding that cache, not the weights, is what grows with the sequence and the batch.
*Multi-query attention* (Shazeer, 2019) keeps H query heads but only one key head and one value
head, which every query head shares; *grouped-query attention* (Ainslie et al., 2023) takes the
middle way, G key/value heads, each shared by a group of H / G query heads. The cache shrinks
by H / G; G = H is multi-head attention again, G = 1 multi-query.

* [`grouped_attention`][attnprimer.grouped_query.grouped_attention]: the attention itself, on
  queries (B, H, L, Dh) and keys and values (B, G, S, Dh). It copies the G heads out to H with
  ``repeat_interleave``, which is readable but spends memory and traffic of multi-head size at
  every step; kernels written for grouped-query attention index the shared head instead;
* [`GroupedQueryAttention`][attnprimer.grouped_query.GroupedQueryAttention]: the layer, with an
  optional [`LayerCache`][attnprimer.kv_cache.LayerCache], and
  [`from_multihead`][attnprimer.grouped_query.GroupedQueryAttention.from_multihead], which
  builds one from a [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention] by averaging
  the key and value heads of each group (the paper's conversion; exact when G = H);
* [`cache_bytes_per_token`][attnprimer.grouped_query.cache_bytes_per_token]: what the cache of a
  stack of such layers holds per position, counted from the sizes of the tensors it stores.

Shape legend: B batch, L query length, S key length, D model dim, H query heads, G key/value
heads, Dh = D / H head dim.
"""

from __future__ import annotations

import torch
from torch import nn

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.kv_cache import LayerCache
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads

__all__ = ["GroupedQueryAttention", "cache_bytes_per_token", "grouped_attention"]


# --8<-- [start:grouped_attention]
def grouped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      mask: torch.Tensor | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of H query heads over G key/value heads, G dividing H.

    Query head h reads key/value head h // (H / G), as PyTorch's
    ``F.scaled_dot_product_attention(..., enable_gqa=True)`` does.

    Args:
        q: (B, H, L, Dh).
        k: (B, G, S, Dh).
        v: (B, G, S, Dh).
        mask: bool, broadcastable to (B, H, L, S); True = may attend.

    Returns:
        ``(context, weights)``: context (B, H, L, Dh) and weights (B, H, L, S).

    Examples:
        >>> q, k = torch.randn(2, 8, 5, 4), torch.randn(2, 2, 5, 4)   # H = 8, G = 2
        >>> context, weights = grouped_attention(q, k, k)
        >>> context.shape, weights.shape
        (torch.Size([2, 8, 5, 4]), torch.Size([2, 8, 5, 5]))
    """
    heads, groups = q.shape[1], k.shape[1]
    if k.shape[1] != v.shape[1] or heads % groups:
        raise ValueError(f"key and value need the same number G of heads, dividing the "
                         f"H = {heads} query heads: key {tuple(k.shape)}, "
                         f"value {tuple(v.shape)}")
    # Each key/value head serves H / G query heads in a row: (B, G, S, Dh)
    # -> (B, H, S, Dh), head g copied to heads g * H/G .. (g + 1) * H/G - 1
    k = k.repeat_interleave(heads // groups, dim=1)  # (B, H, S, Dh)
    v = v.repeat_interleave(heads // groups, dim=1)  # (B, H, S, Dh)
    return scaled_dot_product_attention(q, k, v, mask)  # (B,H,L,Dh), (B,H,L,S)
# --8<-- [end:grouped_attention]


class GroupedQueryAttention(nn.Module):
    """Multi-head attention with G key/value heads shared by H query heads.

    Args:
        embed_dim: D.
        num_heads: H, the query heads; must divide D.
        num_kv_heads: G, the key/value heads; must divide H. G = H is
            [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention], G = 1 is
            multi-query attention.
        bias: whether the four projections have biases.

    Examples:
        >>> attention = GroupedQueryAttention(embed_dim=16, num_heads=4, num_kv_heads=2)
        >>> attention.key_proj.weight.shape            # G x Dh = 2 x 4 outputs, not D = 16
        torch.Size([8, 16])
        >>> output, weights = attention(torch.randn(3, 5, 16))
        >>> output.shape, weights.shape                # (B, L, D), (B, H, L, S)
        (torch.Size([3, 5, 16]), torch.Size([3, 4, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, num_kv_heads: int, *,
                 bias: bool = True) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"embed_dim must be a positive multiple of num_heads, "
                             f"got embed_dim={embed_dim}, num_heads={num_heads}")
        if num_kv_heads <= 0 or num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads must divide num_heads={num_heads}, "
                             f"got {num_kv_heads}")
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        kv_dim = num_kv_heads * (embed_dim // num_heads)  # G x Dh
        self.query_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.key_proj = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.value_proj = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)

    # --8<-- [start:forward]
    def forward(self, query: torch.Tensor, key: torch.Tensor | None = None,
                value: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, *,
                cache: LayerCache | None = None):
        """Attend from query (B, L, D) over key and value (B, S, D) (default: query).

        mask: bool, (L, S), (B, L, S) or (B, H, L, S). With a ``cache``, the new
        keys and values (B, G, L, Dh) are appended to it and the queries attend
        over everything it holds. Returns output (B, L, D), weights (B, H, L, S).
        """
        key = query if key is None else key
        value = key if value is None else value
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # the same for every head: (B, 1, L, S)
        q = split_heads(self.query_proj(query), self.num_heads)  # (B, H, L, Dh)
        k = split_heads(self.key_proj(key), self.num_kv_heads)  # (B, G, S, Dh)
        v = split_heads(self.value_proj(value), self.num_kv_heads)  # (B, G, S, Dh)
        if cache is not None:  # only G heads are kept: H / G times less
            k, v = cache.append(k, v)  # (B, G, S_cached + S, Dh)
        context, weights = grouped_attention(q, k, v, mask)  # (B, H, L, Dh)
        return self.out_proj(merge_heads(context)), weights  # (B, L, D)
    # --8<-- [end:forward]

    @classmethod
    def from_multihead(cls, module: MultiHeadAttention,
                       num_kv_heads: int | None = None) -> GroupedQueryAttention:
        """A copy of ``module`` with G key/value heads, each the mean of its group's H / G.

        Ainslie et al. (2023) convert a trained multi-head checkpoint this way, then train it
        a little more. With G = H (the default) nothing is averaged and the copy computes
        exactly what ``module`` does.

        Examples:
            >>> multihead = MultiHeadAttention(embed_dim=8, num_heads=2)
            >>> copy = GroupedQueryAttention.from_multihead(multihead)
            >>> x = torch.randn(1, 4, 8)
            >>> torch.equal(copy(x)[0], multihead(x)[0])
            True
        """
        heads = module.num_heads
        groups = heads if num_kv_heads is None else num_kv_heads
        has_bias = module.query_proj.bias is not None
        copy = cls(module.embed_dim, heads, groups, bias=has_bias)
        copy = copy.to(module.query_proj.weight.dtype)
        head_dim = module.embed_dim // heads

        def pooled(weight: torch.Tensor) -> torch.Tensor:
            # Rows of head h are h*Dh .. (h+1)*Dh - 1: (H*Dh, ...) -> (G, H/G, Dh, ...)
            grouped = weight.reshape(groups, heads // groups, head_dim, *weight.shape[1:])
            return grouped.mean(dim=1).reshape(groups * head_dim, *weight.shape[1:])

        with torch.no_grad():
            for name in ("query_proj", "out_proj"):
                getattr(copy, name).load_state_dict(getattr(module, name).state_dict())
            for name in ("key_proj", "value_proj"):
                source, target = getattr(module, name), getattr(copy, name)
                target.weight.copy_(pooled(source.weight))
                if has_bias:
                    target.bias.copy_(pooled(source.bias))
        return copy


@torch.no_grad()
def cache_bytes_per_token(dim: int, heads: int, kv_heads: int, layers: int, *,
                          positions: int = 64, dtype: torch.dtype = torch.float32) -> float:
    """Bytes of key/value cache per position for a stack of ``layers`` attention layers.

    Counted from the cache, not computed from a formula (and not a memory measurement):
    ``positions`` random vectors are fed one at a time through ``layers``
    [`GroupedQueryAttention`][attnprimer.grouped_query.GroupedQueryAttention]
    layers with caches (B = 1), and the bytes the caches then hold are divided by the
    positions. The formula they should match is 2 x layers x G x Dh x bytes per number.

    Examples:
        >>> cache_bytes_per_token(dim=64, heads=8, kv_heads=8, layers=2)   # 2*2*8*8*4
        1024.0
        >>> cache_bytes_per_token(dim=64, heads=8, kv_heads=1, layers=2)   # multi-query
        128.0
    """
    generator = torch.Generator().manual_seed(0)
    stack = [GroupedQueryAttention(dim, heads, kv_heads).to(dtype) for _ in range(layers)]
    caches = [LayerCache() for _ in stack]
    for _ in range(positions):
        x = torch.randn(1, 1, dim, generator=generator, dtype=dtype)  # (B, 1, D)
        for attention, cache in zip(stack, caches, strict=True):
            x = x + attention(x, cache=cache)[0]  # (B, 1, D)
    return sum(cache.nbytes for cache in caches) / positions
