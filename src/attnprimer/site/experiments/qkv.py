"""The experiments of the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

* [`score_saturation`][attnprimer.site.experiments.qkv.score_saturation]: why the scores are
  divided by sqrt(Dk); random queries and keys, no training.
* [`kernel_regression_toy`][attnprimer.site.experiments.qkv.kernel_regression_toy]: Nadaraya–Watson
  estimates of a noisy 1-D function at several kernel widths; no training.
* [`recipe_ablation`][attnprimer.site.experiments.qkv.recipe_ablation]: the counting recipes of the
  catalogue ([`COUNTING_RECIPES`][attnprimer.site.catalogue.COUNTING_RECIPES]), one change at a
  time, scored on held-out sequences in every seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnprimer.dot_product import dot_scores
from attnprimer.kernel_regression import nadaraya_watson
from attnprimer.site.catalogue import COUNTING_RECIPES, site_seeds
from attnprimer.softmax import stable_softmax
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import HELD_OUT_SEED, TrainedModel, held_out_generator, predict

__all__ = ["KernelRegressionToy", "RecipeScore", "ScoreSaturation", "cosine_dot_pairs",
           "count_accuracy", "kernel_regression_toy", "own_letter_mass", "recipe_ablation",
           "score_saturation", "toy_function"]

LARGE_COUNT = 7
"""Counts from here up are "large": rare in ten tokens (each is a given letter 1 time in 4)."""


# --- dot products and cosines ----------------------------------------------------------------


def cosine_dot_pairs(
    samples: int = 400, dim: int = 128, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random vector pairs from opposite to aligned: their cosine and dot products.

    Returns:
        ``(cosine, dot, scaled_dot, lengths)``, each (samples,): the cosine of each pair; the
        dot product when every vector has length sqrt(dim); the dot product after scaling
        the two vectors by random factors in [0.2, 2]; and the product of those factors.

    Examples:
        >>> cosine, dot, _, _ = cosine_dot_pairs(samples=5, dim=8)
        >>> torch.allclose(dot, 8 * cosine)
        True
    """
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(samples, dim, generator=generator, dtype=torch.float64)
    noise = torch.randn(samples, dim, generator=generator, dtype=torch.float64)
    mix = torch.rand(samples, 1, generator=generator, dtype=torch.float64) * 2 - 1  # in [-1, 1]
    b = mix * a + (1 - mix**2).sqrt() * noise  # pairs from opposite to aligned
    a = a / a.norm(dim=1, keepdim=True) * math.sqrt(dim)  # every length sqrt(dim)
    b = b / b.norm(dim=1, keepdim=True) * math.sqrt(dim)
    cosine = torch.nn.functional.cosine_similarity(a, b, dim=1)
    scale_a = torch.empty(samples, 1, dtype=torch.float64).uniform_(0.2, 2.0, generator=generator)
    scale_b = torch.empty(samples, 1, dtype=torch.float64).uniform_(0.2, 2.0, generator=generator)
    lengths = (scale_a * scale_b).flatten()
    return cosine, (a * b).sum(1), (scale_a * a * scale_b * b).sum(1), lengths


# --- why divide by sqrt(Dk) ----------------------------------------------------------------


@dataclass(frozen=True)
class ScoreSaturation:
    """Scores of random unit-variance queries and keys against the dimension, per scaling.

    Attributes:
        dims: the dimensions Dk.
        keys: keys per query.
        spread: ``{"unscaled" | "scaled": standard deviation of the scores, per Dk}``.
        peak: the same keys: the largest softmax weight of a row, averaged over trials.
        gradient: the same keys: the size (Frobenius norm) of the softmax's Jacobian
            ``diag(p) - p p^T`` with respect to its scores, the median over trials.
    """

    dims: list[int]
    keys: int
    spread: dict[str, list[float]]
    peak: dict[str, list[float]]
    gradient: dict[str, list[float]]


