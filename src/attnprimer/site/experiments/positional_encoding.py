"""The experiments of the chapter "Positional encoding" (``docs/chapters/positional-encoding.md``).

* [`equivariance_gaps`][attnprimer.site.experiments.positional_encoding.equivariance_gaps]:
  how far shuffling the input moves attention's output, with and without an encoding;
* [`accuracy_by_count`][attnprimer.site.experiments.positional_encoding.accuracy_by_count]: a signal
  model's accuracy at each true count, on held-out inputs drawn *given* the count, so the rare
  large counts are measured as well as the common ones; and the largest count it ever answers;
* by signal letter
  ([`signal_weight_by_letter`][attnprimer.site.experiments.positional_encoding.signal_weight_by_letter]):
  the output step's weight on the signal position, by which letter the signal is, and
  [`accuracy_by_signal_letter`][attnprimer.site.experiments.positional_encoding.accuracy_by_signal_letter]
  the accuracy, split the same way;
* [`counting_lengths`][attnprimer.site.experiments.positional_encoding.counting_lengths]: the
  counting models (one length or mixed lengths, with or without a start token) at lengths
  from 2 to 40;
* [`counts_or_length`][attnprimer.site.experiments.positional_encoding.counts_or_length]: why they
  fail beyond their training: the inputs whose counts stay small scored apart from the
  others, and short inputs padded with blanks (the length grows, the counts do not);
* [`doubling_gap`][attnprimer.site.experiments.positional_encoding.doubling_gap]: a position-free
  counting model gives the same answer to an input and to the input written twice.

Everything is forward only, on held-out data, on the CPU.
Shape legend: B batch, S input length, D hidden size, C classes.
"""

from __future__ import annotations

from math import comb
from typing import Any

import torch

from attnprimer.multihead import MultiHeadAttention
from attnprimer.positional import POSITIONAL_ENCODINGS, sinusoidal_encoding
from attnprimer.site.catalogue import COUNTING_LENGTH_VARIANTS, SIGNAL_VARIANTS, site_seeds
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import (
    HELD_OUT_SEED,
    TrainedModel,
    held_out_generator,
    predict,
    single_thread,
)

__all__ = [
    "COUNTING_LENGTHS",
    "SIGNAL_GROUPS",
    "accuracy_by_count",
    "accuracy_by_signal_letter",
    "cached_accuracy_by_count",
    "cached_errors_by_count",
    "cached_signal_attention",
    "cached_signal_weight_by_letter",
    "cached_without_first_position",
    "counting_lengths",
    "counts_or_length",
    "counts_or_length_by_variant",
    "doubling_gap",
    "equivariance_gaps",
    "errors_by_count",
    "share_with_count_above",
    "signal_attention",
    "signal_group",
    "signal_weight_by_letter",
    "without_first_position",
]

COUNTING_LENGTHS = (2, 3, 5, 8, 10, 12, 15, 20, 25, 30, 35, 40)
"""The input lengths at which the counting models are scored (trained at 10, or 5 to 20)."""

SIGNAL_GROUPS: dict[str, dict[str, Any]] = {
    **{encoding: {"pos_enc": encoding} for encoding in POSITIONAL_ENCODINGS}, **SIGNAL_VARIANTS}
"""Every group of signal models the page compares, by name: their task settings."""


def signal_group(name: str) -> list[TrainedModel]:
    """Every seed of the signal models called ``name`` in ``SIGNAL_GROUPS``, trained."""
    return [model.trained() for model in site_seeds("signal", **SIGNAL_GROUPS[name])]


@torch.no_grad()
def equivariance_gaps(counting: TrainedModel, length: int = 10, dim: int = 16) -> dict[str, float]:
    """Largest change of the output when the input positions are shuffled (and the output
    shuffled back): multi-head self-attention in float64, without and with the sinusoidal
    encoding added, and the trained counting model's logits (invariant, float32); and the
    counting model's
    [`doubling_gap`][attnprimer.site.experiments.positional_encoding.doubling_gap]."""
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attention = MultiHeadAttention(dim, num_heads=4).double()
    x = torch.randn(1, length, dim, generator=generator, dtype=torch.float64)  # (B, L, D)
    order = torch.randperm(length, generator=generator)
    encoding = sinusoidal_encoding(length, dim).double()  # (L, D)
    tokens = counting.task.sample(1, torch.Generator().manual_seed(1)).inputs  # (1, S)
    gaps = {
        "self-attention, shuffled input vs shuffled output":
            attention(x[:, order])[0] - attention(x)[0][:, order],
        "self-attention with sinusoidal encoding added, the same comparison":
            attention(x[:, order] + encoding)[0] - attention(x + encoding)[0][:, order],
        "counting model, logits of a shuffled input vs the original":
            counting.model(tokens[:, order]).logits - counting.model(tokens).logits,
    }
    return {**{what: gap.abs().max().item() for what, gap in gaps.items()},
            "counting model, logits of 1,000 inputs vs each input written twice":
                doubling_gap(counting)}


