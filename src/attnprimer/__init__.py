"""attnprimer: an executable primer on attention in deep learning.

The package in three layers, each importing only the ones above it (a test checks it):

    attnprimer/            the mechanisms the chapters teach, one concept a file (masks,
      tasks/, models/      attention, additive, rnn, multihead, transformer, ...); the toy
                           tasks and their models, built from those mechanisms
    attnprimer/training/   the training loop, checkpoints, the model cache and its keys
    attnprimer/site/       what builds the site: the catalogue of trained models, experiments,
                           figures, exercises, the explorer's export, measurements
    attnprimer/cli/        the ``attnprimer`` command, which may use all three

Open a mechanism module beside its chapter: its docstring names the chapter. The public names
of the mechanisms, by chapter:

* masks ([`attnprimer.masks`][attnprimer.masks]): [`causal_mask`][attnprimer.masks.causal_mask],
  [`padding_mask`][attnprimer.masks.padding_mask],
  [`local_mask`][attnprimer.masks.local_mask], [`combine_masks`][attnprimer.masks.combine_masks],
  [`to_blocked_mask`][attnprimer.masks.to_blocked_mask].
* from scores to context ([`attnprimer.attention`][attnprimer.attention]):
  [`masked_softmax`][attnprimer.attention.masked_softmax], [`attend`][attnprimer.attention.attend].
* queries, keys and values ([`attnprimer.dot_product`][attnprimer.dot_product]):
  [`dot_scores`][attnprimer.dot_product.dot_scores],
  [`general_scores`][attnprimer.dot_product.general_scores],
  [`GeneralScore`][attnprimer.dot_product.GeneralScore],
  [`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention];
  the stable softmax ([`attnprimer.softmax`][attnprimer.softmax]):
  [`stable_softmax`][attnprimer.softmax.stable_softmax],
  [`logsumexp`][attnprimer.softmax.logsumexp];
  kernel regression ([`attnprimer.kernel_regression`][attnprimer.kernel_regression]):
  [`nadaraya_watson`][attnprimer.kernel_regression.nadaraya_watson].
* Bahdanau attention ([`attnprimer.additive`][attnprimer.additive]):
  [`additive_scores`][attnprimer.additive.additive_scores],
  [`AdditiveScore`][attnprimer.additive.AdditiveScore],
  [`AdditiveAttention`][attnprimer.additive.AdditiveAttention].
* self-attention ([`attnprimer.multihead`][attnprimer.multihead]):
  [`split_heads`][attnprimer.multihead.split_heads],
  [`merge_heads`][attnprimer.multihead.merge_heads],
  [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention].
* attention at scale ([`attnprimer.online_softmax`][attnprimer.online_softmax],
  [`attnprimer.tiled`][attnprimer.tiled]): [`tiled_attention`][attnprimer.tiled.tiled_attention]
  (and, from its module, [`online_softmax`][attnprimer.online_softmax.online_softmax]:
  ``attnprimer.online_softmax`` is the module of that name).

Shape legend everywhere: B batch, L query length, S key length, D model dim,
H heads, Dh head dim.

Examples:
    >>> import torch, attnprimer
    >>> query, key = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    >>> context, weights = attnprimer.scaled_dot_product_attention(query, key, key)
    >>> context.shape, weights.shape
    (torch.Size([2, 3, 4]), torch.Size([2, 3, 5]))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# The public names, by the module that defines them. They load on first use (PEP 562), so
# that importing one module of the package, such as ``attnprimer.training.fingerprints``, does not
# import torch: the docs build reads the fingerprints on a rebuild where nothing changed.
_PUBLIC = {
    "attnprimer.additive": ["AdditiveAttention", "AdditiveScore", "additive_scores"],
    "attnprimer.attention": ["attend", "masked_softmax"],
    "attnprimer.dot_product": ["GeneralScore", "dot_scores", "general_scores",
                               "scaled_dot_product_attention"],
    "attnprimer.kernel_regression": ["nadaraya_watson"],
    "attnprimer.masks": ["causal_mask", "combine_masks", "local_mask", "padding_mask",
                         "to_blocked_mask"],
    "attnprimer.multihead": ["MultiHeadAttention", "merge_heads", "split_heads"],
    "attnprimer.softmax": ["logsumexp", "stable_softmax"],
    "attnprimer.tiled": ["tiled_attention"],
}
_MODULE_OF = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:  # the same names, for type checkers and the API reference
    from attnprimer.additive import AdditiveAttention, AdditiveScore, additive_scores
    from attnprimer.attention import attend, masked_softmax
    from attnprimer.dot_product import (
        GeneralScore,
        dot_scores,
        general_scores,
        scaled_dot_product_attention,
    )
    from attnprimer.kernel_regression import nadaraya_watson
    from attnprimer.masks import (
        causal_mask,
        combine_masks,
        local_mask,
        padding_mask,
        to_blocked_mask,
    )
    from attnprimer.multihead import MultiHeadAttention, merge_heads, split_heads
    from attnprimer.softmax import logsumexp, stable_softmax
    from attnprimer.tiled import tiled_attention


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULE_OF])


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
    "padding_mask",
    "scaled_dot_product_attention",
    "split_heads",
    "stable_softmax",
    "tiled_attention",
    "to_blocked_mask",
]
