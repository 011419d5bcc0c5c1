"""Figures and tables of the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

The worked example (one query over three 2-D keys, every number), dot products against cosines,
why scores are scaled by sqrt(Dk), the stable softmax, Nadaraya–Watson kernel regression, three
score functions, and the trained counting models:
their attention on the primer's example, their training, how much weight each query puts on
its own letter, and the training recipes compared one change at a time. The experiments
behind them are in [`attnprimer.site.experiments.qkv`][attnprimer.site.experiments.qkv].
"""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from attnprimer.additive import AdditiveScore
from attnprimer.attention import masked_softmax
from attnprimer.dot_product import GeneralScore, dot_scores
from attnprimer.site.catalogue import COUNTING_EXAMPLE, COUNTING_RECIPES, site_model, site_seeds
from attnprimer.site.experiments.qkv import (
    LARGE_COUNT,
    KernelRegressionToy,
    ScoreSaturation,
    cosine_dot_pairs,
    kernel_regression_toy,
    own_letter_mass,
    recipe_ablation,
    score_saturation,
)
from attnprimer.site.experiments.worked_example import qkv_example
from attnprimer.site.figures.curves import plot_accuracy_curves, plot_training
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, HEATMAP, ORANGE, plot_task_attention
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import cli_sample, markdown_table, mean_range
from attnprimer.site.figures.worked_example import worked_table
from attnprimer.site.report import attention_report
from attnprimer.softmax import logsumexp, naive_softmax, stable_softmax
from attnprimer.training.train import predict_one

__all__ = ["plot_cosine_vs_dot", "plot_kernel_regression", "plot_own_letter_mass",
           "plot_score_functions", "plot_score_scaling"]