def _inputs_with_count(task, count: int, samples: int, generator: torch.Generator) -> torch.Tensor:
    """Signal inputs (B, S) whose true count is ``count``: the held-out distribution given it."""
    signal = torch.randint(1, task.vocab_size + 1, (samples, 1), generator=generator)  # (B, 1)
    rest = torch.rand(samples, task.max_len, generator=generator).argsort(dim=1) < count
    shift = torch.randint(1, task.vocab_size, (samples, task.max_len), generator=generator)
    others = (signal - 1 + shift) % task.vocab_size + 1  # (B, max_len): never the signal letter
    return torch.cat([signal, torch.where(rest, signal, others)], dim=1)  # (B, S)


def accuracy_by_count(trained: TrainedModel, per_count: int = 500,
                      seed: int = 0) -> dict[str, list[float]]:
    """A signal model's accuracy at each true count, and the counts it answers.

    For every count ``c`` from 0 to ``max_len``, ``per_count`` held-out inputs are drawn
    from the task's distribution *given* that the count is ``c`` (the signal letter at
    random, ``c`` random later positions holding it, the rest other letters at random).

    Returns:
        ``accuracy``: (C,) accuracy at each count; ``largest``: (C,) the largest count the
        model answered on those inputs.
    """
    generator = held_out_generator(seed)
    accuracy, largest = [], []
    with single_thread():
        for count in range(trained.task.num_classes):
            inputs = _inputs_with_count(trained.task, count, per_count, generator)
            _, predictions = predict(trained.model, inputs)  # (B, 1)
            accuracy.append((predictions[:, 0] == count).float().mean().item())
            largest.append(float(predictions.max()))
    return {"accuracy": accuracy, "largest": largest}


def cached_accuracy_by_count(trained: TrainedModel) -> dict[str, list[float]]:
    """[`accuracy_by_count`][attnprimer.site.experiments.positional_encoding.accuracy_by_count],
    computed once per model (it is read by the page and by the claims tests)."""
    return cached_result(accuracy_by_count, trained)


@torch.no_grad()
def signal_weight_by_letter(trained: TrainedModel, samples: int = 5000,
                            seed: int = 0) -> dict[str, float]:
    """Mean weight of a signal model's output step on position 0, by the signal's letter."""
    inputs = trained.task.sample(samples, held_out_generator(seed)).inputs  # (B, S)
    with single_thread():
        weights = trained.model(inputs).attention["encoder-decoder"][:, 0, 0]  # (B,)
    alphabet = trained.task.alphabet
    return {alphabet[letter]: weights[inputs[:, 0] == letter].mean().item()
            for letter in range(1, trained.task.vocab_size + 1)}


def cached_signal_weight_by_letter(trained: TrainedModel) -> dict[str, float]:
    """The weights by signal letter, computed once per model (the page's table and the claims
    tests read them): see
    [`signal_weight_by_letter`][attnprimer.site.experiments.positional_encoding.signal_weight_by_letter]."""
    return cached_result(signal_weight_by_letter, trained)


def cached_signal_attention(trained: TrainedModel) -> dict[str, float]:
    """[`signal_attention`][attnprimer.site.experiments.positional_encoding.signal_attention],
    computed once per model."""
    return cached_result(signal_attention, trained)


def cached_errors_by_count(trained: TrainedModel) -> tuple[torch.Tensor, torch.Tensor]:
    """[`errors_by_count`][attnprimer.site.experiments.positional_encoding.errors_by_count]
    on 10,000 held-out
    sequences, computed once per model: ``(wrong, seen)`` by true count."""
    return cached_result(errors_by_count, trained,
                         encode=lambda result: [counts.tolist() for counts in result],
                         decode=lambda data: tuple(torch.tensor(counts) for counts in data))


