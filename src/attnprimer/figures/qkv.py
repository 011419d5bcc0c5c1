"""Figures and tables of the chapter "Queries, keys and values" (``docs/chapters/qkv.md``).

Dot products against cosines, why scores are scaled by sqrt(Dk), three score functions, and
the trained counting models: their attention on the primer's example, their training, how
much weight each query puts on its own letter, and their held-out accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.additive import AdditiveScore
from attnprimer.analysis import own_letter_mass
from attnprimer.attention import masked_softmax
from attnprimer.dot_product import GeneralScore, dot_scores
from attnprimer.figures.plotting import (BLUE, GREY, HEATMAP, ORANGE, plot_task_attention,
                                         plot_training)
from attnprimer.figures.registry import recipe
from attnprimer.figures.tables import cli_sample, markdown_table, percent
from attnprimer.report import attention_report
from attnprimer.site_models import COUNTING_EXAMPLE, ORIGINAL_COUNTING_RECIPE, SEEDS, site_model
from attnprimer.train import evaluate, predict_one

__all__ = ["plot_cosine_vs_dot", "plot_own_letter_mass",
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

    figure = Figure(figsize=(9, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2, sharey=True)
    left.scatter(cosine, (a * b).sum(1), s=8, color=BLUE, alpha=0.7)
    left.set_title(f"equal lengths (|a| = |b| = √{dim})")
    lengths = (scale_a * scale_b).flatten()
    points = right.scatter(cosine, (scale_a * a * scale_b * b).sum(1), s=8, c=lengths,
                           cmap="viridis", alpha=0.8)
    right.set_title("random lengths")
    figure.colorbar(points, ax=right, label="|a| |b| / dim")
    for axes in (left, right):
        axes.set_xlabel("cosine similarity of a and b")
        axes.axhline(0, color=GREY, lw=0.6)
        axes.axvline(0, color=GREY, lw=0.6)
    left.set_ylabel("dot product a · b")
    return figure


def plot_score_scaling(
    dims: Iterable[int] = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    keys: int = 16,
    trials: int = 2000,
    seed: int = 0,
) -> Figure:
    """Why divide by sqrt(Dk): score spread and softmax saturation against the dimension.

    Queries and keys have independent unit-variance entries, as at
    initialisation. Left: the standard deviation of ``q . k`` grows like
    sqrt(Dk); divided by sqrt(Dk) it stays at 1. Right: the largest of ``keys``
    softmax weights, averaged over trials: without the scale the softmax
    saturates towards a one-hot choice (and its gradients vanish).

    Examples:
        >>> figure = plot_score_scaling(dims=(4, 64), trials=50)
        >>> figure.axes[1].get_ylabel()
        'largest softmax weight of 16 keys'
    """
    dims = list(dims)
    generator = torch.Generator().manual_seed(seed)
    spread = {"unscaled": [], "scaled": []}
    peak = {"unscaled": [], "scaled": []}
    for dim in dims:
        query = torch.randn(trials, 1, dim, generator=generator, dtype=torch.float64)
        key = torch.randn(trials, keys, dim, generator=generator, dtype=torch.float64)
        scores = dot_scores(query, key)  # (trials, 1, keys)
        for name, scale in (("unscaled", 1.0), ("scaled", 1 / math.sqrt(dim))):
            spread[name].append((scores * scale).std().item())
            peak[name].append(masked_softmax(scores * scale).amax(dim=-1).mean().item())

    figure = Figure(figsize=(9, 3.6), layout="constrained")
    left, right = figure.subplots(1, 2)
    styles = {"unscaled": dict(color=ORANGE, marker="o", label="q · k"),
              "scaled": dict(color=BLUE, marker="s", label="q · k / √Dk")}
    for name, style in styles.items():
        left.plot(dims, spread[name], **style)
        right.plot(dims, peak[name], **style)
    left.plot(dims, np.sqrt(dims), color=GREY, ls="--", lw=1, label="√Dk")
    left.set_yscale("log", base=2)
    left.set_ylabel("standard deviation of the scores")
    left.set_title("score spread")
    right.axhline(1 / keys, color=GREY, ls=":", lw=1, label=f"uniform (1/{keys})")
    right.set_ylim(0, 1.05)
    right.set_ylabel(f"largest softmax weight of {keys} keys")
    right.set_title("softmax saturation")
    for axes in (left, right):
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
    axes.set_xlabel(f"how often the step's letter occurs in the {length} inputs")
    axes.set_ylabel("attention weight on that letter")
    axes.set_ylim(-0.02, 1.02)
    axes.set_xticks(seen)
    axes.legend(fontsize=8, loc="upper left")
    return figure


# --- the recipes ------------------------------------------------------------------------------


@recipe("cosine_vs_dot", "scatter of cosine similarity against dot product")
def cosine_vs_dot() -> Figure:
    return plot_cosine_vs_dot()


@recipe("score_scaling", "score spread and softmax saturation against Dk")
def score_scaling() -> Figure:
    return plot_score_scaling()


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
    report = attention_report(task, tokens, prediction, attention, task.targets_for(tokens[None])[0])
    return cli_sample(f'attnprimer test counting --input "{COUNTING_EXAMPLE}"', report)


@recipe("counting_training", "the counting model's loss and held-out accuracy while training")
def counting_training() -> Figure:
    return plot_training(site_model("counting", seed=0).trained().history)


@recipe("counting_mass", "how much weight each query puts on its own letter, by count")
def counting_mass() -> Figure:
    trained = site_model("counting", seed=0).trained()
    counts, mass = own_letter_mass(trained)
    return plot_own_letter_mass(counts, mass, trained.task.max_len)


@recipe("counting_accuracy", "held-out accuracy of the counting models, three seeds")
def counting_accuracy() -> str:
    models = {f"counting, seed {seed}": site_model("counting", seed=seed) for seed in SEEDS}
    models["counting, original recipe"] = site_model("counting", **ORIGINAL_COUNTING_RECIPE)
    letters = models["counting, seed 0"].task.output_labels()
    rows = []
    for label, model in models.items():
        result = evaluate(model.trained())
        config = model.config
        rows.append([label, f"{config.steps:,} steps, lr {config.lr:g}, {config.schedule}",
                     f"**{percent(result.exact_match)}**",
                     *(percent(accuracy) for accuracy in result.per_step)])
    return markdown_table(
        ["model", "training", "exact match", *(f"count of {letter}" for letter in letters)],
        rows, align="llr" + "r" * len(letters),
        caption=f"Each model scored on {result.samples:,} held-out sequences, drawn from a random "
                f"stream that no training batch comes from; batches of {config.batch_size} "
                f"sequences, Adam.")
