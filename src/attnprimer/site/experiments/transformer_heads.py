"""What the Transformers' heads do: where each head looks, and what switching it off costs.

* [`head_patterns`][attnprimer.site.experiments.transformer_heads.head_patterns]: for every head,
  the mean weight its queries put on a few simple targets (the letter being copied, the query's
  own position, the one before it...), teacher-forced, over held-out inputs of 1 to 10 letters.
  The one that matches the task's alignment is ``copy``: output step t of an input of n
  letters writes the letter at input position n - 1 - t, the anti-diagonal (a model need not
  read there: the Bahdanau chapter's decoders read one state to the right).
* [`head_ablation`][attnprimer.site.experiments.transformer_heads.head_ablation]: held-out exact
  match (greedy) with each head switched off in turn
  ([`heads_off`][attnprimer.site.experiments.head_ablation.heads_off]), and with groups of heads
  off; each head either zeroed (zero ablation) or set to its mean output over other held-out
  inputs (mean ablation, [`head_means`][attnprimer.site.experiments.head_ablation.head_means]).

Everything runs on held-out inputs, under ``torch.no_grad``, forward only, on the CPU.
Shape legend: B batch, S input length (padded), L query length, K key length.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attnprimer.site.experiments.head_ablation import head_means, head_names, heads_off
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, evaluate, held_out_generator
from attnprimer.transformer import DecoderOnly

__all__ = ["ABLATIONS", "PATTERNS", "cached_head_ablation", "cached_head_patterns",
           "copy_groups", "head_ablation", "head_patterns", "ranked"]

PATTERNS = {
    "encoder self": ("mirror", "self", "previous", "next", "first", "last"),
    "decoder self": ("self", "previous", "start"),
    "cross": ("copy", "next copy", "last copy", "first", "last"),
    "decoder-only": ("copy", "next copy", "last copy", "separator", "self", "previous"),
}
"""The targets measured for each kind of head. Encoder self-attention, query at letter i of
n: ``mirror`` n - 1 - i, ``self`` i, ``previous`` i - 1, ``next`` i + 1, ``first`` 0,
``last`` n - 1. Decoder self-attention, query at output step t (step 0 reads the start
token): ``self`` t, ``previous`` t - 1, ``start`` 0. Cross-attention, query at output step t
of the n letters: ``copy`` n - 1 - t, ``next copy`` n - 2 - t (the letter of the next step),
``last copy`` n - t (the letter of the step before), ``first`` and ``last`` letter. The
decoder-only model's output steps (query at sequence index S + t): ``copy`` and its two
neighbours as for cross-attention, the ``separator`` (index S), ``self``, ``previous``."""


def _targets(kind: str, lengths: torch.Tensor, queries: int, padded: int):
    """Per pattern: the key index (B, L) each query should read, and where that is defined.

    ``lengths`` (B,): letters per input; ``padded``: S, the input's padded length.
    """
    n = lengths[:, None]  # (B, 1)
    if kind == "decoder-only":  # rows S + t are the output steps, t < n
        t = torch.arange(queries)[None, :] - padded  # (1, L): the output step of each row
        rows = (t >= 0) & (t < n)
        index = t + padded  # (1, L): the row's own index
    else:
        t = torch.arange(queries)[None, :]  # (1, L)
        # Encoder: the letters; decoder self: every step, the end's included; cross: letters
        rows = t <= n if kind == "decoder self" else t < n
        index = t
    every = torch.ones_like(rows)
    named = {
        "mirror": (n - 1 - t, every), "copy": (n - 1 - t, every),
        "next copy": (n - 2 - t, t <= n - 2), "last copy": (n - t, t >= 1),
        "self": (index, every), "previous": (index - 1, t >= 1), "next": (t + 1, t <= n - 2),
        "first": (0 * t, every), "last": (n - 1 + 0 * t, every), "start": (0 * t, every),
        "separator": (padded + 0 * t, every),
    }
    return {pattern: (keys.expand_as(rows & valid), rows & valid)
            for pattern, (keys, valid) in ((p, named[p]) for p in PATTERNS[kind])}


def _mean_weight(weights: torch.Tensor, keys: torch.Tensor, where: torch.Tensor) -> float:
    """Mean of weights (B, L, K) at [b, l, keys[b, l]] over the (b, l) where ``where``."""
    picked = weights.gather(2, keys.clamp(0, weights.shape[2] - 1)[..., None])[..., 0]  # (B, L)
    return float(picked[where].mean())


@torch.no_grad()
def head_patterns(trained: TrainedModel, samples: int = 1000,
                  seed: int = 0) -> dict[str, dict[str, float]]:
    """The mean weight of every head on each of its kind's
    [`PATTERNS`][attnprimer.site.experiments.transformer_heads.PATTERNS].

    Teacher-forced, on ``samples`` held-out inputs of the training lengths.

    Returns:
        ``{"cross 1.1": {"copy": ..., "last": ..., ...}, ...}``, every head of the model.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> patterns = head_patterns(trained, samples=20)
        >>> sorted(patterns["cross 1.2"])
        ['copy', 'first', 'last', 'last copy', 'next copy']
        >>> 0 <= patterns["cross 1.2"]["copy"] <= 1
        True
    """
    model = trained.model.eval()
    batch = trained.task.sample(samples, held_out_generator(seed))
    attention = model(batch.inputs, batch.targets).attention  # name -> (B, L, K)
    lengths = (batch.inputs != 0).sum(dim=1)  # (B,)
    decoder_only = isinstance(model, DecoderOnly)
    result = {}
    for name in head_names(model):
        kind = "decoder-only" if decoder_only else name.rpartition(" ")[0]
        weights = attention[name]
        targets = _targets(kind, lengths, weights.shape[1], batch.inputs.shape[1])
        result[name] = {pattern: _mean_weight(weights, keys, where)
                        for pattern, (keys, where) in targets.items()}
    return result


ABLATIONS = ("zero", "mean")
"""How a head is switched off: its output zeroed, or set to its mean over held-out inputs."""
MEAN_SAMPLES = 1000
"""Held-out inputs (another draw than the scored ones) that each head's mean output is taken
over, for mean ablation."""


@torch.no_grad()
def head_ablation(trained: TrainedModel, groups: dict[str, list[str]] | None = None,
                  samples: int = 500, seed: int = 0, ablation: str = "zero") -> dict[str, float]:
    """Held-out exact match (greedy, lengths 1-10) with heads switched off.

    Args:
        groups: heads to switch off together, by a name of the group's choosing; by default,
            every head alone (under its own name).
        ablation: ``"zero"``, the head's output zeroed, or ``"mean"``, set to its mean output
            over ``MEAN_SAMPLES`` teacher-forced held-out inputs drawn with ``seed + 1``.

    Returns:
        ``{"none": exact match of the whole model, group: exact match without it, ...}``.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> task = ReversalTransformerTask(architecture="decoder-only", dim=8, heads=2, layers=1)
        >>> trained = train(task, TrainConfig(steps=2))
        >>> sorted(head_ablation(trained, samples=20))
        ['decoder self 1.1', 'decoder self 1.2', 'none']
        >>> sorted(head_ablation(trained, samples=20, ablation="mean"))
        ['decoder self 1.1', 'decoder self 1.2', 'none']
    """
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be one of {', '.join(ABLATIONS)}, got {ablation!r}")
    if groups is None:
        groups = {name: [name] for name in head_names(trained.model)}
    means = None
    if ablation == "mean":
        batch = trained.task.sample(MEAN_SAMPLES, held_out_generator(seed + 1))
        means = head_means(trained.model.eval(), batch.inputs, batch.targets)
    result = {"none": evaluate(trained, samples=samples, seed=seed).exact_match}
    for group, names in groups.items():
        with heads_off(trained.model, names, means=means):
            result[group] = evaluate(trained, samples=samples, seed=seed).exact_match
    return result


def cached_head_patterns(trained: TrainedModel, samples: int = 1000) -> dict[str, dict[str, float]]:
    """[`head_patterns`][attnprimer.site.experiments.transformer_heads.head_patterns] through the
    result cache: the page and the claims tests read the same numbers."""
    return cached_result(head_patterns, trained, samples=samples)


def cached_head_ablation(trained: TrainedModel, groups: dict[str, list[str]] | None = None,
                         samples: int = 500, ablation: str = "zero") -> dict[str, float]:
    """[`head_ablation`][attnprimer.site.experiments.transformer_heads.head_ablation] through the
    result cache."""
    return cached_result(head_ablation, trained, groups=groups, samples=samples,
                         ablation=ablation)


def ranked(scores: dict[str, float], names: Iterable[str]) -> list[str]:
    """``names`` by their score, highest first (ties in the given order).

    Examples:
        >>> ranked({"a": 0.1, "b": 0.9, "c": 0.5}, ["a", "b", "c"])
        ['b', 'c', 'a']
    """
    return sorted(names, key=lambda name: -scores[name])


def copy_groups(patterns: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    """Heads to switch off together, to test whether the heads that copy are the ones used.

    Among the heads that have a ``copy`` score (cross-attention, or the decoder-only model's
    self-attention): the one and the two with the highest score, the one and the two with the
    lowest, and each layer's heads all at once.

    Examples:
        >>> patterns = {f"cross {layer}.{head}": {"copy": layer / 2 + head / 10}
        ...             for layer in (1, 2) for head in (1, 2)}
        >>> copy_groups(patterns)["2 highest copy"], copy_groups(patterns)["cross 1, all"]
        (['cross 2.2', 'cross 2.1'], ['cross 1.1', 'cross 1.2'])
    """
    heads = [name for name, scores in patterns.items() if "copy" in scores]
    order = ranked({name: patterns[name]["copy"] for name in heads}, heads)
    groups = {"highest copy": order[:1], "2 highest copy": order[:2],
              "lowest copy": order[-1:], "2 lowest copy": order[-2:]}
    for layer in dict.fromkeys(name.partition(".")[0] for name in heads):
        groups[f"{layer}, all"] = [name for name in heads if name.startswith(layer + ".")]
    return groups