@torch.no_grad()
def without_first_position(trained: TrainedModel, samples: int = 5000,
                           seed: int = HELD_OUT_SEED) -> dict[str, float]:
    """An intervention on a learned-encoding signal model: held-out exact match as trained, and
    with position 0's learned vector replaced by the mean of the input's other positions' (so
    that position 0 is no longer told apart). The model is restored afterwards."""
    table = trained.model.position.table  # (positions, D)
    length = trained.task.length  # S, the signal and the letters after it
    batch = trained.task.sample(samples, held_out_generator(seed))
    scores = {}
    original = table[0].clone()
    try:
        for name, vector in (("as trained", original), ("position 0 as the others",
                                                       table[1:length].mean(dim=0))):
            table[0] = vector
            with single_thread():
                _, predictions = predict(trained.model, batch.inputs)
            scores[name] = (predictions == batch.targets).all(dim=1).float().mean().item()
    finally:
        table[0] = original
    return scores


def cached_without_first_position(trained: TrainedModel) -> dict[str, float]:
    """[`without_first_position`][attnprimer.site.experiments.positional_encoding.without_first_position],
    computed once per model and code."""
    return cached_result(without_first_position, trained)


@torch.no_grad()
def accuracy_by_signal_letter(trained: TrainedModel, samples: int = 10_000,
                              seed: int = HELD_OUT_SEED) -> dict[str, float]:
    """A signal model's held-out accuracy, split by which letter the signal is."""
    batch = trained.task.sample(samples, held_out_generator(seed))
    with single_thread():
        _, predictions = predict(trained.model, batch.inputs)  # (B, 1)
    right = predictions[:, 0] == batch.targets[:, 0]  # (B,)
    alphabet = trained.task.alphabet
    return {alphabet[letter]: right[batch.inputs[:, 0] == letter].float().mean().item()
            for letter in range(1, trained.task.vocab_size + 1)}


def counting_lengths(lengths: tuple[int, ...] = COUNTING_LENGTHS) -> dict[str, list[list[float]]]:
    """Exact match of every counting variant (by name) at ``lengths``: one list per seed."""
    return {name: [cached_accuracy_by_length(model.trained(), lengths)
                   for model in site_seeds("counting", **settings)]
            for name, settings in COUNTING_LENGTH_VARIANTS.items()}


