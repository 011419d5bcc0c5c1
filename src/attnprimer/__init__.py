"""attnprimer: an executable primer on attention in deep learning.

The public names, by chapter:

* masks (:mod:`attnprimer.masks`): :func:`causal_mask`, :func:`padding_mask`,
  :func:`local_mask`, :func:`combine_masks`, :func:`to_blocked_mask`.
* from scores to context (:mod:`attnprimer.attention`): :func:`masked_softmax`, :func:`attend`.
* queries, keys and values (:mod:`attnprimer.dot_product`): :func:`dot_scores`,
  :func:`general_scores`, :class:`GeneralScore`, :func:`scaled_dot_product_attention`.
* Bahdanau attention (:mod:`attnprimer.additive`): :func:`additive_scores`,
  :class:`AdditiveScore`, :class:`AdditiveAttention`.
* self-attention (:mod:`attnprimer.multihead`): :func:`split_heads`, :func:`merge_heads`,
  :class:`MultiHeadAttention`.

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
from attnprimer.masks import causal_mask, combine_masks, local_mask, padding_mask, to_blocked_mask
from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads

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
    "masked_softmax",
    "merge_heads",
    "padding_mask",
    "scaled_dot_product_attention",
    "split_heads",
    "to_blocked_mask",
]