def plot_cosine_vs_dot(samples: int = 400, dim: int = 128, seed: int = 0) -> Figure:
    """Cosine similarity against dot product for random vector pairs.

    Left: every vector has the same length, so the dot product is the cosine
    times a constant. Right: the same directions with random lengths; the dot
    product now mixes how aligned two vectors are with how long they are.

    Examples:
        >>> figure = plot_cosine_vs_dot(samples=20)
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['equal lengths (|a| = |b| = √128)', 'random lengths']
    """
    cosine, dot, scaled_dot, lengths = cosine_dot_pairs(samples, dim, seed)
    figure = Figure(figsize=(9, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2, sharey=True)
    left.scatter(cosine, dot, s=8, color=BLUE, alpha=0.7)
    left.set_title(f"equal lengths (|a| = |b| = √{dim})")
    points = right.scatter(cosine, scaled_dot, s=8, c=lengths, cmap="viridis", alpha=0.8)
    right.set_title("random lengths")
    figure.colorbar(points, ax=right, label="|a| |b| / dim")
    for axes in (left, right):
        axes.set_xlabel("cosine similarity of a and b")
        axes.axhline(0, color=GREY, lw=0.6)
        axes.axvline(0, color=GREY, lw=0.6)
    left.set_ylabel("dot product a · b")
    return figure


def plot_score_scaling(result: ScoreSaturation) -> Figure:
    """Why divide by sqrt(Dk): score spread, softmax saturation and gradient against Dk.

    Examples:
        >>> figure = plot_score_scaling(score_saturation(dims=(4, 64), trials=50))
        >>> [axes.get_ylabel() for axes in figure.axes][1:]
        ['largest softmax weight of 16 keys', 'size of the softmax gradient']
    """
    figure = Figure(figsize=(9.6, 3.5), layout="constrained")
    spread, peak, gradient = figure.subplots(1, 3)
    styles = {"unscaled": {"color": ORANGE, "marker": "o", "label": "q · k"},
              "scaled": {"color": BLUE, "marker": "s", "label": "q · k / √Dk"}}
    for name, style in styles.items():
        spread.plot(result.dims, result.spread[name], **style)
        peak.plot(result.dims, result.peak[name], **style)
        gradient.plot(result.dims, result.gradient[name], **style)
    spread.plot(result.dims, np.sqrt(result.dims), color=GREY, ls="--", lw=1, label="√Dk")
    spread.set_yscale("log", base=2)
    spread.set_ylabel("standard deviation of the scores")
    spread.set_title("score spread")
    peak.axhline(1 / result.keys, color=GREY, ls=":", lw=1, label=f"uniform (1/{result.keys})")
    peak.set_ylim(0, 1.05)
    peak.set_ylabel(f"largest softmax weight of {result.keys} keys")
    peak.set_title("softmax saturation")
    gradient.set_yscale("log")
    gradient.set_ylabel("size of the softmax gradient")
    gradient.set_title("|diag(p) − p pᵀ|, median")
    for axes in (spread, peak, gradient):
        axes.set_xscale("log", base=2)
        axes.set_xlabel("dimension Dk")
        axes.legend(loc="best", fontsize=8)
    return figure


def plot_score_functions(
    dim: int = 8, queries: int = 3, keys: int = 6, seed: int = 0
) -> Figure:
    """The same queries and keys weighted by three score functions (random parameters).

    Examples:
        >>> [axes.get_xlabel() for axes in plot_score_functions().axes[:3]]
        ['key', 'key', 'key']
    """
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():  # seed the modules' initialisation, leave the global state alone
        torch.manual_seed(seed)
        general = GeneralScore(dim, dim)
        additive = AdditiveScore(dim, dim, hidden_dim=dim)
    query = torch.randn(queries, dim, generator=generator)
    key = torch.randn(keys, dim, generator=generator)
    with torch.no_grad():
        panels = {
            "scaled dot: q·k / √D": dot_scores(query, key) / math.sqrt(dim),
            "general: qᵀ W k": general(query, key),
            "additive: vᵀ tanh(W_q q + W_k k)": additive(query, key),
        }
    figure = Figure(figsize=(10, 2.8), layout="constrained")
    axes_row = figure.subplots(1, 3, sharey=True)
    for axes, (title, scores) in zip(axes_row, panels.items(), strict=True):
        image = axes.imshow(masked_softmax(scores).numpy(), cmap=HEATMAP, vmin=0, vmax=1)
        axes.set_title(title, fontsize=10)
        axes.set_xticks(range(keys), [f"k{j}" for j in range(keys)])
        axes.set_yticks(range(queries), [f"q{i}" for i in range(queries)])
        axes.set_xlabel("key")
    axes_row[0].set_ylabel("query")
    figure.colorbar(image, ax=list(axes_row), label="attention weight", fraction=0.03)
    return figure


def plot_own_letter_mass(counts: torch.Tensor, mass: torch.Tensor, length: int) -> Figure:
    """Attention weight on a letter's own positions against how often it occurs.

    Examples:
        >>> counts = torch.tensor([[0, 1], [2, 3]])
        >>> figure = plot_own_letter_mass(counts, counts / 4, length=4)
        >>> figure.axes[0].get_ylabel()
        'attention weight on that letter'
    """
    counts, mass = counts.flatten().numpy(), mass.flatten().numpy()
    jitter = np.random.default_rng(0).uniform(-0.18, 0.18, size=counts.shape)
    figure = Figure(figsize=(6.5, 3.8), layout="constrained")
    axes = figure.add_subplot()
    axes.scatter(counts + jitter, mass, s=4, alpha=0.25, color=BLUE, label="one output step")
    seen = np.unique(counts)
    axes.plot(seen, [mass[counts == n].mean() for n in seen], color=ORANGE, marker="o",
              label="mean")
    axes.plot(seen, seen / length, color=GREY, ls="--", label=f"uniform attention (n/{length})")
    axes.set_xlabel(f"how often the step's letter occurs among the {length} input tokens")
    axes.set_ylabel("attention weight on that letter")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xticks(seen)
    axes.legend(fontsize=8, loc="upper left")
    return figure


def plot_kernel_regression(toy: KernelRegressionToy) -> Figure:
    """Nadaraya–Watson estimates at several kernel widths, and their weight rows.

    Examples:
        >>> figure = plot_kernel_regression(kernel_regression_toy(samples=8, points=20))
        >>> [axes.get_xlabel() for axes in figure.axes[1:4]]
        ['sample (sorted by x)', 'sample (sorted by x)', 'sample (sorted by x)']
    """
    figure = Figure(figsize=(10, 6.4), layout="constrained")
    grid = figure.add_gridspec(2, len(toy.widths), height_ratios=(1.1, 1))
    curves = figure.add_subplot(grid[0, :])
    curves.scatter(toy.x, toy.y, s=14, color=GREY, label="noisy samples (keys, values)")
    curves.plot(toy.grid, toy.truth, color="black", ls="--", lw=1, label="the function sampled")
    norm = LogNorm(vmin=1e-3, vmax=1)
    for column, (colour, width, estimate, weights) in enumerate(
            zip((ORANGE, BLUE, GREEN), toy.widths, toy.estimates, toy.weights, strict=False)):
        curves.plot(toy.grid, estimate, color=colour, lw=1.6,
                    label=f"estimate, width h = {width:g}")
        axes = figure.add_subplot(grid[1, column], sharey=figure.axes[1] if column else None)
        image = axes.imshow(weights.clamp_min(1e-3).numpy(), cmap=HEATMAP, norm=norm,
                            aspect="auto", interpolation="nearest",
                            extent=(-0.5, len(toy.x) - 0.5, float(toy.grid[-1]), 0.0))
        axes.set_title(f"weights, h = {width:g}", fontsize=10, color=colour)
        axes.set_xlabel("sample (sorted by x)")
        axes.set_ylabel("" if column else "query x")
    curves.set_xlabel("x (query)")
    curves.set_ylabel("y")
    figure.legend(fontsize=8, loc="outside upper center", ncols=3)
    figure.colorbar(image, ax=figure.axes[1:], label="weight (log scale)", fraction=0.03)
    return figure


# --- the recipes ------------------------------------------------------------------------------


@recipe("worked_example", "one query over three 2-D keys, every number of the attention")
def worked_example() -> str:
    return worked_table(qkv_example())


@recipe("cosine_vs_dot", "scatter of cosine similarity against dot product")
def cosine_vs_dot() -> Figure:
    return plot_cosine_vs_dot()


@recipe("score_scaling", "score spread, softmax saturation and gradient size against Dk")
def score_scaling() -> Figure:
    return plot_score_scaling(score_saturation())


@recipe("softmax_overflow", "the softmax as written against the stable one, on large scores")
def softmax_overflow() -> str:
    rows = []
    for scores in torch.tensor([[1.0, 2, 3], [1000, 999, 998], [-1000, -999, -998]]):  # float32
        rows.append([", ".join(f"{score:g}" for score in scores.tolist()),
                     *(", ".join(f"{weight:.4f}" for weight in weights.tolist())
                       for weights in (naive_softmax(scores), stable_softmax(scores))),
                     f"{logsumexp(scores).item():.4f}"])
    return markdown_table(["scores", "exp(x) / sum exp(x)", "stable softmax", "log-sum-exp"],
                          rows, align="llll",
                          caption="Computed in float32, where exp overflows above about 88.7.")


@recipe("kernel_regression", "Nadaraya-Watson estimates of a noisy function at three widths")
def kernel_regression() -> Figure:
    return plot_kernel_regression(kernel_regression_toy())


@recipe("score_functions", "one set of queries and keys under three score functions")
def score_functions() -> Figure:
    return plot_score_functions()


@recipe("score_table", "the three score functions: formula, parameters, cost")
def score_table() -> str:
    dim = 64
    rows = [
        ("scaled dot product", r"$q^\top k / \sqrt{D_k}$", 0, "$D_k$ multiply-adds"),
        ("general (Luong)", r"$q^\top W k$", _parameters(GeneralScore(dim, dim)),
         "$D_q D_k$ per query, then a dot"),
        ("additive (Bahdanau)", r"$v^\top \tanh(W_q q + W_k k)$",
         _parameters(AdditiveScore(dim, dim, hidden_dim=dim)), "$A$ adds, tanh and multiply-adds"),
    ]
    return markdown_table(
        ["score", "formula", "learned parameters", "cost per pair"],
        [(name, formula, f"{count:,}", cost) for name, formula, count, cost in rows],
        align="llrl", caption=f"Parameters counted on the modules for $D_q = D_k = A = {dim}$.")


def _parameters(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


def _counting_example():
    """The seed-0 counting model on the primer's example: task, tokens, prediction, weights."""
    trained = site_model("counting", seed=0).trained()
    tokens = trained.task.encode(COUNTING_EXAMPLE)
    return (trained.task, tokens, *predict_one(trained.model, tokens))


@recipe("counting_heatmap", "the trained counting model's attention on the primer's example")
def counting_heatmap() -> Figure:
    task, tokens, prediction, attention = _counting_example()
    return plot_task_attention(task, tokens, prediction, attention["encoder-decoder"])


@recipe("counting_sample", "`attnprimer test counting` on the primer's example")
def counting_sample() -> str:
    task, tokens, prediction, attention = _counting_example()
    targets = task.targets_for(tokens[None])[0]
    report = attention_report(task, tokens, prediction, attention, targets)
    return cli_sample(f'attnprimer test counting --input "{COUNTING_EXAMPLE}"', report)


@recipe("counting_training", "the counting model's loss and held-out accuracy while training")
def counting_training() -> Figure:
    return plot_training(site_model("counting", seed=0).trained().history)


@recipe("counting_mass", "how much weight each query puts on its own letter, by count")
def counting_mass() -> Figure:
    trained = site_model("counting", seed=0).trained()
    counts, mass = own_letter_mass(trained)
    return plot_own_letter_mass(counts, mass, trained.task.max_len)


@recipe("counting_recipes", "held-out accuracy of the counting recipes, one change at a time")
def counting_recipes() -> str:
    results = recipe_ablation()
    rows = [[f"**{result.name}**", f"{result.steps:,}, {result.lr:g}, {result.schedule}",
             mean_range(result.exact_match, 2), mean_range(result.error_large, 0),
             mean_range(result.error_small, 2)] for result in results]
    return markdown_table(
        ["recipe", "steps, lr, schedule", "exact match, %", f"wrong on counts ≥ {LARGE_COUNT}, %",
         f"wrong on counts < {LARGE_COUNT}, %"], rows, align="llrrr",
        caption="Each cell: the mean over seeds 0, 1 and 2, then the lowest and highest, in "
                "percent, on the same 10,000 held-out sequences. The last two columns are per "
                f"output step: the share of counts answered wrong among the rare counts of "
                f"{LARGE_COUNT} or more of one letter ({results[0].large} output steps in all), "
                f"and among the others. Batches of {site_model('counting').config.batch_size}, "
                "Adam, one CPU thread.")


@recipe("counting_recipe_curves", "held-out accuracy while training, one change at a time")
def counting_recipe_curves() -> Figure:
    # With a constant rate, the original's run is the first 2,000 steps of the 6,000-step one.
    names = ("original, 6,000 steps", "original, lr 0.03", "original, cosine", "ours")
    return plot_accuracy_curves({name.replace(", 6,000", ", continued to 6,000"): [
        model.trained().history for model in site_seeds("counting", **COUNTING_RECIPES[name])]
        for name in names})