@torch.no_grad()
def counts_or_length(trained: TrainedModel, lengths: tuple[int, ...] = COUNTING_LENGTHS[4:],
                     short: int = 10, samples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Why a counting model fails at lengths it never trained on: the counts, or the length.

    A longer random input is longer *and* holds larger counts. Two measurements pull the two apart.
    The first conditions: on the held-out inputs of the length figure
    ([`accuracy_by_length`][attnprimer.site.experiments.length_curves.accuracy_by_length], the same
    seed), the inputs whose every count stays at most ``short`` are scored apart from the others.
    The second intervenes: the held-out inputs of ``short`` tokens get blanks appended up to each
    length, so the counts and the right answers stay those of a short input and only the length
    grows (the counting models have no positions: where the blanks go does not matter).

    Returns:
        ``largest_class``: the largest count the model has a class for; and one value per
        length of ``lengths`` (each at least ``short``) under ``exact``: exact match;
        ``small``: the share of inputs whose every count is at most ``short``;
        ``exact_small``: exact match on those inputs (NaN if there are none);
        ``has_class``: the share of inputs whose every count has a class;
        ``largest``: the largest count the model answered; ``padded``: exact match on
        the ``short``-token inputs padded with blanks to the length.
    """
    if min(lengths) < short:
        raise ValueError(f"every length must be at least short={short}, got {lengths}")
    task, model = trained.task, trained.model
    originals = task.at_length(short).sample(samples, held_out_generator(seed))  # (B, short)
    result: dict[str, Any] = {"largest_class": task.num_classes - 1}
    for length in lengths:
        batch = task.at_length(length).sample(samples, held_out_generator(seed))
        predictions = predict(model, batch.inputs)[1]  # (B, T)
        right = (predictions == batch.targets).all(dim=1)  # (B,)
        largest_count = batch.targets.max(dim=1).values  # (B,): each input's largest count
        small = largest_count <= short
        blanks = torch.zeros(samples, length - short, dtype=originals.inputs.dtype)
        padded = predict(model, torch.cat([originals.inputs, blanks], dim=1))[1]  # (B, T)
        measured = {
            "exact": right.float().mean(),
            "small": small.float().mean(),
            "exact_small": right[small].float().mean(),
            "has_class": (largest_count < task.num_classes).float().mean(),
            "largest": predictions.max(),
            "padded": (padded == originals.targets).all(dim=1).float().mean(),
        }
        for key, value in measured.items():
            result.setdefault(key, []).append(float(value))
    return result


def counts_or_length_by_variant() -> dict[str, list[dict[str, Any]]]:
    """[`counts_or_length`][attnprimer.site.experiments.positional_encoding.counts_or_length] of
    every counting variant (by name), one result per seed, each computed once per model."""
    return {name: [cached_result(counts_or_length, model.trained())
                   for model in site_seeds("counting", **settings)]
            for name, settings in COUNTING_LENGTH_VARIANTS.items()}


def share_with_count_above(count: int, length: int, letters: int) -> float:
    """The exact share of random inputs (``length`` tokens, each one of ``letters`` letters or
    the blank, all equally likely: the counting task's inputs) in which some letter occurs
    more than ``count`` times.

    Examples:
        >>> share_with_count_above(1, length=2, letters=1)   # "AA" of "  ", " A", "A ", "AA"
        0.25
    """
    # ways[m]: the words of m letters in which every letter so far occurs at most `count` times
    ways = [1]
    for _ in range(letters):
        ways = [sum(ways[m - k] * comb(m, k) for k in range(min(count, m) + 1)
                    if m - k < len(ways)) for m in range(len(ways) + count)]
    kept = sum(number * comb(length, m) for m, number in enumerate(ways) if m <= length)
    return 1 - kept / (letters + 1) ** length


@torch.no_grad()
def doubling_gap(trained: TrainedModel, samples: int = 1000, seed: int = 0) -> float:
    """Largest change of a counting model's logits when every input is written twice.

    Without positions and without a start token, attention sees only the proportions of
    the tokens, which writing an input twice does not change: the gap is rounding, and
    the model gives one answer to two inputs whose counts differ by a factor of two.
    """
    length = min(trained.task.max_len, 20)
    inputs = trained.task.at_length(length).sample(samples, held_out_generator(seed)).inputs
    with single_thread():
        once = trained.model(inputs).logits  # (B, T, C)
        twice = trained.model(torch.cat([inputs, inputs], dim=1)).logits
    return (once - twice).abs().max().item()


def _held_out(trained: TrainedModel, samples: int, seed: int):
    return trained.task.sample(samples, held_out_generator(seed))


@torch.no_grad()
def signal_attention(trained: TrainedModel, samples: int = 5000, seed: int = 0) -> dict[str, float]:
    """Where a signal model's output step looks: mean weight on one position of each kind.

    Returns:
        The mean encoder-decoder weight on ``"the signal"`` (position 0), on
        ``"a later copy of the signal letter"``, and on ``"another letter"``.
        Even attention over the ``S`` inputs gives ``1 / S`` to each.

    Examples:
        >>> from attnprimer.tasks import SignalTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(SignalTask(hidden=8), TrainConfig(steps=1, lr=1e-9))
        >>> {kind: round(weight, 3) for kind, weight in
        ...  signal_attention(trained, samples=50).items()}
        {'the signal': 0.091, 'a later copy of the signal letter': 0.091, 'another letter': 0.091}
    """
    inputs, _ = _held_out(trained, samples, seed)
    weights = trained.model(inputs).attention["encoder-decoder"][:, 0]  # (B, S)
    copies = inputs == inputs[:, :1]  # (B, S): the signal letter, wherever it is
    copies[:, 0] = False
    others = inputs != inputs[:, :1]
    return {
        "the signal": weights[:, 0].mean().item(),
        "a later copy of the signal letter": weights[copies].mean().item(),
        "another letter": weights[others].mean().item(),
    }


def errors_by_count(trained: TrainedModel, samples: int = 10_000,
                    seed: int = HELD_OUT_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """How many held-out sequences of each true count a one-step model gets wrong.

    Returns:
        ``(wrong, seen)``, both (C,): wrong answers and sequences, by the true class of the
        (only) output step. Every model scored with the same ``seed`` sees the same data.

    Examples:
        >>> from attnprimer.tasks import SignalTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> wrong, seen = errors_by_count(train(SignalTask(hidden=8), TrainConfig(steps=5)), 200)
        >>> int(seen.sum()), bool((wrong <= seen).all())
        (200, True)
    """
    classes = trained.task.num_classes
    batch = trained.task.sample(samples, held_out_generator(seed))
    _, predictions = predict(trained.model, batch.inputs)
    truth = batch.targets[:, 0]
    wrong = torch.bincount(truth[predictions[:, 0] != truth], minlength=classes)
    return wrong, torch.bincount(truth, minlength=classes)