def score_saturation(dims: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                     keys: int = 16, trials: int = 2000, seed: int = 0) -> ScoreSaturation:
    """Spread, saturation and gradient size of the softmax of ``q . k``, scaled or not.

    Examples:
        >>> result = score_saturation(dims=(4, 256), trials=200)
        >>> result.gradient["unscaled"][1] < result.gradient["scaled"][1]
        True
    """
    generator = torch.Generator().manual_seed(seed)
    names = ("unscaled", "scaled")
    spread, peak, gradient = ({name: [] for name in names} for _ in range(3))
    for dim in dims:
        query = torch.randn(trials, 1, dim, generator=generator, dtype=torch.float64)
        key = torch.randn(trials, keys, dim, generator=generator, dtype=torch.float64)
        scores = dot_scores(query, key)  # (trials, 1, keys)
        for name, scale in zip(names, (1.0, 1 / math.sqrt(dim)), strict=True):
            weights = stable_softmax(scores * scale)  # (trials, 1, keys)
            # d weights / d scores = diag(p) - p p^T: (trials, keys, keys)
            row = weights[:, 0, :]  # (trials, keys)
            jacobian = torch.diag_embed(row) - row[:, :, None] * row[:, None, :]
            spread[name].append((scores * scale).std().item())
            peak[name].append(weights.amax(-1).mean().item())
            gradient[name].append(jacobian.norm(dim=(-2, -1)).median().item())
    return ScoreSaturation(list(dims), keys, spread, peak, gradient)


# --- Nadaraya-Watson kernel regression ------------------------------------------------------


def toy_function(x: torch.Tensor) -> torch.Tensor:
    """The function the kernel-regression toy samples: a slow sine on a gentle slope.

    Examples:
        >>> toy_function(torch.tensor([0.0]))
        tensor([0.])
    """
    return torch.sin(1.5 * x) + 0.3 * x


@dataclass(frozen=True)
class KernelRegressionToy:
    """Noisy samples of [`toy_function`][attnprimer.site.experiments.qkv.toy_function] and the
    Nadaraya–Watson estimates from them.

    Attributes:
        x, y: the samples (keys and values), (S,), sorted by x.
        grid: where the function is estimated (the queries), (L,).
        truth: the noiseless function on the grid, (L,).
        widths: the kernel widths h.
        estimates: one (L,) estimate per width.
        weights: one (L, S) weight matrix per width.
        grid_error: per width, the root-mean-square error against ``truth`` on the grid.
        sample_error: per width, the root-mean-square distance to the noisy samples, at the
            samples.
        peak: per width, the largest weight of a row, averaged over the grid.
    """

    x: torch.Tensor
    y: torch.Tensor
    grid: torch.Tensor
    truth: torch.Tensor
    widths: tuple[float, ...]
    estimates: list[torch.Tensor]
    weights: list[torch.Tensor]
    grid_error: list[float]
    sample_error: list[float]
    peak: list[float]


def kernel_regression_toy(widths: Sequence[float] = (0.02, 0.2, 2.0), samples: int = 60,
                          noise: float = 0.3, points: int = 200,
                          seed: int = 0) -> KernelRegressionToy:
    """Estimate ``toy_function`` on [0, 5] from ``samples`` noisy samples, one width at a time.

    Examples:
        >>> toy = kernel_regression_toy(widths=(0.3,), samples=10, points=5)
        >>> toy.weights[0].shape, toy.estimates[0].shape
        (torch.Size([5, 10]), torch.Size([5]))
    """
    generator = torch.Generator().manual_seed(seed)
    x = (5 * torch.rand(samples, generator=generator, dtype=torch.float64)).sort().values
    y = toy_function(x) + noise * torch.randn(samples, generator=generator, dtype=torch.float64)
    grid = torch.linspace(0, 5, points, dtype=torch.float64)
    estimates, weights, grid_error, sample_error, peak = [], [], [], [], []
    for width in widths:
        estimate, weight = nadaraya_watson(grid[:, None], x[:, None], y[:, None], width)
        at_samples, _ = nadaraya_watson(x[:, None], x[:, None], y[:, None], width)
        estimates.append(estimate[:, 0])
        weights.append(weight)
        grid_error.append((estimate[:, 0] - toy_function(grid)).square().mean().sqrt().item())
        sample_error.append((at_samples[:, 0] - y).square().mean().sqrt().item())
        peak.append(weight.amax(-1).mean().item())
    return KernelRegressionToy(x, y, grid, toy_function(grid), tuple(widths), estimates,
                               weights, grid_error, sample_error, peak)


