"""The key/value cache: greedy decoding without recomputing the past.

Taught in the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

[`DecoderOnly`][attnprimer.transformer.DecoderOnly] decodes greedily by running the whole
sequence again for every new token: to write token t it recomputes the vectors of tokens
0..t-1, which have not changed, because under the causal mask no position ever reads a later
one. What a later query needs from an earlier position is only that position's key and value,
in every layer. So keep them: a *key/value cache* (one per layer) holds the keys and values
computed so far, and each step computes the new token's query, key and value, appends the key
and value to the cache, and attends over everything cached.

* [`LayerCache`][attnprimer.kv_cache.LayerCache] and [`KVCache`][attnprimer.kv_cache.KVCache]:
  what is kept, (B, H, S, Dh) keys and values per layer, and which keys are padding;
* [`cached_attention`][attnprimer.kv_cache.cached_attention] and
  [`cached_block`][attnprimer.kv_cache.cached_block]: one layer run on the new positions only;
* [`extend`][attnprimer.kv_cache.extend]: L new tokens through the whole stack. The first call
  (*prefill*) takes the input and the separator in one pass; each later one takes one token;
* [`greedy_with_cache`][attnprimer.kv_cache.greedy_with_cache], and
  [`greedy_without_cache`][attnprimer.kv_cache.greedy_without_cache], the recomputation it
  replaces, for any number of steps.

The L new queries are the *last* L of the S positions, so the causal mask of a cached step is
aligned bottom-right: ``torch.tril(ones(L, S), diagonal=S - L)``.

Shape legend: B batch, L new tokens, S positions so far (cached and new), D model dim, H heads,
Dh = D / H head dim, C output classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads
from attnprimer.transformer import PAD, DecoderOnly, EncoderBlock

__all__ = ["KVCache", "LayerCache", "cached_attention", "cached_block", "extend",
           "greedy_with_cache", "greedy_without_cache"]


# --8<-- [start:cache]
@dataclass
class LayerCache:
    """The keys and values one attention layer has computed so far, (B, Hkv, S, Dh) each.

    Hkv is the number of key/value heads: H for multi-head attention, fewer for
    [grouped-query attention][attnprimer.grouped_query.GroupedQueryAttention].

    Examples:
        >>> cache = LayerCache()
        >>> keys, values = cache.append(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
        >>> keys, values = cache.append(torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4))
        >>> keys.shape, cache.nbytes     # 2 tensors of 1 x 2 x 4 x 4 floats, 4 bytes each
        (torch.Size([1, 2, 4, 4]), 256)
    """

    keys: torch.Tensor | None = None  # (B, Hkv, S, Dh), None before the first
    values: torch.Tensor | None = None  # (B, Hkv, S, Dh)

    def append(self, k: torch.Tensor, v: torch.Tensor):
        """Add the new positions' k, v (B, Hkv, L, Dh); return all (B, Hkv, S, Dh)."""
        if self.keys is None:
            self.keys, self.values = k, v
        else:  # along the positions: (B, Hkv, S - L, Dh) -> (B, Hkv, S, Dh)
            self.keys = torch.cat([self.keys, k], dim=2)
            self.values = torch.cat([self.values, v], dim=2)
        return self.keys, self.values

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        if self.keys is None:
            return 0
        return self.keys.nbytes + self.values.nbytes


@dataclass
class KVCache:
    """One [`LayerCache`][attnprimer.kv_cache.LayerCache] per block, and which of the S
    cached positions are real tokens, (B, S) bool (the input's padding is not).

    Examples:
        >>> model = DecoderOnly(num_outputs=8, dim=16, heads=2, layers=3)
        >>> cache = KVCache.empty(model, batch=4)
        >>> len(cache.layers), cache.real.shape, cache.nbytes
        (3, torch.Size([4, 0]), 0)
    """

    layers: list[LayerCache]  # one per block
    real: torch.Tensor  # (B, S) bool: False at the input's padding

    @classmethod
    def empty(cls, model: DecoderOnly, batch: int) -> KVCache:
        """Nothing cached yet, for a batch of ``batch`` sequences."""
        real = torch.zeros(batch, 0, dtype=torch.bool)  # (B, 0)
        return cls([LayerCache() for _ in model.blocks], real)

    @property
    def nbytes(self) -> int:
        """Bytes of every layer's keys and values (the padding mask not counted)."""
        return sum(layer.nbytes for layer in self.layers)
