"""Tiled attention: exact attention in blocks, with memory linear in the length.

Taught in the chapter "Attention at scale" (``docs/chapters/attention-at-scale.md``).

[`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention] builds
the L x S weights; training keeps them (the softmax's output) for the backward pass. The tiled
pass of FlashAttention (Dao et al. 2022, "FlashAttention: fast and memory-efficient exact
attention with IO-awareness"; Dao 2023, "FlashAttention-2: faster attention with better
parallelism and work partitioning") holds one block of them at a time:

* forward (in FlashAttention-2's loop order; the first paper ran the key blocks outside): for
  each block of queries, read the keys and values block by block with the online
  softmax ([`online_step`][attnprimer.online_softmax.online_step]), and keep only the output
  and each query's log-sum-exp;
* backward: recompute each block's weights from the scaled scores ``Z`` and the saved
  log-sum-exp, ``P = exp(Z - lse)``, and accumulate the gradients block by block. With
  ``delta_i = sum_d dO_id O_id`` (the rowsum of the output gradient times the output), the
  gradient of the scores is ``dZ = P * (dP - delta)``, where ``dP = dO V^T``. As in both
  papers, the outer loop runs over key blocks, whose dK and dV it finishes, and the
  inner one over query blocks.

What is kept for the backward pass is the input, the output and one number per query:
O(L) memory, against O(L S) for the weights. The work is the same O(L S) (more, by the
recomputed scores), except where a mask removes whole blocks: those are skipped
([`BlockMask`][attnprimer.block_mask.BlockMask]). A query with every key masked gets a context
of zeros and no gradient.

Shape legend: ... leading dims (B, H), L queries, S keys, Dh head dim, Dv value dim.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import FunctionCtx, once_differentiable

from attnprimer.block_mask import BlockMask
from attnprimer.online_softmax import finish, online_step, start

__all__ = ["TiledAttention", "tiled_attention", "tiled_backward", "tiled_forward"]


def _masked(scores: torch.Tensor, mask: BlockMask,
            q0: int, q1: int, k0: int, k1: int) -> torch.Tensor:
    """The block's scores with the pairs its mask forbids set to -inf."""
    if not mask.needs_mask(q0, q1, k0, k1):
        return scores
    return scores.masked_fill(~mask.block(q0, q1, k0, k1), -torch.inf)


