"""The experiments of the chapter "RNN recap": how exact match falls with the input's length.

Every model is trained on reversal inputs of 1 to 10 letters and tested, free-running (greedy
decoding), on held-out inputs of 1 to 20 letters, in every seed of
[`SEEDS`][attnprimer.site.catalogue.SEEDS]. Two comparisons:

* [`decoder_curves`][attnprimer.site.experiments.rnn_recap.decoder_curves]: the four decoders of
  [`REVERSAL_DECODERS`][attnprimer.site.catalogue.REVERSAL_DECODERS] (vanilla, peeky, attention
  with two scores), each trained 1,200 steps with a state of 64 floats;
* [`bottleneck_curves`][attnprimer.site.experiments.rnn_recap.bottleneck_curves]: the vanilla
  decoder alone, as the site trains it, three times longer, and three times longer with half the
  state ([`VANILLA_BOTTLENECK`][attnprimer.site.catalogue.VANILLA_BOTTLENECK]). One setting changes
  between neighbours: the training budget, then the state's size, and with it the width of both
  GRUs.

The measurements go through [`cached_result`][attnprimer.training.model_cache.cached_result]: the
docs build computes them once and the claims tests read them back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnprimer.site.catalogue import (
    REVERSAL_DECODERS,
    VANILLA_BOTTLENECK,
    VANILLA_BOTTLENECK_STEPS,
    SiteModel,
    site_seeds,
)
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length

__all__ = [
    "LENGTHS",
    "SAMPLES",
    "LengthCurves",
    "bottleneck_curves",
    "bottleneck_models",
    "decoder_curves",
    "decoder_models",
]

LENGTHS = tuple(range(1, 21))
"""The input lengths tested: those of training (1 to 10) and as many again."""

SAMPLES = 1000
"""Held-out inputs per length."""


@dataclass(frozen=True)
class LengthCurves:
    """Exact match against the input length, for several models in several seeds.

    Attributes:
        lengths: the input lengths tested.
        by_seed: model label -> one list per seed, the exact match at each length.
    """

    lengths: list[int]
    by_seed: dict[str, list[list[float]]]

    def at(self, label: str, length: int) -> np.ndarray:
        """The exact match of every seed of ``label`` at one length: (seeds,).

        Examples:
            >>> curves = LengthCurves([1, 2], {"a": [[1.0, 0.5], [1.0, 0.7]]})
            >>> curves.at("a", 2).tolist()
            [0.5, 0.7]
        """
        return self.array(label)[:, self.lengths.index(length)]

    def over(self, label: str, lengths: range) -> np.ndarray:
        """Each seed's exact match averaged over ``lengths``: (seeds,).

        Examples:
            >>> curves = LengthCurves([1, 2], {"a": [[1.0, 0.5], [1.0, 0.7]]})
            >>> curves.over("a", range(1, 3)).tolist()
            [0.75, 0.85]
        """
        columns = [self.lengths.index(length) for length in lengths]
        return self.array(label)[:, columns].mean(axis=1)

    def array(self, label: str) -> np.ndarray:
        """All seeds of ``label``: (seeds, lengths)."""
        return np.asarray(self.by_seed[label])


def decoder_models() -> dict[str, list[SiteModel]]:
    """The decoders compared on the page, by name: every seed of each."""
    return {label: site_seeds("reversal", **settings)
            for label, settings in REVERSAL_DECODERS.items()}


def bottleneck_models() -> dict[str, list[SiteModel]]:
    """The vanilla decoders of the bottleneck experiment, by name: every seed of each.

    The first is the page's vanilla decoder (64 floats, 1,200 steps); the next is trained
    three times longer; the last also has half the state.
    """
    vanilla = site_seeds("reversal", **REVERSAL_DECODERS["vanilla"])
    steps = vanilla[0].config.steps
    models = {f"64 floats, {steps:,} steps": vanilla}
    for size in ("64 floats", "32 floats"):
        models[f"{size}, {VANILLA_BOTTLENECK_STEPS:,} steps"] = site_seeds(
            "reversal", **VANILLA_BOTTLENECK[size], steps=VANILLA_BOTTLENECK_STEPS)
    return models


def _curves(models: dict[str, list[SiteModel]]) -> LengthCurves:
    return LengthCurves(list(LENGTHS), {
        label: [cached_accuracy_by_length(model.trained(), LENGTHS, SAMPLES) for model in seeds]
        for label, seeds in models.items()})


def decoder_curves() -> LengthCurves:
    """Exact match by input length of the four decoders, in every seed."""
    return _curves(decoder_models())


def bottleneck_curves() -> LengthCurves:
    """Exact match by input length of the vanilla decoders of ``bottleneck_models``."""
    return _curves(bottleneck_models())