# --8<-- [end:cache]


# --8<-- [start:cached_block]
def cached_attention(attention: MultiHeadAttention, x: torch.Tensor,
                     cache: LayerCache, mask: torch.Tensor):
    """Self-attention of the L new positions x (B, L, D) over all S positions.

    Only the new positions are projected: the keys and values of the earlier ones come
    from ``cache``, to which the new ones are appended. ``mask`` is (B, L, S).
    Returns the output (B, L, D) and the weights (B, H, L, S).
    """
    heads = attention.num_heads
    q = split_heads(attention.query_proj(x), heads)  # (B, H, L, Dh)
    k = split_heads(attention.key_proj(x), heads)  # (B, H, L, Dh)
    v = split_heads(attention.value_proj(x), heads)  # (B, H, L, Dh)
    k, v = cache.append(k, v)  # the earlier positions' and these: (B, H, S, Dh)
    # (B, H, L, Dh) x (B, H, S, Dh) -> (B, H, L, S) -> (B, H, L, Dh)
    context, weights = scaled_dot_product_attention(q, k, v, mask[:, None])
    return attention.out_proj(merge_heads(context)), weights  # (B, L, D)


def cached_block(block: EncoderBlock, x: torch.Tensor, cache: LayerCache,
                 mask: torch.Tensor):
    """One block on the new positions x (B, L, D), as ``EncoderBlock.forward``.

    Raises:
        ValueError: if the block computes something else than ``EncoderBlock.forward`` (a
            subclass that overrides it, such as the blocks without residual connections of
            [`attnprimer.models.no_residual`][attnprimer.models.no_residual]), which this step
            would not reproduce.
    """
    if type(block).forward is not EncoderBlock.forward:
        raise ValueError(f"cached_block reproduces EncoderBlock.forward only, not "
                         f"{type(block).__name__}'s")
    if block.pre_norm:
        context, weights = cached_attention(
            block.attention, block.norm_attention(x), cache, mask)
        x = x + context
        x = x + block.feed_forward(block.norm_feed_forward(x))
    else:
        context, weights = cached_attention(block.attention, x, cache, mask)
        x = block.norm_attention(x + context)
        x = block.norm_feed_forward(x + block.feed_forward(x))
    return x, weights  # (B, L, D), (B, H, L, S)
# --8<-- [end:cached_block]


# --8<-- [start:extend]
def extend(model: DecoderOnly, cache: KVCache, tokens: torch.Tensor,
           real: torch.Tensor) -> torch.Tensor:
    """Run L new tokens (B, L) through the stack after the S - L cached ones.

    ``real`` (B, L) says which of them are real tokens (the input's padding is
    not). Returns the logits of the new positions, (B, L, C).
    """
    if tokens.dim() != 2 or real.shape != tokens.shape \
            or tokens.shape[0] != cache.real.shape[0]:
        raise ValueError(f"tokens and real must both be (B, L), B = {cache.real.shape[0]} "
                         f"as the cache: tokens {tuple(tokens.shape)}, "
                         f"real {tuple(real.shape)}")
    if cache.real.shape[1] + tokens.shape[1] > model.position.table.shape[0]:
        raise ValueError(f"{cache.real.shape[1]} cached and {tokens.shape[1]} new "
                         f"positions: more than the model's max_positions="
                         f"{model.position.table.shape[0]}")
    cache.real = torch.cat([cache.real, real], dim=1)  # (B, S)
    new, total = tokens.shape[1], cache.real.shape[1]  # L, S
    # The L queries are the last L of the S positions: query i sits at
    # position S - L + i, so the triangle is aligned bottom-right.
    ones = torch.ones(new, total, dtype=torch.bool)  # (L, S)
    causal = torch.tril(ones, diagonal=total - new)  # (L, S)
    mask = causal & cache.real[:, None, :]  # no padding as a key: (B, L, S)
    # Positions count real tokens only, as in DecoderOnly.run: (B, L)
    positions = (cache.real.cumsum(dim=1) - 1).clamp(min=0)[:, -new:]
    x = model.embed(tokens) + model.position.table[positions]  # (B, L, D)
    for block, layer in zip(model.blocks, cache.layers, strict=True):
        x, _ = cached_block(block, x, layer, mask)  # (B, L, D)
    return model.out(model.norm(x))  # (B, L, C)