# --8<-- [start:forward]
def tiled_forward(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    mask: BlockMask, block_size: int, scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward pass: context and log-sum-exp per query, one block at a time.

    Args:
        query: (..., L, Dh).
        key: (..., S, Dh).
        value: (..., S, Dv).
        mask: which pairs may attend, decided per block.
        block_size: queries and keys per block.
        scale: multiplies the scores.

    Returns:
        ``(context, logsumexp)``: (..., L, Dv) and (..., L); a query with every key masked
        gets zeros and ``-inf``.

    Examples:
        >>> q, k, v = torch.zeros(1, 3, 2), torch.zeros(1, 4, 2), torch.arange(4.0).view(1, 4, 1)
        >>> context, logsumexp = tiled_forward(q, k, v, BlockMask(), block_size=2, scale=1.0)
        >>> context.flatten().tolist(), logsumexp.flatten().tolist()   # even weights
        ([1.5, 1.5, 1.5], [1.3862943649291992, 1.3862943649291992, 1.3862943649291992])
    """
    length, key_length = query.shape[-2], key.shape[-2]
    contexts, logsumexps = [], []
    for q0 in range(0, length, block_size):
        q1 = min(q0 + block_size, length)
        queries = query[..., q0:q1, :] * scale  # (..., bq, Dh)
        running = start(queries.shape[:-1], value.shape[-1], query)
        for k0 in range(0, key_length, block_size):
            k1 = min(k0 + block_size, key_length)
            if mask.skips(q0, q1, k0, k1):
                continue  # never computed
            # (..., bq, Dh) x (..., Dh, bk) -> (..., bq, bk)
            scores = queries @ key[..., k0:k1, :].transpose(-2, -1)
            scores = _masked(scores, mask, q0, q1, k0, k1)
            running = online_step(running, scores, value[..., k0:k1, :])
        context, logsumexp = finish(running)  # (..., bq, Dv), (..., bq)
        contexts.append(context)
        logsumexps.append(logsumexp)
    return torch.cat(contexts, dim=-2), torch.cat(logsumexps, dim=-1)
# --8<-- [end:forward]


# --8<-- [start:backward]
def tiled_backward(
    grad_context: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
    value: torch.Tensor, context: torch.Tensor, logsumexp: torch.Tensor,
    mask: BlockMask, block_size: int, scale: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The backward pass: gradients of query, key and value, the weights recomputed per block.

    Args:
        grad_context: (..., L, Dv), the gradient of the loss with respect to the context.
        query: (..., L, Dh), as given to [`tiled_forward`][attnprimer.tiled.tiled_forward].
        key: (..., S, Dh), as given to it.
        value: (..., S, Dv), as given to it.
        context: (..., L, Dv), as it returned.
        logsumexp: (..., L), as it returned.
        mask: as given to it.
        block_size: as given to it.
        scale: as given to it.

    Returns:
        ``(grad_query, grad_key, grad_value)``, shaped like query, key and value.

    Examples:
        >>> q, k = torch.zeros(1, 3, 2), torch.zeros(1, 4, 2)
        >>> v = torch.arange(4.0).view(1, 4, 1)
        >>> context, lse = tiled_forward(q, k, v, BlockMask(), 2, 1.0)
        >>> _, _, grad_value = tiled_backward(torch.ones_like(context), q, k, v, context, lse,
        ...                                   BlockMask(), 2, 1.0)
        >>> grad_value.flatten().tolist()   # each key has weight 1/4 for each of 3 queries
        [0.75, 0.75, 0.75, 0.75]
    """
    length, key_length = query.shape[-2], key.shape[-2]
    # delta_i = sum_d dO_id O_id: (..., L, Dv) -> (..., L, 1)
    delta = (grad_context * context).sum(dim=-1, keepdim=True)
    # A query with every key masked: lse = -inf; shift by 0 so P = 0.
    shift = torch.where(logsumexp.isfinite(), logsumexp, 0.0)[..., None]
    grad_query = torch.zeros_like(query)
    grad_key, grad_value = torch.zeros_like(key), torch.zeros_like(value)
    for k0 in range(0, key_length, block_size):
        k1 = min(k0 + block_size, key_length)
        keys, values = key[..., k0:k1, :], value[..., k0:k1, :]
        for q0 in range(0, length, block_size):
            q1 = min(q0 + block_size, length)
            if mask.skips(q0, q1, k0, k1):
                continue
            queries = query[..., q0:q1, :] * scale  # (..., bq, Dh)
            scores = queries @ keys.transpose(-2, -1)  # (..., bq, bk)
            scores = _masked(scores, mask, q0, q1, k0, k1)
            weights = (scores - shift[..., q0:q1, :]).exp_()  # P, recomputed
            grad_out = grad_context[..., q0:q1, :]  # (..., bq, Dv)
            # (..., bk, bq) x (..., bq, Dv) -> (..., bk, Dv)
            grad_value[..., k0:k1, :] += weights.transpose(-2, -1) @ grad_out
            # (..., bq, Dv) x (..., Dv, bk) -> (..., bq, bk)
            grad_weights = grad_out @ values.transpose(-2, -1)
            # dZ = P * (dP - delta), in place: dP is not needed again
            grad_scores = grad_weights.sub_(delta[..., q0:q1, :]).mul_(weights)
            # (..., bq, bk) x (..., bk, Dh) -> (..., bq, Dh); scaled at the end
            grad_query[..., q0:q1, :] += grad_scores @ keys
            # (..., bk, bq) x (..., bq, Dh) -> (..., bk, Dh); queries scaled
            grad_key[..., k0:k1, :] += grad_scores.transpose(-2, -1) @ queries
    return grad_query * scale, grad_key, grad_value
# --8<-- [end:backward]


class TiledAttention(torch.autograd.Function):
    """Tiled attention as an autograd function: the backward pass recomputes the weights.

    Saved for the backward pass: query, key, value, the context and the log-sum-exp per query,
    nothing of size L x S. Call it through [`tiled_attention`][attnprimer.tiled.tiled_attention].
    """

    @staticmethod
    def forward(ctx: FunctionCtx, query: torch.Tensor, key: torch.Tensor,
                value: torch.Tensor, mask: BlockMask, block_size: int,
                scale: float) -> torch.Tensor:
        context, logsumexp = tiled_forward(query, key, value, mask, block_size, scale)
        ctx.save_for_backward(query, key, value, context, logsumexp)
        ctx.mask, ctx.block_size, ctx.scale = mask, block_size, scale
        return context

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_context: torch.Tensor):
        gradients = tiled_backward(grad_context.contiguous(), *ctx.saved_tensors, ctx.mask,
                                   ctx.block_size, ctx.scale)
        return (*gradients, None, None, None)