# --- the counting recipes -------------------------------------------------------------------


def count_accuracy(trained: TrainedModel, samples: int = 10_000,
                   seed: int = HELD_OUT_SEED) -> dict[str, float]:
    """Held-out exact match, and the error rate of the output steps by the size of the count.

    Returns:
        ``{"exact_match", "error_large", "error_small", "large"}``: the fraction of sequences
        with every count right; the fraction of output steps answered wrong among those whose
        true count is at least ``LARGE_COUNT``, and among the others; and how many steps had
        a large count.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> result = count_accuracy(train(CountingTask(hidden=8), TrainConfig(steps=5)), 100)
        >>> sorted(result)
        ['error_large', 'error_small', 'exact_match', 'large']
    """
    batch = trained.task.sample(samples, held_out_generator(seed))
    _, predictions = predict(trained.model, batch.inputs)
    wrong = predictions != batch.targets  # (B, T)
    large = batch.targets >= LARGE_COUNT
    return {"exact_match": (~wrong).all(dim=1).double().mean().item(),
            "error_large": wrong[large].double().mean().item() if large.any() else 0.0,
            "error_small": wrong[~large].double().mean().item(),
            "large": int(large.sum())}


@dataclass(frozen=True)
class RecipeScore:
    """One counting recipe, scored in every seed (seed order).

    Attributes:
        name: its name in ``COUNTING_RECIPES``.
        steps, lr, schedule: its training settings.
        seeds: the training seeds.
        exact_match, error_large, error_small: per seed, as in
            [`count_accuracy`][attnprimer.site.experiments.qkv.count_accuracy].
        curves: per seed, ``(steps, held-out exact match)`` recorded while training (1,000
            held-out sequences every 100 steps).
        large: how many output steps of the held-out sequences have a large count.
    """

    name: str
    steps: int
    lr: float
    schedule: str
    seeds: tuple[int, ...]
    exact_match: tuple[float, ...]
    error_large: tuple[float, ...]
    error_small: tuple[float, ...]
    curves: tuple[tuple[list[int], list[float]], ...]
    large: int


def recipe_ablation(samples: int = 10_000) -> list[RecipeScore]:
    """Every recipe of ``COUNTING_RECIPES`` in every seed, on ``samples`` held-out sequences.

    Trains (or loads) the catalogue's counting models; each score is cached with its model.
    """
    results = []
    for name, settings in COUNTING_RECIPES.items():
        models = [model.trained() for model in site_seeds("counting", **settings)]
        scores = [cached_result(count_accuracy, trained, samples=samples) for trained in models]
        config = models[0].config
        results.append(RecipeScore(
            name, config.steps, config.lr, config.schedule,
            tuple(trained.config.seed for trained in models),
            *(tuple(score[key] for score in scores)
              for key in ("exact_match", "error_large", "error_small")),
            tuple((list(trained.history["held_out_step"]),
                   list(trained.history["held_out_exact_match"])) for trained in models),
            scores[0]["large"]))
    return results


def own_letter_mass(
    trained: TrainedModel, samples: int = 2000, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """For each output step and held-out sequence: the letter's count and the weight on it.

    Returns:
        ``(counts, mass)``, both (samples, T): how often each step's letter occurs, and the
        total attention weight that step puts on the positions holding that letter.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> counts, mass = own_letter_mass(trained, samples=100)
        >>> counts.shape, bool((mass[counts == 0] == 0).all())   # no letter, no weight
        (torch.Size([100, 3]), True)
    """
    batch = trained.task.sample(samples, held_out_generator(seed))
    output, _ = predict(trained.model, batch.inputs)
    weights = output.attention["encoder-decoder"]  # (B, T, S)
    letters = torch.arange(1, weights.shape[1] + 1)  # token id of each output step's letter
    is_letter = batch.inputs[:, None, :] == letters[None, :, None]  # (B, 1, S) == (1, T, 1)
    return is_letter.sum(-1), (weights * is_letter).sum(-1)  # (B, T) each
