"""attnprimer: an executable primer on attention in deep learning.

The public names, by chapter:

* masks ([`attnprimer.masks`][attnprimer.masks]): [`causal_mask`][attnprimer.masks.causal_mask], [`padding_mask`][attnprimer.masks.padding_mask],
  [`local_mask`][attnprimer.masks.local_mask], [`combine_masks`][attnprimer.masks.combine_masks], [`to_blocked_mask`][attnprimer.masks.to_blocked_mask].
* from scores to context ([`attnprimer.attention`][attnprimer.attention]): [`masked_softmax`][attnprimer.attention.masked_softmax], [`attend`][attnprimer.attention.attend].
* queries, keys and values ([`attnprimer.dot_product`][attnprimer.dot_product]): [`dot_scores`][attnprimer.dot_product.dot_scores],
  [`general_scores`][attnprimer.dot_product.general_scores], [`GeneralScore`][attnprimer.dot_product.GeneralScore], [`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention];
  the stable softmax ([`attnprimer.softmax`][attnprimer.softmax]): [`stable_softmax`][attnprimer.softmax.stable_softmax], [`logsumexp`][attnprimer.softmax.logsumexp];
  kernel regression ([`attnprimer.kernel_regression`][attnprimer.kernel_regression]): [`nadaraya_watson`][attnprimer.kernel_regression.nadaraya_watson].
* Bahdanau attention ([`attnprimer.additive`][attnprimer.additive]): [`additive_scores`][attnprimer.additive.additive_scores],
  [`AdditiveScore`][attnprimer.additive.AdditiveScore], [`AdditiveAttention`][attnprimer.additive.AdditiveAttention].
* self-attention ([`attnprimer.multihead`][attnprimer.multihead]): [`split_heads`][attnprimer.multihead.split_heads], [`merge_heads`][attnprimer.multihead.merge_heads],
  [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention].
* attention at scale ([`attnprimer.online_softmax`][attnprimer.online_softmax],
  [`attnprimer.tiled`][attnprimer.tiled]): [`online_softmax`][attnprimer.online_softmax.online_softmax],
  [`tiled_attention`][attnprimer.tiled.tiled_attention].

Shape legend everywhere: B batch, L query length, S key length, D model dim,
H heads, Dh head dim.

Examples:
    >>> import torch, attnprimer
    >>> query, key = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    >>> context, weights = attnprimer.scaled_dot_product_attention(query, key, key)
    >>> context.shape, weights.shape
    (torch.Size([2, 3, 4]), torch.Size([2, 3, 5]))
"""

from attnprimer.additive import AdditiveAttention, AdditiveScore, additive_scores
from attnprimer.attention import attend, masked_softmax
from attnprimer.dot_product import (
    GeneralScore,
    dot_scores,
    general_scores,
    scaled_dot_product_attention,
)
from attnprimer.kernel_regression import nadaraya_watson
from attnprimer.masks import causal_mask, combine_masks, local_mask, padding_mask, to_blocked_mask
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads
from attnprimer.online_softmax import online_softmax
from attnprimer.softmax import logsumexp, stable_softmax
from attnprimer.tiled import tiled_attention

__version__ = "0.1.0"

__all__ = [
    "AdditiveAttention",
    "AdditiveScore",
    "GeneralScore",
    "MultiHeadAttention",
    "additive_scores",
    "attend",
    "causal_mask",
    "combine_masks",
    "dot_scores",
    "general_scores",
    "local_mask",
    "logsumexp",
    "masked_softmax",
    "merge_heads",
    "nadaraya_watson",
    "online_softmax",
    "padding_mask",
    "scaled_dot_product_attention",
    "split_heads",
    "stable_softmax",
    "tiled_attention",
    "to_blocked_mask",
]