# --8<-- [end:extend]


# --8<-- [start:greedy]
@torch.no_grad()
def greedy_with_cache(model: DecoderOnly, inputs: torch.Tensor,
                      steps: int | None = None):
    """Greedy decoding of inputs (B, S0) with a key/value cache.

    Returns the logits of every output step (B, T, C), T = ``steps``
    (default S0 + 1, as ``DecoderOnly.forward``), and the cache.
    """
    batch, source_length = inputs.shape
    steps = source_length + 1 if steps is None else steps
    cache = KVCache.empty(model, batch)
    separator = inputs.new_full((batch, 1), model.separator)
    prompt = torch.cat([inputs, separator], dim=1)  # (B, S0 + 1)
    real = prompt != PAD  # (B, S0 + 1): the separator is never padding
    # Prefill: the input and the separator in one pass; the last
    # position's logits predict output step 0: (B, 1, C)
    logits = [extend(model, cache, prompt, real)[:, -1:]]
    for _ in range(steps - 1):  # then one token per pass
        best = logits[-1].argmax(dim=-1)  # (B, 1)
        is_real = torch.ones_like(best, dtype=torch.bool)  # (B, 1)
        logits.append(extend(model, cache, best, is_real))  # (B, 1, C)
    return torch.cat(logits, dim=1), cache  # (B, T, C)
# --8<-- [end:greedy]


@torch.no_grad()
def greedy_without_cache(model: DecoderOnly, inputs: torch.Tensor,
                         steps: int | None = None) -> torch.Tensor:
    """Greedy decoding by full recomputation, as ``DecoderOnly.forward``, for any ``steps``.

    Every step runs the whole sequence so far through the model
    ([`DecoderOnly.run`][attnprimer.transformer.DecoderOnly.run]) and keeps the last logits.
    Returns the logits of every output step, (B, T, C).

    Examples:
        >>> model = DecoderOnly(num_outputs=8, dim=16, heads=2, layers=2).eval()
        >>> inputs = torch.tensor([[1, 2, 3], [4, 5, 0]])
        >>> full = greedy_without_cache(model, inputs)
        >>> torch.allclose(full, model(inputs).logits, atol=1e-6)   # the model's own greedy
        True
        >>> cached, _ = greedy_with_cache(model, inputs)
        >>> torch.allclose(cached, full, atol=1e-5)
        True
    """
    batch, source_length = inputs.shape
    steps = source_length + 1 if steps is None else steps
    separator = inputs.new_full((batch, 1), model.separator)
    sequence = torch.cat([inputs, separator], dim=1)  # (B, S0 + 1)
    logits = []
    for _ in range(steps):
        last = model.run(sequence, source_length)[0][:, -1:]  # (B, 1, C)
        logits.append(last)
        sequence = torch.cat([sequence, last.argmax(dim=-1)], dim=1)  # (B, S + 1)
    return torch.cat(logits, dim=1)  # (B, T, C)