def tiled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    *,
    causal: bool = False,
    window: int | None = None,
    key_lengths: torch.Tensor | None = None,
    block_size: int = 128,
    scale: float | None = None,
) -> torch.Tensor:
    """Scaled dot-product attention in blocks, forward and backward, never holding L x S.

    Equal (to rounding) to
    [`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention]
    and ``torch.nn.functional.scaled_dot_product_attention`` with the same mask as a dense
    tensor ([`BlockMask.dense`][attnprimer.block_mask.BlockMask.dense]). Unlike the rest of the
    site it returns no weights: not holding them is the point.

    Args:
        query: (..., L, Dh).
        key: (..., S, Dh), the same leading dims as ``query``.
        value: (..., S, Dv), the same leading dims.
        causal: query ``i`` sees keys ``j <= i`` only (aligned top-left).
        window: if set, query ``i`` sees keys with ``|i - j| <= window`` only.
        key_lengths: if set, (B,) for inputs (B, H, L, Dh): keys from ``key_lengths[b]`` on
            are padding.
        block_size: queries and keys per block.
        scale: multiplies the scores; defaults to ``1 / sqrt(Dh)``.

    Returns:
        Context (..., L, Dv); zeros for a query with every key masked.

    Examples:
        >>> from attnprimer.dot_product import scaled_dot_product_attention
        >>> from attnprimer.masks import causal_mask
        >>> q, k, v = (torch.randn(1, 2, 10, 4, dtype=torch.float64) for _ in range(3))
        >>> tiled = tiled_attention(q, k, v, causal=True, block_size=3)
        >>> dense, _ = scaled_dot_product_attention(q, k, v, causal_mask(10))
        >>> torch.allclose(tiled, dense)
        True
    """
    if query.dim() < 2 or query.shape[:-2] != key.shape[:-2] \
            or key.shape[:-1] != value.shape[:-1] or query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"expected query (..., L, Dh), key (..., S, Dh) and value (..., S, Dv) with the "
            f"same leading dims, got query {tuple(query.shape)}, key {tuple(key.shape)}, "
            f"value {tuple(value.shape)}")
    if block_size < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")
    if key_lengths is not None and (query.dim() != 4 or key_lengths.shape != query.shape[:1]):
        raise ValueError(f"key_lengths must have shape (B,) for inputs (B, H, L, Dh): got "
                         f"{tuple(key_lengths.shape)} for query {tuple(query.shape)}")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    mask = BlockMask(causal=causal, window=window, key_lengths=key_lengths)
    return TiledAttention.apply(query, key, value, mask, block_size, scale)
