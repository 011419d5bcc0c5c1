"""Every figure and table on the site, and the registry that builds them.

Two layers:

* ``plot_*`` functions are pure: they take tensors or results and return a
  ``matplotlib.figure.Figure``. They never train, save or show anything, and
  they use matplotlib's object API only (no pyplot), so they work under any
  backend, in a notebook or in the docs build.
* Recipes, registered in [`FIGURES`][attnprimer.figures.FIGURES] by name, fetch what they need (a
  trained model from the cache, training it on a miss) and call a ``plot_*``
  function, or format a Markdown table or a text sample.

[`render_all`][attnprimer.figures.render_all] writes every recipe to a folder. The docs build hook and
``attnprimer figures`` (``nox -s figures``) are its two callers, so the site and
the files on disk are always the same.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from attnprimer.additive import AdditiveScore
from attnprimer.attention import masked_softmax
from attnprimer.cost import CostPoint
from attnprimer.dot_product import GeneralScore, dot_scores
from attnprimer.report import attention_report, encoding_norms_report
from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.tasks import (
    BLANK,
    CountingTask,
    DifferenceTask,
    ReversalTask,
    SignalTask,
    Task,
)
from attnprimer.train import (
    TrainConfig,
    TrainedModel,
    code_fingerprint,
    evaluate,
    get_trained,
    predict,
    predict_one,
)

__all__ = [
    "FIGURES",
    "SITE_MODELS",
    "DIFFERENCE_VARIANTS",
    "Recipe",
    "difference_label",
    "draw_attention",
    "signal_label",
    "plot_accuracy_curves",
    "plot_attention",
    "plot_attention_cost",
    "plot_attention_grid",
    "plot_attention_patterns",
    "plot_causal_demo",
    "plot_difference_profile",
    "plot_learned_norms",
    "plot_length_generalisation",
    "plot_rotary_scores",
    "plot_signal_attention",
    "plot_sinusoidal",
    "own_letter_mass",
    "plot_cosine_vs_dot",
    "plot_own_letter_mass",
    "plot_score_functions",
    "plot_score_scaling",
    "plot_task_attention",
    "plot_training",
    "render_all",
    "save_figure",
]

# Colours: one per series, colour-blind safe (Okabe-Ito).
BLUE, ORANGE, GREEN, GREY = "#0072B2", "#E69F00", "#009E73", "#777777"
HEATMAP = "Blues"

# Everything that makes an SVG differ between two identical runs, pinned.
_STYLE = {
    "svg.hashsalt": "attnprimer",
    "svg.fonttype": "path",
    "font.size": 10,
    "axes.titlesize": 11,
    "figure.dpi": 100,
}


# --- pure plot functions --------------------------------------------------------------------


def plot_attention(
    weights: torch.Tensor,
    query_labels: list[str],
    key_labels: list[str],
    *,
    title: str | None = None,
    xlabel: str = "key (input step)",
    ylabel: str = "query (output step)",
    annotate: bool = True,
) -> Figure:
    """Heatmap of attention weights (L, S) on a fixed [0, 1] colour scale.

    Rows are queries, columns keys; every row sums to 1.

    Examples:
        >>> figure = plot_attention(torch.full((2, 3), 1 / 3), ["q0", "q1"], ["a", "b", "c"])
        >>> figure.axes[0].get_xlabel()
        'key (input step)'
    """
    weights = _check_weights(weights, query_labels, key_labels)
    rows, cols = weights.shape
    figure = Figure(figsize=(1.2 + 0.55 * cols + 1.2, 1.0 + 0.5 * rows + 0.6), layout="constrained")
    axes = figure.add_subplot()
    image = draw_attention(axes, weights, query_labels, key_labels, annotate=annotate)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    _weight_colorbar(figure, image, axes)
    return figure


def draw_attention(axes, weights: torch.Tensor, query_labels: list[str], key_labels: list[str],
                   *, annotate: bool = True):
    """Draw weights (L, S) into ``axes`` on the [0, 1] scale; returns the image (for a colorbar)."""
    weights = _check_weights(weights, query_labels, key_labels)
    rows, cols = weights.shape
    image = axes.imshow(weights.numpy(), cmap=HEATMAP, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(cols), key_labels)
    axes.set_yticks(range(rows), query_labels)
    if annotate:
        for row in range(rows):
            for col in range(cols):
                value = float(weights[row, col])
                axes.text(col, row, f"{value:.2f}".lstrip("0"), ha="center", va="center",
                          fontsize=8, color="white" if value > 0.55 else "black")
    return image


def _check_weights(weights, query_labels, key_labels) -> torch.Tensor:
    weights = torch.as_tensor(weights).detach().float()
    if weights.dim() != 2 or weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"weights must be (L, S) = ({len(query_labels)}, {len(key_labels)}) to match the "
            f"labels, got {tuple(weights.shape)}"
        )
    return weights


def _weight_colorbar(figure: Figure, image, axes) -> None:
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    colorbar.set_label("attention weight")


def plot_task_attention(
    task: Task,
    tokens: torch.Tensor,
    prediction: torch.Tensor,
    weights: torch.Tensor,
    self_weights: torch.Tensor | None = None,
) -> Figure:
    """A task model's encoder-decoder attention (T, S) with tokens and predictions as labels.

    With ``self_weights`` (T, T), the self-attention over the output steps is
    drawn to the right, on the same colour scale.

    Examples:
        >>> task = CountingTask(max_len=4)
        >>> figure = plot_task_attention(task, task.encode("AB C"), torch.tensor([1, 1, 1]),
        ...                              torch.full((3, 4), 0.25))
        >>> [label.get_text() for label in figure.axes[0].get_yticklabels()]
        ['A = 1', 'B = 1', 'C = 1']
    """
    key_labels = [f"{'_' if char == BLANK else char}\n{step}"
                  for step, char in enumerate(task.alphabet[int(token)] for token in tokens)]
    query_labels = task.step_labels(prediction)
    if self_weights is None:
        return plot_attention(
            weights, query_labels, key_labels,
            xlabel="input token and step (_ = blank)", ylabel="output step: prediction",
        )
    steps = len(query_labels)
    figure = Figure(figsize=(1.6 + 0.55 * (len(key_labels) + steps) + 2.2, 1.6 + 0.5 * steps),
                    layout="constrained")
    left, right = figure.subplots(
        1, 2, sharey=True, gridspec_kw={"width_ratios": [len(key_labels), steps]}
    )
    draw_attention(left, weights, query_labels, key_labels)
    left.set_xlabel("input token and step (_ = blank)")
    left.set_ylabel("output step: prediction")
    left.set_title("encoder-decoder attention")
    step_labels = [f"{label}\n{step}" for step, label in enumerate(task.output_labels())]
    image = draw_attention(right, self_weights, query_labels, step_labels)
    right.tick_params(labelleft=False)
    right.set_xlabel("output step read")
    right.set_title("self-attention")
    _weight_colorbar(figure, image, [left, right])
    return figure


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


def own_letter_mass(
    trained: TrainedModel, samples: int = 2000, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """For each output step and held-out sequence: the letter's count and the weight on it.

    Returns:
        ``(counts, mass)``, both (samples, T): how often each step's letter occurs, and the
        total attention weight that step puts on the positions holding that letter.

    Examples:
        >>> from attnprimer.train import train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> counts, mass = own_letter_mass(trained, samples=100)
        >>> counts.shape, bool((mass[counts == 0] == 0).all())   # no letter, no weight
        (torch.Size([100, 3]), True)
    """
    from attnprimer.train import held_out_generator

    batch = trained.task.sample(samples, held_out_generator(seed))
    output, _ = predict(trained.model, batch.inputs)
    weights = output.attention["encoder-decoder"]  # (B, T, S)
    letters = torch.arange(1, weights.shape[1] + 1)  # token id of each output step's letter
    is_letter = batch.inputs[:, None, :] == letters[None, :, None]  # (B, 1, S) == (1, T, 1)
    return is_letter.sum(-1), (weights * is_letter).sum(-1)  # (B, T) each


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


def plot_training(history: dict[str, list[float]], title: str | None = None) -> Figure:
    """Training loss (every step, smoothed) and held-out exact match against the step.

    Examples:
        >>> from attnprimer.train import train
        >>> history = train(CountingTask(hidden=8), TrainConfig(steps=10)).history
        >>> [axes.get_ylabel() for axes in plot_training(history).axes]
        ['cross-entropy loss', 'held-out exact match']
    """
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    left, right = figure.subplots(1, 2)
    steps = np.asarray(history["step"])
    loss = np.asarray(history["loss"])
    window = max(1, len(loss) // 100)
    smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
    left.plot(steps, loss, color=BLUE, alpha=0.25, lw=0.6, label="per step")
    left.plot(steps[window - 1:], smooth, color=BLUE, lw=1.4, label=f"mean of {window} steps")
    left.set_yscale("log")
    left.set_xlabel("training step")
    left.set_ylabel("cross-entropy loss")
    left.legend(fontsize=8)
    right.plot(history["held_out_step"], history["held_out_exact_match"], color=GREEN, marker=".")
    right.set_ylim(0, 1.02)
    right.set_xlabel("training step")
    right.set_ylabel("held-out exact match")
    if title:
        figure.suptitle(title)
    return figure


def plot_accuracy_curves(histories: dict[str, list[dict[str, list[float]]]]) -> Figure:
    """Held-out exact match against the training step: mean and range over seeds, per variant.

    Left, the accuracy itself; right, the error (1 - exact match) on a log
    scale, where the last fraction of a percent is visible.

    Args:
        histories: variant label -> the training histories of its seeds.

    Examples:
        >>> history = {"held_out_step": [100, 200], "held_out_exact_match": [0.5, 0.9]}
        >>> figure = plot_accuracy_curves({"a": [history, history]})
        >>> [axes.get_ylabel() for axes in figure.axes]
        ['held-out exact match', 'held-out error (1 - exact match)']
    """
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    colours = [GREY, BLUE, ORANGE, GREEN]
    for colour, (label, runs) in zip(colours, histories.items()):
        steps = np.asarray(runs[0]["held_out_step"])
        accuracy = np.asarray([run["held_out_exact_match"] for run in runs])  # (seeds, points)
        error = np.clip(1 - accuracy, 1e-4, None)  # 1e-4: one miss in 10,000, the floor
        name = f"{label} ({len(runs)} seeds)"
        for axes, values in ((left, accuracy), (right, error)):
            axes.fill_between(steps, values.min(0), values.max(0), color=colour, alpha=0.2, lw=0)
            axes.plot(steps, values.mean(0), color=colour, lw=1.5, label=name)
    left.set_ylim(0, 1.01)
    left.set_ylabel("held-out exact match")
    right.set_yscale("log")
    right.set_ylabel("held-out error (1 - exact match)")
    for axes in (left, right):
        axes.set_xlabel("training step")
        axes.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")
    return figure


def plot_difference_profile(
    profiles: list[tuple[list[int], torch.Tensor]], step_labels: list[str]
) -> Figure:
    """Where the difference step's self-attention goes, against count(A) - count(B).

    Args:
        profiles: one ``(differences, rows)`` per seed, as returned by
            [`difference_step_profile`][attnprimer.analysis.difference_step_profile].
        step_labels: names of the output steps, e.g. ``["A", "B", "C", "|A-B|"]``.

    Examples:
        >>> rows = torch.tensor([[0.1, 0.6, 0.0, 0.3], [0.6, 0.1, 0.0, 0.3]])
        >>> figure = plot_difference_profile([([-1, 1], rows)], ["A", "B", "C", "|A-B|"])
        >>> figure.axes[0].get_xlabel()
        'count(A) - count(B)'
    """
    figure = Figure(figsize=(7, 3.8), layout="constrained")
    axes = figure.add_subplot()
    colours = [ORANGE, BLUE, GREY, GREEN]
    styles = ["-", "--", ":"]
    for seed, (differences, rows) in enumerate(profiles):
        for step, (label, colour) in enumerate(zip(step_labels, colours, strict=True)):
            name = "itself" if step == len(step_labels) - 1 else f"step {label}"
            axes.plot(differences, rows[:, step].numpy(), color=colour, marker=".",
                      ls=styles[seed % len(styles)], label=name if seed == 0 else None)
    axes.axvline(0, color=GREY, lw=0.6)
    axes.set_ylim(0, 1)
    axes.set_xlabel("count(A) - count(B)")
    axes.set_ylabel("weight the difference step puts on...")
    axes.legend(fontsize=8, loc="upper center", ncols=len(step_labels))
    if len(profiles) > 1:
        seeds = ", ".join(str(seed) for seed in range(len(profiles)))
        axes.set_title(f"mean over held-out sequences; solid, dashed, dotted: seeds {seeds}",
                       fontsize=9)
    return figure


def plot_attention_grid(
    matrices: dict[str, torch.Tensor], step_labels: list[str], *, columns: int = 3
) -> Figure:
    """Several (T, T) self-attention matrices side by side on one [0, 1] colour scale.

    Examples:
        >>> figure = plot_attention_grid({"a": torch.eye(2), "b": torch.eye(2)}, ["x", "y"])
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['a', 'b']
    """
    rows = math.ceil(len(matrices) / columns)
    size = len(step_labels)
    figure = Figure(figsize=(0.9 + columns * (0.55 * size + 1.0), 0.6 + rows * (0.5 * size + 1.0)),
                    layout="constrained")
    grid = np.atleast_2d(figure.subplots(rows, columns, squeeze=False))
    image = None
    for index, axes in enumerate(grid.flat):
        if index >= len(matrices):
            axes.set_visible(False)
            continue
        title, weights = list(matrices.items())[index]
        image = draw_attention(axes, weights, step_labels, step_labels)
        axes.set_title(title, fontsize=9)
        axes.set_ylabel("output step")
        axes.set_xlabel("output step read")
    _weight_colorbar(figure, image, list(grid.flat))
    return figure


def plot_attention_patterns(length: int = 8, window: int = 2, padding: int = 3, seed: int = 0) -> Figure:
    """One set of random self-attention scores under soft, hard, padded, causal and local attention.

    Examples:
        >>> [axes.get_title() for axes in plot_attention_patterns().axes[:2]]
        ['soft, global', 'hard (argmax)']
    """
    from attnprimer.masks import causal_mask, local_mask, padding_mask

    generator = torch.Generator().manual_seed(seed)
    scores = 1.5 * torch.randn(length, length, generator=generator)  # (L, L)
    soft = masked_softmax(scores)
    hard = torch.nn.functional.one_hot(scores.argmax(-1), length).float()
    pad = padding_mask([length - padding], length)  # (1, S): the last `padding` keys are padding
    panels = {
        "soft, global": soft,
        "hard (argmax)": hard,
        f"padding (last {padding} keys)": masked_softmax(scores, pad),
        "causal": masked_softmax(scores, causal_mask(length)),
        f"local (|i - j| <= {window})": masked_softmax(scores, local_mask(length, window)),
    }
    figure = Figure(figsize=(9, 6.2), layout="constrained")
    grid = figure.subplots(2, 3)
    for index, axes in enumerate(grid.flat):
        if index >= len(panels):
            axes.set_visible(False)
            continue
        title, weights = list(panels.items())[index]
        image = axes.imshow(weights.numpy(), cmap=HEATMAP, vmin=0, vmax=1)
        axes.set_title(title, fontsize=10)
        axes.set_xticks(range(length))
        axes.set_yticks(range(length))
        axes.set_xlabel("key position j")
        axes.set_ylabel("query position i")
    _weight_colorbar(figure, image, list(grid.flat))
    return figure


def plot_causal_demo(length: int = 10, changed_from: int = 6, dim: int = 16, seed: int = 0) -> Figure:
    """Change the inputs from one position on; see which outputs of self-attention move.

    A randomly initialised 2-head [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention]
    runs on a sequence and on a copy whose positions ``changed_from`` and
    later are replaced. Bars show how far each position's output moved, with
    and without a causal mask.

    Examples:
        >>> figure = plot_causal_demo()
        >>> figure.axes[0].get_xlabel()
        'position'
    """
    from attnprimer.masks import causal_mask
    from attnprimer.multihead import MultiHeadAttention

    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        attention = MultiHeadAttention(dim, num_heads=2)
    x = torch.randn(1, length, dim, generator=generator)  # (B, L, D)
    changed = x.clone()
    changed[:, changed_from:] = torch.randn(1, length - changed_from, dim, generator=generator)
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    axes = figure.add_subplot()
    positions = np.arange(length)
    with torch.no_grad():
        for offset, (label, mask, colour) in enumerate((
            ("no mask", None, ORANGE),
            ("causal mask", causal_mask(length), BLUE),
        )):
            moved = (attention(changed, mask=mask)[0] - attention(x, mask=mask)[0])  # (1, L, D)
            size = moved[0].abs().amax(dim=-1).numpy()  # (L,) largest change per position
            axes.bar(positions + (offset - 0.5) * 0.4, size, width=0.4, color=colour, label=label)
    axes.axvspan(changed_from - 0.5, length - 0.5, color=GREY, alpha=0.12, lw=0)
    axes.text(changed_from - 0.4, axes.get_ylim()[1] * 0.92, "inputs changed here", fontsize=8)
    axes.set_xticks(positions)
    axes.set_xlabel("position")
    axes.set_ylabel("largest change of the output")
    axes.legend(fontsize=8, loc="upper left")
    return figure


def plot_attention_cost(points: Iterable[CostPoint]) -> Figure:
    """Time and peak memory of attention against the sequence length, log-log.

    On log-log axes a cost proportional to L^k is a straight line of slope k;
    each legend entry gives the slope fitted to the three longest sequences. Grey guides show slopes 2 (dashed) and 1 (dotted). Points with
    no measurable memory are left out.

    Args:
        points: the measurements, as made by [`measure_attention_cost`][attnprimer.cost.measure_attention_cost].

    Examples:
        >>> points = [CostPoint("a", 8, 1e-3, 2**20), CostPoint("a", 16, 4e-3, 2**22)]
        >>> figure = plot_attention_cost(points)
        >>> [axes.get_ylabel() for axes in figure.axes]
        ['time per call (ms)', 'peak extra memory (MiB)']
        >>> [text.get_text() for text in figure.axes[0].get_legend().get_texts()][0]
        'a (slope 2.0)'
    """
    points = list(points)
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    names = list(dict.fromkeys(point.implementation for point in points))
    anchors = {}
    for colour, name in zip((ORANGE, BLUE, GREEN), names):
        mine = sorted((point for point in points if point.implementation == name),
                      key=lambda point: point.length)
        lengths = np.asarray([point.length for point in mine], dtype=float)
        series = {
            left: np.asarray([point.seconds * 1e3 for point in mine]),
            right: np.asarray([np.nan if not point.peak_bytes else point.peak_bytes / 2**20
                               for point in mine]),
        }
        for axes, values in series.items():
            slope = _log_log_slope(lengths[-3:], values[-3:])
            label = name if not np.isfinite(slope) else f"{name} (slope {slope:.1f})"
            axes.plot(lengths, values, color=colour, marker="o", label=label)
            anchors.setdefault(axes, (lengths, values[-1]))
    for axes, (lengths, top) in anchors.items():
        if np.isfinite(top):
            for power, style, label in ((2, "--", "∝ L²"), (1, ":", "∝ L")):
                axes.plot(lengths, top * (lengths / lengths[-1]) ** power, color=GREY, ls=style,
                          lw=0.9, label=label)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("sequence length L")
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8, loc="upper left")
    left.set_ylabel("time per call (ms)")
    right.set_ylabel("peak extra memory (MiB)")
    return figure


def plot_sinusoidal(length: int = 64, dim: int = 64, starts: Iterable[int] = (0, 10, 30)) -> Figure:
    """The sinusoidal encoding as a heatmap, and the dot product of two positions against their offset.

    Examples:
        >>> figure = plot_sinusoidal(length=16, dim=8, starts=(0, 4))
        >>> [axes.get_xlabel() for axes in figure.axes[:2]]
        ['dimension', 'offset k']
    """
    from attnprimer.positional import sinusoidal_encoding

    starts = list(starts)
    encoding = sinusoidal_encoding(length, dim)  # (L, D)
    figure = Figure(figsize=(10, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.2]})
    image = left.imshow(encoding.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
    left.set_xlabel("dimension")
    left.set_ylabel("position")
    left.set_title(f"sinusoidal encoding (L = {length}, D = {dim})")
    figure.colorbar(image, ax=left, label="value")
    reach = length - max(starts)
    styles = [("-", 3.0), ("--", 1.8), (":", 1.8), ("-.", 1.2)]
    for colour, (style, width), start in zip((BLUE, ORANGE, GREEN, GREY), styles, starts):
        offsets = np.arange(-start, reach)
        products = (encoding[start] * encoding[start + offsets]).sum(-1).numpy()
        right.plot(offsets, products, color=colour, ls=style, lw=width,
                   label=f"from position {start}")
    right.set_xlabel("offset k")
    right.set_ylabel("p(i) · p(i + k)")
    right.set_title("similarity depends on the offset only")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    return figure


def plot_rotary_scores(dim: int = 16, length: int = 12, seed: int = 0) -> Figure:
    """The score of one query and one key placed at every pair of positions, two encodings.

    Left, rotary: the query and key are rotated by their positions, and the
    score depends on ``n - m`` only (constant along each diagonal). Right, the
    sinusoidal encoding added to both: the score also depends on where the pair sits.

    Examples:
        >>> [axes.get_xlabel() for axes in plot_rotary_scores().axes[:2]]
        ['key position n', 'key position n']
    """
    from attnprimer.positional import apply_rotary, sinusoidal_encoding

    generator = torch.Generator().manual_seed(seed)
    query, key = torch.randn(2, dim, generator=generator)
    rotated_queries = apply_rotary(query.expand(length, dim))  # (L, D): the query at every m
    rotated_keys = apply_rotary(key.expand(length, dim))  # (L, D): the key at every n
    encoding = sinusoidal_encoding(length, dim)
    panels = {
        "rotary: (R_m q) · (R_n k)": rotated_queries @ rotated_keys.T,
        "added: (q + p_m) · (k + p_n)": (query + encoding) @ (key + encoding).T,
    }
    figure = Figure(figsize=(9, 3.9), layout="constrained")
    for axes, (title, scores) in zip(figure.subplots(1, 2), panels.items(), strict=True):
        limit = float(scores.abs().max())
        image = axes.imshow(scores.numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit)
        axes.set_title(title, fontsize=10)
        axes.set_xlabel("key position n")
        axes.set_ylabel("query position m")
        figure.colorbar(image, ax=axes, label="score q · k", fraction=0.05)
    return figure


def plot_learned_norms(norms: dict[str, torch.Tensor], length: int) -> Figure:
    """The L2 norm of a learned positional encoding at each position, one bar group per model.

    Examples:
        >>> figure = plot_learned_norms({"seed 0": torch.tensor([2.0, 0.5, 0.5])}, length=3)
        >>> figure.axes[0].get_ylabel()
        'L2 norm of the encoding'
    """
    figure = Figure(figsize=(8, 3.4), layout="constrained")
    axes = figure.add_subplot()
    positions = np.arange(length)
    width = 0.8 / max(1, len(norms))
    for index, (colour, (label, values)) in enumerate(zip((BLUE, ORANGE, GREEN, GREY),
                                                          norms.items())):
        axes.bar(positions + (index - (len(norms) - 1) / 2) * width,
                 values[:length].numpy(), width=width, color=colour, label=label)
    axes.set_xticks(positions, ["0\n(signal)", *map(str, positions[1:])])
    axes.set_xlabel("input position")
    axes.set_ylabel("L2 norm of the encoding")
    axes.legend(fontsize=8)
    return figure


def plot_length_generalisation(
    curves: dict[str, tuple[list[int], list[float]]], trained_length: int
) -> Figure:
    """Exact match against the input length, for models trained at one length.

    Args:
        curves: label -> (lengths, exact match at each).
        trained_length: the length the models were trained on, marked.

    Examples:
        >>> figure = plot_length_generalisation({"a": ([5, 10], [0.2, 1.0])}, trained_length=10)
        >>> figure.axes[0].get_xlabel()
        'input length (letters to count over)'
    """
    figure = Figure(figsize=(8, 3.8), layout="constrained")
    axes = figure.add_subplot()
    colours = (GREY, BLUE, ORANGE, GREEN, "#CC79A7", "#56B4E9")
    for colour, (label, (lengths, scores)) in zip(colours, curves.items()):
        axes.plot(lengths, scores, color=colour, marker="o", ms=4, label=label)
    axes.axvline(trained_length, color=GREY, ls="--", lw=0.8)
    axes.text(trained_length + 0.2, 0.02, "trained here", fontsize=8, color=GREY)
    axes.set_ylim(0, 1.02)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("input length (letters to count over)")
    axes.set_ylabel("held-out exact match")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper right")
    return figure


def plot_signal_attention(task: Task, tokens: torch.Tensor, prediction: torch.Tensor,
                          attention: dict[str, torch.Tensor]) -> Figure:
    """A signal model on one input: the encoder's self-attention, and what the output reads.

    Examples:
        >>> task = SignalTask(max_len=3)
        >>> attention = {"encoder self": torch.full((4, 4), 0.25),
        ...              "encoder-decoder": torch.full((1, 4), 0.25)}
        >>> figure = plot_signal_attention(task, task.encode("ABAB"), torch.tensor([1]), attention)
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['encoder self-attention', 'output step reads the encoded input']
    """
    labels = [f"{char}\n{step}" for step, char in enumerate(task.decode(tokens))]
    rows = [f"{char} {step}" for step, char in enumerate(task.decode(tokens))]
    size = len(labels)
    figure = Figure(figsize=(1.6 + 0.55 * size + 1.2, 1.8 + 0.42 * (size + 1) + 0.6),
                    layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [size, 1.4]})
    image = draw_attention(top, attention["encoder self"], rows, labels)
    top.set_title("encoder self-attention")
    top.set_ylabel("query: input step")
    top.set_xlabel("key: input step")
    top.tick_params(labelbottom=True)
    draw_attention(bottom, attention["encoder-decoder"], [f"count = {int(prediction[0])}"], labels)
    bottom.set_title("output step reads the encoded input")
    bottom.set_xlabel("input letter and step (step 0 is the signal)")
    bottom.set_ylabel("output")
    _weight_colorbar(figure, image, [top, bottom])
    return figure


def _log_log_slope(lengths: np.ndarray, values: np.ndarray) -> float:
    """Least-squares slope of log(values) against log(lengths); NaN if any value is missing."""
    if len(values) < 2 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        return float("nan")
    return float(np.polyfit(np.log(lengths), np.log(values), 1)[0])


# --- saving ----------------------------------------------------------------------------------


def save_figure(figure: Figure, path: str | os.PathLike) -> Path:
    """Save ``figure`` reproducibly (no timestamps, fixed SVG ids); the format follows the suffix.

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> first = save_figure(plot_score_functions(), folder / "a.svg").read_bytes()
        >>> first == save_figure(plot_score_functions(), folder / "b.svg").read_bytes()
        True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Date": None} if path.suffix in {".svg", ".pdf"} else {}
    with rc_context(_STYLE):
        figure.savefig(path, metadata=metadata, facecolor="white")
    return path


# --- the site's models -----------------------------------------------------------------------


SEEDS = (0, 1, 2)
"""The training seeds of every model the site compares across seeds."""

DIFFERENCE_VARIANTS: dict[str, dict[str, bool]] = {
    "no self-attention": {},
    "self-attention": {"self_att": True},
    "self-attention with W_q, W_k, W_v": {"self_att": True, "projections": True},
}
"""The difference models the self-attention chapter compares, by label: their task settings."""


def _default(task: Task, seed: int) -> tuple[Task, TrainConfig]:
    return task, TrainConfig(**{**type(task).train_defaults, "seed": seed})


def difference_label(variant: str, seed: int) -> str:
    """The [`SITE_MODELS`][attnprimer.figures.SITE_MODELS] label of a difference model."""
    return f"difference, {variant}, seed {seed}"


def signal_label(encoding: str, seed: int) -> str:
    """The [`SITE_MODELS`][attnprimer.figures.SITE_MODELS] label of a signal model."""
    return f"signal, {encoding} encoding, seed {seed}"


SITE_MODELS: dict[str, tuple[Task, TrainConfig]] = {
    **{f"counting, seed {seed}": _default(CountingTask(), seed) for seed in SEEDS},
    # The original primer's recipe: 2000 steps at a constant learning rate of 1e-2.
    "counting, original recipe": (
        CountingTask(), TrainConfig(steps=2000, lr=1e-2, schedule="constant", seed=0)
    ),
}
"""Every trained model the site shows, by label (``attnprimer train all`` trains them)."""

SITE_MODELS.update({
    difference_label(variant, seed): _default(DifferenceTask(**settings), seed)
    for variant, settings in DIFFERENCE_VARIANTS.items()
    for seed in SEEDS
})

SITE_MODELS.update({
    signal_label(encoding, seed): _default(SignalTask(pos_enc=encoding), seed)
    for encoding in POSITIONAL_ENCODINGS
    for seed in SEEDS
})

REVERSAL_MODELS: dict[str, dict[str, str]] = {
    "vanilla": {"decoder": "vanilla"},
    "peeky": {"decoder": "peeky"},
    "attention (additive)": {"decoder": "attention", "score": "additive"},
    "attention (dot)": {"decoder": "attention", "score": "dot"},
}
"""The encoder-decoders of the RNN chapters, by label: their task settings (one seed each).

Luong's general score is an option of the task and the CLI, left out here to keep the
training budget of the RNN models under two minutes."""

SITE_MODELS.update({
    f"reversal, {label}": _default(ReversalTask(**settings), 0)
    for label, settings in REVERSAL_MODELS.items()
})

COUNTING_EXAMPLE = "AACCB CCCB"
"""The counting example of the original primer's README, shown on the QKV page."""

DIFFERENCE_EXAMPLE = "BBBA ACABB"
"""The example of the original primer's difference README (with self-attention)."""


def _trained(label: str) -> TrainedModel:
    task, config = SITE_MODELS[label]
    return get_trained(task, config)


# --- the registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """How to build one artifact of the site.

    Attributes:
        name: file stem; the page refers to ``figures/<name>.svg`` or includes ``<name>.md``.
        build: returns a Figure (saved as SVG) or Markdown text (saved as .md).
        description: what it shows, for ``attnprimer figures`` and the reference.
    """

    name: str
    build: Callable[[], Figure | str]
    description: str


FIGURES: dict[str, Recipe] = {}
"""Every recipe, by name."""


def _recipe(name: str, description: str):
    def register(build: Callable[[], Figure | str]) -> Callable[[], Figure | str]:
        if name in FIGURES:
            raise ValueError(f"recipe {name!r} is registered twice")
        FIGURES[name] = Recipe(name, build, description)
        return build

    return register


@_recipe("qkv_cosine_vs_dot", "scatter of cosine similarity against dot product")
def _qkv_cosine_vs_dot() -> Figure:
    return plot_cosine_vs_dot()


@_recipe("qkv_score_scaling", "score spread and softmax saturation against Dk")
def _qkv_score_scaling() -> Figure:
    return plot_score_scaling()


@_recipe("qkv_score_functions", "one set of queries and keys under three score functions")
def _qkv_score_functions() -> Figure:
    return plot_score_functions()


@_recipe("qkv_score_table", "the three score functions: formula, parameters, cost")
def _qkv_score_table() -> str:
    dim = 64
    rows = [
        ("scaled dot product", r"$q^\top k / \sqrt{D_k}$", 0, "$D_k$ multiply-adds"),
        ("general (Luong)", r"$q^\top W k$", _parameters(GeneralScore(dim, dim)),
         "$D_q D_k$ per query, then a dot"),
        ("additive (Bahdanau)", r"$v^\top \tanh(W_q q + W_k k)$",
         _parameters(AdditiveScore(dim, dim, hidden_dim=dim)), "$A$ adds, tanh and multiply-adds"),
    ]
    lines = [
        "| score | formula | learned parameters | cost per pair |",
        "|---|---|--:|---|",
    ]
    for name, formula, count, cost in rows:
        lines.append(f"| {name} | {formula} | {count:,} | {cost} |")
    lines += ["", f"Parameters counted on the modules for $D_q = D_k = A = {dim}$."]
    return "\n".join(lines) + "\n"


def _parameters(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


def _counting_example():
    """The seed-0 counting model on the primer's example: task, tokens, prediction, weights."""
    trained = _trained("counting, seed 0")
    tokens = trained.task.encode(COUNTING_EXAMPLE)
    return (trained.task, tokens, *predict_one(trained.model, tokens))


@_recipe("counting_heatmap", "the trained counting model's attention on the primer's example")
def _counting_heatmap() -> Figure:
    task, tokens, prediction, attention = _counting_example()
    return plot_task_attention(task, tokens, prediction, attention["encoder-decoder"])


@_recipe("counting_sample", "`attnprimer test counting` on the primer's example")
def _counting_sample() -> str:
    task, tokens, prediction, attention = _counting_example()
    report = attention_report(task, tokens, prediction, attention, task.targets_for(tokens[None])[0])
    return f'```text\n$ attnprimer test counting --input "{COUNTING_EXAMPLE}"\n{report}\n```\n'


@_recipe("counting_training", "the counting model's loss and held-out accuracy while training")
def _counting_training() -> Figure:
    return plot_training(_trained("counting, seed 0").history)


@_recipe("counting_mass", "how much weight each query puts on its own letter, by count")
def _counting_mass() -> Figure:
    trained = _trained("counting, seed 0")
    counts, mass = own_letter_mass(trained)
    return plot_own_letter_mass(counts, mass, trained.task.max_len)


@_recipe("counting_accuracy", "held-out accuracy of the counting models, three seeds")
def _counting_accuracy() -> str:
    labels = [label for label in SITE_MODELS if label.startswith("counting")]
    first = _trained(labels[0])
    letters = first.task.output_labels()
    header = "| model | training | exact match | " + " | ".join(
        f"count of {letter}" for letter in letters) + " |"
    lines = [header, "|---|---|--:|" + "--:|" * len(letters)]
    for label in labels:
        trained = _trained(label)
        result = evaluate(trained)
        config = trained.config
        recipe = (f"{config.steps:,} steps, lr {config.lr:g}, {config.schedule}")
        steps = " | ".join(f"{accuracy:.2%}" for accuracy in result.per_step)
        lines.append(f"| {label} | {recipe} | **{result.exact_match:.2%}** | {steps} |")
    lines += [
        "",
        f"Each model scored on {result.samples:,} held-out sequences, drawn from a random stream "
        f"that no training batch comes from; batches of {first.config.batch_size} sequences, Adam.",
    ]
    return "\n".join(lines).replace("%", r"&nbsp;%") + "\n"


# --- the self-attention chapter ----------------------------------------------------------------


def _difference_models(variant: str) -> list[TrainedModel]:
    return [_trained(difference_label(variant, seed)) for seed in SEEDS]


def _self_attention_models() -> list[tuple[str, int, TrainedModel]]:
    """(short variant name, seed, model) for every difference model with self-attention."""
    shorts = {"self-attention": "no projections",
              "self-attention with W_q, W_k, W_v": "W_q, W_k, W_v"}
    return [(short, seed, trained) for variant, short in shorts.items()
            for seed, trained in zip(SEEDS, _difference_models(variant), strict=True)]


def _percent(value: float) -> str:
    return f"{value:.2%}".replace("%", "&nbsp;%")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (``|A-B|`` would end the cell)."""
    return text.replace("|", "\\|")


@_recipe("difference_accuracy", "held-out accuracy of the difference models, three seeds each")
def _difference_accuracy() -> str:
    first = _trained(difference_label("self-attention", SEEDS[0]))
    labels = first.task.output_labels()
    lines = [
        "| model | seed | exact match | " + " | ".join(map(_cell, labels)) + " |",
        "|---|--:|--:|" + "--:|" * len(labels),
    ]
    summary = []
    for variant in DIFFERENCE_VARIANTS:
        results = [evaluate(trained) for trained in _difference_models(variant)]
        for seed, result in zip(SEEDS, results, strict=True):
            steps = " | ".join(_percent(accuracy) for accuracy in result.per_step)
            lines.append(f"| {variant} | {seed} | **{_percent(result.exact_match)}** | {steps} |")
        exact = np.asarray([result.exact_match for result in results])
        summary.append(f"{variant}: mean {_percent(exact.mean())}, "
                       f"from {_percent(exact.min())} to {_percent(exact.max())}")
    lines += [
        "",
        f"Exact match: all {len(labels)} outputs right. Each model scored on "
        f"{results[0].samples:,} held-out sequences; trained {first.config.steps:,} steps, "
        f"batches of {first.config.batch_size}, Adam from lr {first.config.lr:g} with "
        f"{first.config.schedule} decay. Over the seeds: " + "; ".join(summary) + ".",
    ]
    return "\n".join(lines) + "\n"


@_recipe("difference_training", "held-out exact match while training, per variant, over seeds")
def _difference_training() -> Figure:
    return plot_accuracy_curves({
        variant: [trained.history for trained in _difference_models(variant)]
        for variant in DIFFERENCE_VARIANTS
    })


def _difference_example(variant: str):
    trained = _trained(difference_label(variant, SEEDS[0]))
    tokens = trained.task.encode(DIFFERENCE_EXAMPLE)
    return (trained.task, tokens, *predict_one(trained.model, tokens))


def _difference_heatmap(variant: str) -> Figure:
    task, tokens, prediction, attention = _difference_example(variant)
    return plot_task_attention(task, tokens, prediction, attention["encoder-decoder"],
                               self_weights=attention.get("self"))


def _difference_sample(variant: str) -> str:
    task, tokens, prediction, attention = _difference_example(variant)
    report = attention_report(task, tokens, prediction, attention, task.targets_for(tokens[None])[0])
    flags = "".join(f" --{name.replace('_', '-')}" for name in DIFFERENCE_VARIANTS[variant])
    return (f'```text\n$ attnprimer test difference{flags} --input "{DIFFERENCE_EXAMPLE}"\n'
            f"{report}\n```\n")


for _variant, _stem in (("no self-attention", "plain"), ("self-attention", "self")):
    _recipe(f"difference_heatmap_{_stem}",
            f"attention of the difference model ({_variant}, seed 0) on the primer's example")(
        lambda variant=_variant: _difference_heatmap(variant))
    _recipe(f"difference_sample_{_stem}",
            f"`attnprimer test difference` ({_variant}, seed 0) on the primer's example")(
        lambda variant=_variant: _difference_sample(variant))


@_recipe("difference_encoder_weights", "where the difference step reads the input, per variant")
def _difference_encoder_weights() -> str:
    from attnprimer.analysis import encoder_weight_by_token

    task = _trained(difference_label("self-attention", SEEDS[0])).task
    kinds = ["blank" if char == BLANK else char for char in task.alphabet]
    lines = ["| model | " + " | ".join(f"one {kind}" for kind in kinds) + " |",
             "|---|" + "--:|" * len(kinds)]
    for variant in DIFFERENCE_VARIANTS:
        weights = torch.stack([encoder_weight_by_token(trained)
                               for trained in _difference_models(variant)])  # (seeds, V + 1)
        low, mean, high = weights.amin(0), weights.mean(0), weights.amax(0)
        cells = " | ".join(f"{m:.3f} ({lo:.3f}–{hi:.3f})" for lo, m, hi in zip(low, mean, high))
        lines.append(f"| {variant} | {cells} |")
    lines += ["", f"Mean weight the difference step's encoder-decoder attention gives one input "
              f"position holding each kind of token, over 5,000 held-out sequences and "
              f"{len(SEEDS)} seeds (range in brackets). Even attention would give "
              f"1/{task.max_len} = {1 / task.max_len:.3f} to every kind."]
    return "\n".join(lines) + "\n"


@_recipe("difference_self_means", "mean self-attention of every self-attention model")
def _difference_self_means() -> Figure:
    from attnprimer.analysis import mean_self_attention

    models = _self_attention_models()
    matrices = {f"{short}, seed {seed}": mean_self_attention(trained)
                for short, seed, trained in models}
    labels = models[0][2].task.output_labels()
    return plot_attention_grid(matrices, labels, columns=len(SEEDS))


@_recipe("difference_profile", "the difference step's self-attention against count(A) - count(B)")
def _difference_profile() -> Figure:
    from attnprimer.analysis import difference_step_profile

    models = _difference_models("self-attention")
    profiles = [difference_step_profile(trained) for trained in models]
    return plot_difference_profile(profiles, models[0].task.output_labels())


@_recipe("difference_interventions", "the difference step's accuracy under ablations and swaps")
def _difference_interventions() -> str:
    from attnprimer.analysis import block_and_swap

    columns = {f"{short}<br>seed {seed}": block_and_swap(trained)
               for short, seed, trained in _self_attention_models()}
    conditions = list(next(iter(columns.values())))
    lines = ["| the difference step... | " + " | ".join(columns) + " |",
             "|---|" + "--:|" * len(columns)]
    for condition in conditions:
        cells = " | ".join(_percent(results[condition]) for results in columns.values())
        lines.append(f"| {condition} | {cells} |")
    lines += ["", "Accuracy of the difference step on the 10,000 held-out sequences minus those "
              "with count(A) = count(B), where no count is the larger."]
    return "\n".join(lines) + "\n"


@_recipe("difference_probes", "linear probes on the difference step's state, per variant")
def _difference_probes() -> str:
    from attnprimer.analysis import probe_difference_step

    results = {variant: [probe_difference_step(trained, samples=5000)
                         for trained in _difference_models(variant)]
               for variant in DIFFERENCE_VARIANTS}
    keys = list(dict.fromkeys((probe.target, probe.state)
                              for runs in results.values() for run in runs for probe in run))
    lines = ["| probe reads | from the difference step's state | "
             + " | ".join(results) + " |",
             "|---|---|" + "--:|" * len(results)]
    for target, state in keys:
        cells = []
        for runs in results.values():
            values = [probe.accuracy for run in runs for probe in run
                      if (probe.target, probe.state) == (target, state)]
            cells.append("—" if not values else
                         f"{_percent(float(np.mean(values)))} "
                         f"({100 * min(values):.1f}–{100 * max(values):.1f})")
        where = "before self-attention" if state == "before" else "after self-attention"
        lines.append(f"| {_cell(target)} | {where} | " + " | ".join(cells) + " |")
    lines += ["", f"Mean over {len(SEEDS)} seeds (range in brackets). Probes are multinomial "
              "logistic regressions fitted on 5,000 held-out sequences and scored on 5,000 others. "
              "Without self-attention, *before* is the state the classifier reads."]
    return "\n".join(lines) + "\n"


@_recipe("selfatt_patterns", "soft, hard, padded, causal and local attention on the same scores")
def _selfatt_patterns() -> Figure:
    return plot_attention_patterns()


@_recipe("selfatt_causal", "which outputs move when later inputs change, with and without a mask")
def _selfatt_causal() -> Figure:
    return plot_causal_demo()


@functools.cache
def _cost_points():
    """One measurement per process, shared by the cost figure and table so they agree."""
    from attnprimer.cost import measure_in_fresh_process

    return tuple(measure_in_fresh_process())


@_recipe("selfatt_cost", "time and peak memory of attention against sequence length (measured)")
def _selfatt_cost() -> Figure:
    return plot_attention_cost(_cost_points())


@_recipe("selfatt_cost_table", "the measured cost numbers, with the growth per doubling of L")
def _selfatt_cost_table() -> str:
    points = _cost_points()
    names = list(dict.fromkeys(point.implementation for point in points))
    lengths = sorted({point.length for point in points})
    by = {(point.implementation, point.length): point for point in points}
    header = "| L | " + " | ".join(f"{name}: time | memory" for name in names) + " |"
    lines = [header, "|--:|" + "--:|--:|" * len(names)]
    for length in lengths:
        cells = []
        for name in names:
            point = by[name, length]
            memory = "n/a" if point.peak_bytes is None else f"{point.peak_bytes / 2**20:.1f} MiB"
            cells.append(f"{point.seconds * 1e3:.2f} ms | {memory}")
        lines.append(f"| {length:,} | " + " | ".join(cells) + " |")
    growth = []
    for name in names:
        first, last = by[name, lengths[-2]], by[name, lengths[-1]]
        memory = ("" if not first.peak_bytes or not last.peak_bytes
                  else f", memory × {last.peak_bytes / first.peak_bytes:.1f}")
        growth.append(f"{name}: time × {last.seconds / first.seconds:.1f}{memory}")
    lines += ["", f"From L = {lengths[-2]:,} to {lengths[-1]:,}: " + "; ".join(growth) + ". "
              f"One sequence, H = 4 heads of Dh = 64, float32, {torch.get_num_threads()} threads, "
              "fastest of 3 calls (median of 3 for memory), measured when this page was built."]
    return "\n".join(lines) + "\n"


@_recipe("multihead_shapes", "the shapes inside multi-head attention, printed by running it")
def _multihead_shapes() -> str:
    from attnprimer.multihead import MultiHeadAttention, split_heads

    batch, length, memory_length, dim, heads = 2, 5, 7, 8, 2
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attention = MultiHeadAttention(dim, heads)
    x = torch.randn(batch, length, dim)
    memory = torch.randn(batch, memory_length, dim)
    q = split_heads(attention.query_proj(x), heads)
    k = split_heads(attention.key_proj(memory), heads)
    output, weights = attention(x, memory)
    rows = [
        ("queries come from x", "x", x),
        ("keys and values from memory", "memory", memory),
        ("project, then split_heads", "q = split_heads(W_q x)", q),
        ("", "k = split_heads(W_k memory)", k),
        ("one score per (head, query, key)", "weights", weights),
        ("weighted values, per head", "weights @ v", weights @ split_heads(
            attention.value_proj(memory), heads)),
        ("merge_heads, then W_o", "output", output),
    ]
    lines = [f"```text\nB={batch}, L={length}, S={memory_length}, D={dim}, H={heads}, "
             f"Dh=D/H={dim // heads}"]
    for note, name, tensor in rows:
        lines.append(f"{name:<28}{str(tuple(tensor.shape)):<16}{note}")
    return "\n".join(lines) + "\n```\n"


# --- the positional-encoding chapter ---------------------------------------------------------

SIGNAL_EXAMPLE = "BCACABBAACB"
"""The signal example of the original primer's README (signal B, three more Bs)."""

LENGTHS = tuple(range(5, 21))
"""The input lengths the length-generalisation figure evaluates at."""


def _signal_models(encoding: str) -> list[TrainedModel]:
    return [_trained(signal_label(encoding, seed)) for seed in SEEDS]


@_recipe("pe_equivariance", "permutation equivariance of attention, measured on our modules")
def _pe_equivariance() -> str:
    from attnprimer.multihead import MultiHeadAttention
    from attnprimer.positional import sinusoidal_encoding

    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attention = MultiHeadAttention(16, num_heads=4).double()
    x = torch.randn(1, 10, 16, generator=generator, dtype=torch.float64)  # (B, L, D)
    order = torch.randperm(10, generator=generator)
    encoding = sinusoidal_encoding(10, 16).double()
    counting = _trained("counting, seed 0")
    tokens = counting.task.sample(1, torch.Generator().manual_seed(1)).inputs
    with torch.no_grad():
        rows = [
            ("self-attention, shuffled input vs shuffled output",
             (attention(x[:, order])[0] - attention(x)[0][:, order]).abs().max()),
            ("self-attention with sinusoidal encoding added, the same comparison",
             (attention(x[:, order] + encoding)[0]
              - attention(x + encoding)[0][:, order]).abs().max()),
            ("counting model, logits of a shuffled input vs the original",
             (counting.model(tokens[:, order]).logits - counting.model(tokens).logits).abs().max()),
        ]
    lines = ["| what is compared | largest difference |", "|---|--:|"]
    lines += [f"| {what} | {float(value):.1e} |" for what, value in rows]
    lines += ["", "One random sequence of 10 vectors (D = 16, 4 heads, float64) and one random "
              "shuffle of its positions; the counting model in float32."]
    return "\n".join(lines) + "\n"


@_recipe("pe_sinusoidal", "the sinusoidal encoding and its dot product against the offset")
def _pe_sinusoidal() -> Figure:
    return plot_sinusoidal()


@_recipe("pe_rotary", "scores of one query-key pair at every pair of positions, rotary vs added")
def _pe_rotary() -> Figure:
    return plot_rotary_scores()


@_recipe("signal_accuracy", "held-out accuracy of the signal models, with the multiset bound")
def _signal_accuracy() -> str:
    from attnprimer.tasks.signal import multiset_bound

    first = _trained(signal_label("learned", SEEDS[0]))
    lines = ["| positional encoding | " + " | ".join(f"seed {seed}" for seed in SEEDS)
             + " | mean |", "|---|" + "--:|" * (len(SEEDS) + 1)]
    for encoding in POSITIONAL_ENCODINGS:
        scores = [evaluate(trained).exact_match for trained in _signal_models(encoding)]
        cells = " | ".join(_percent(score) for score in scores)
        lines.append(f"| {encoding} | {cells} | **{_percent(float(np.mean(scores)))}** |")
    bound = float(multiset_bound(first.task.max_len, first.task.vocab_size))
    lines.append(f"| *best possible from the multiset alone* | " + " | ".join([""] * len(SEEDS))
                 + f" | *{_percent(bound)}* |")
    lines += ["", f"Exact match on {10_000:,} held-out sequences of {first.task.length} letters. "
              f"Trained {first.config.steps:,} steps, batches of {first.config.batch_size}, Adam "
              f"from lr {first.config.lr:g} with {first.config.schedule} decay. The bound is exact "
              f"(computed over every count vector, "
              f"[`multiset_bound`][attnprimer.tasks.signal.multiset_bound])."]
    return "\n".join(lines) + "\n"


@_recipe("signal_errors", "which counts the signal models get wrong, per encoding")
def _signal_errors() -> str:
    from attnprimer.train import held_out_generator, predict

    classes = _trained(signal_label("none", SEEDS[0])).task.num_classes
    misses = {}
    for encoding in POSITIONAL_ENCODINGS:
        misses[encoding] = torch.zeros(classes, dtype=torch.long)
        seen = torch.zeros(classes, dtype=torch.long)
        for trained in _signal_models(encoding):
            batch = trained.task.sample(10_000, held_out_generator())
            _, predictions = predict(trained.model, batch.inputs)
            truth = batch.targets[:, 0]
            misses[encoding] += torch.bincount(truth[predictions[:, 0] != truth],
                                               minlength=classes)
            seen += torch.bincount(truth, minlength=classes)  # the same data for every model
    lines = ["| true count | sequences | " + " | ".join(f"wrong, {encoding}"
                                                      for encoding in misses) + " |",
             "|--:|--:|" + "--:|" * len(misses)]
    for count in range(classes):
        cells = " | ".join(str(int(wrong[count])) for wrong in misses.values())
        lines.append(f"| {count} | {int(seen[count]):,} | {cells} |")
    totals = " | ".join(f"**{int(wrong.sum()):,}**" for wrong in misses.values())
    lines.append(f"| all | {int(seen.sum()):,} | {totals} |")
    return "\n".join([*lines, "", f"Wrong answers by the true count, summed over "
                      f"{len(SEEDS)} seeds, each scored on the same 10,000 held-out sequences "
                      f"(so every sequence is counted once per seed)."]) + "\n"


@_recipe("signal_training", "held-out exact match of the signal models while training")
def _signal_training() -> Figure:
    return plot_accuracy_curves({
        f"{encoding} encoding": [trained.history for trained in _signal_models(encoding)]
        for encoding in POSITIONAL_ENCODINGS
    })


def _signal_example(encoding: str = "learned"):
    trained = _trained(signal_label(encoding, SEEDS[0]))
    tokens = trained.task.encode(SIGNAL_EXAMPLE)
    return (trained, tokens, *predict_one(trained.model, tokens))


@_recipe("signal_heatmap", "the learned-encoding signal model on the primer's example")
def _signal_heatmap() -> Figure:
    trained, tokens, prediction, attention = _signal_example()
    return plot_signal_attention(trained.task, tokens, prediction, attention)


@_recipe("signal_sample", "`attnprimer test signal --pos-enc learned` on the primer's example")
def _signal_sample() -> str:
    trained, tokens, prediction, attention = _signal_example()
    task = trained.task
    report = attention_report(task, tokens, prediction,
                              {"encoder-decoder": attention["encoder-decoder"]},
                              task.targets_for(tokens[None])[0])
    norms = encoding_norms_report(trained.model, len(tokens))
    return (f'```text\n$ attnprimer test signal --pos-enc learned --input "{SIGNAL_EXAMPLE}"\n'
            f"{report}\n\n(encoder self-attention rows left out here: see the heatmap)\n\n"
            f"{norms}\n```\n")


@_recipe("signal_norms", "the learned encoding's norm at each position, three seeds")
def _signal_norms() -> Figure:
    models = _signal_models("learned")
    norms = {f"seed {seed}": trained.model.position.norms()
             for seed, trained in zip(SEEDS, models, strict=True)}
    return plot_learned_norms(norms, models[0].task.length)


@_recipe("signal_where", "where the signal models' output step looks, per encoding")
def _signal_where() -> str:
    from attnprimer.analysis import signal_attention

    kinds = None
    lines = []
    for encoding in POSITIONAL_ENCODINGS:
        results = [signal_attention(trained) for trained in _signal_models(encoding)]
        kinds = list(results[0])
        cells = " | ".join(
            f"{np.mean([result[kind] for result in results]):.3f}" for kind in kinds)
        lines.append(f"| {encoding} | {cells} |")
    length = _trained(signal_label("none", SEEDS[0])).task.length
    header = ["| encoding | " + " | ".join(kinds) + " |", "|---|" + "--:|" * len(kinds)]
    return "\n".join([*header, *lines, "", f"Mean weight of the output step on one position of "
                      f"each kind, over 5,000 held-out sequences and {len(SEEDS)} seeds. Even "
                      f"attention would give 1/{length} = {1 / length:.3f}."]) + "\n"


@_recipe("length_generalisation", "exact match against the input length, trained at length 10")
def _length_generalisation() -> Figure:
    from attnprimer.analysis import accuracy_by_length

    curves = {}
    groups = {"counting": [_trained(f"counting, seed {seed}") for seed in SEEDS]}
    groups.update({f"signal, {encoding} encoding": _signal_models(encoding)
                   for encoding in POSITIONAL_ENCODINGS if encoding != "none"})
    for label, models in groups.items():
        scores = np.mean([accuracy_by_length(trained, LENGTHS) for trained in models], axis=0)
        curves[f"{label} ({len(models)} seeds)"] = (list(LENGTHS), scores.tolist())
    return plot_length_generalisation(curves, trained_length=groups["counting"][0].task.max_len)


# --- the RNN chapters ----------------------------------------------------------------------------

REVERSAL_EXAMPLE = "HEADBADGE"
"""The reversal example shown with its alignment."""


def _reversal(label: str) -> TrainedModel:
    return _trained(f"reversal, {label}")


def _reversal_lengths(task: Task) -> list[int]:
    return list(range(1, 2 * task.max_len + 1))


@functools.cache
def _reversal_accuracy(label: str) -> dict[int, float]:
    """Exact match of one reversal model at every length up to twice its longest in training.

    Shared by the length figure and the accuracy table, which would otherwise decode the
    same 20,000 sequences twice per model.
    """
    from attnprimer.analysis import accuracy_by_length

    trained = _reversal(label)
    lengths = _reversal_lengths(trained.task)
    return dict(zip(lengths, accuracy_by_length(trained, lengths, samples=1000), strict=True))


@_recipe("rnn_length", "exact match against input length for the encoder-decoders")
def _rnn_length() -> Figure:
    curves = {}
    for label in REVERSAL_MODELS:
        scores = _reversal_accuracy(label)
        curves[label] = (list(scores), list(scores.values()))
    figure = plot_length_generalisation(curves, trained_length=_reversal("vanilla").task.max_len)
    axes = figure.axes[0]
    axes.set_xlabel("input length (letters to reverse)")
    axes.texts[0].set_text("longest in training")
    return figure


@_recipe("rnn_accuracy", "held-out exact match of the encoder-decoders, inside and beyond training")
def _rnn_accuracy() -> str:
    first = _reversal("vanilla")
    longest = first.task.max_len
    inside = list(range(first.task.min_len, longest + 1))
    beyond = list(range(longest + 1, 2 * longest + 1))
    lines = [f"| model | lengths {inside[0]}–{inside[-1]} (trained) | lengths {beyond[0]}–"
             f"{beyond[-1]} | length {longest} | length {2 * longest} |", "|---|--:|--:|--:|--:|"]
    for label in REVERSAL_MODELS:
        scores = _reversal_accuracy(label)
        mean_inside = np.mean([scores[length] for length in inside])
        mean_beyond = np.mean([scores[length] for length in beyond])
        lines.append(f"| {label} | {_percent(mean_inside)} | {_percent(mean_beyond)} | "
                     f"{_percent(scores[longest])} | {_percent(scores[2 * longest])} |")
    config = first.config
    lines += ["", f"Exact match (the whole reversed sequence and its end token right), 1,000 "
              f"held-out sequences per length, averaged over the lengths of each column. Every "
              f"model: a GRU encoder of {first.task.hidden} units, trained {config.steps:,} "
              f"steps on lengths {inside[0]}–{inside[-1]}, batches of {config.batch_size}, "
              f"teacher forcing, Adam from lr {config.lr:g} with {config.schedule} decay."]
    return "\n".join(lines) + "\n"


def _reversal_example():
    trained = _reversal("attention (additive)")
    tokens = trained.task.encode(REVERSAL_EXAMPLE)
    return (trained, tokens, *predict_one(trained.model, tokens))


@_recipe("rnn_alignment", "the attention model's alignment on one example (Bahdanau's Figure 3)")
def _rnn_alignment() -> Figure:
    trained, tokens, prediction, attention = _reversal_example()
    task = trained.task
    length = len(REVERSAL_EXAMPLE)
    output = task.decode_output(prediction)
    weights = attention["encoder-decoder"][: len(output), :length]  # (T, S) without padding
    output_labels = [char if char != "." else "end" for char in output]
    figure = plot_attention(weights, [f"{label} ({step})" for step, label in
                                      enumerate(output_labels)],
                            [f"{char}\n{step}" for step, char in enumerate(REVERSAL_EXAMPLE)],
                            xlabel="input letter and position",
                            ylabel="output letter (step)")
    return figure


@_recipe("rnn_sample", "`attnprimer test reversal` on the example")
def _rnn_sample() -> str:
    trained, tokens, prediction, attention = _reversal_example()
    task = trained.task
    report = attention_report(task, tokens, prediction, {}, task.targets_for(tokens[None])[0])
    return f'```text\n$ attnprimer test reversal --input "{REVERSAL_EXAMPLE}"\n{report}\n```\n'


@_recipe("rnn_alignment_table", "where each attention model's largest weight falls")
def _rnn_alignment_table() -> str:
    from attnprimer.analysis import alignment_offsets, encoder_state_probe

    first = _reversal("attention (additive)")
    longest = first.task.max_len
    lines = ["| model | lengths | on the copied letter | one to its right | elsewhere | "
             "state j holds letter j | state j holds letter j − 1 |",
             "|---|---|--:|--:|--:|--:|--:|"]
    for label in REVERSAL_MODELS:
        if not label.startswith("attention"):
            continue
        trained = _reversal(label)
        probe = encoder_state_probe(trained)
        for name, lengths in ((f"1–{longest}", range(1, longest + 1)),
                              (f"{longest + 1}–{2 * longest}", range(longest + 1, 2 * longest + 1))):
            offsets = alignment_offsets(trained, lengths)
            on, right = offsets.get(0, 0.0), offsets.get(1, 0.0)
            lines.append(f"| {label} | {name} | {_percent(on)} | {_percent(right)} | "
                         f"{_percent(1 - on - right)} | {_percent(probe['letter j'])} | "
                         f"{_percent(probe['letter j - 1'])} |")
    lines += ["", "Where the largest attention weight of each output letter falls (end token "
              "excluded), over 500 held-out inputs per length. The last two columns: linear "
              "probes reading the letter at position j, and the letter before it, from the "
              "encoder's state at position j (fitted on 2,000 held-out inputs, scored on 2,000 "
              "others)."]
    return "\n".join(lines) + "\n"


@_recipe("additive_by_hand", "additive attention in a few lines, checked against the module")
def _additive_by_hand() -> str:
    from attnprimer.additive import AdditiveAttention

    torch.manual_seed(0)
    module = AdditiveAttention(query_dim=6, key_dim=6, hidden_dim=5).double()
    generator = torch.Generator().manual_seed(0)
    state = torch.randn(1, 6, generator=generator, dtype=torch.float64)  # one decoder state s
    memory = torch.randn(4, 6, generator=generator, dtype=torch.float64)  # four encoder states h
    W_q, W_k, v = module.score.query_proj.weight, module.score.key_proj.weight, module.score.v
    # --8<-- [start:additive_by_hand]
    scores = torch.stack([v @ torch.tanh(W_q @ state[0] + W_k @ h) for h in memory])  # (S,)
    weights = torch.exp(scores) / torch.exp(scores).sum()  # softmax over the S encoder states
    context = (weights[:, None] * memory).sum(dim=0)  # weighted average of the states: (H,)
    # --8<-- [end:additive_by_hand]
    weights, context = weights.detach(), context.detach()
    with torch.no_grad():
        module_context, module_weights = module(state, memory, memory)
    lines = ["```text",
             f"weights by hand:    {[round(float(w), 4) for w in weights]}",
             f"weights, module:    {[round(float(w), 4) for w in module_weights[0]]}",
             f"largest difference: weights {float((weights - module_weights[0]).abs().max()):.1e}"
             f", context {float((context - module_context[0]).abs().max()):.1e}",
             "```"]
    return "\n".join(lines) + "\n"


# --- rendering -------------------------------------------------------------------------------


def render(recipe: Recipe, out_dir: str | os.PathLike) -> Path:
    """Build one recipe and write it to ``out_dir`` (``<name>.svg`` or ``<name>.md``)."""
    out_dir = Path(out_dir)
    result = recipe.build()
    if isinstance(result, Figure):
        return save_figure(result, out_dir / f"{recipe.name}.svg")
    path = out_dir / f"{recipe.name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result, encoding="utf-8")
    return path


_NOT_RENDERED = frozenset({"__main__.py", "cli.py", "exercises.py", "explorer.py"})
"""Package modules no recipe uses: editing them re-renders nothing."""


def render_key() -> str:
    """What an artifact was built from: the package's code (docstrings and comments aside),
    except the modules in ``_NOT_RENDERED``.

    Examples:
        >>> render_key() == render_key() and len(render_key()) == 64
        True
    """
    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        if path.parent == package and path.name in _NOT_RENDERED:
            continue
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(code_fingerprint(path.read_text(encoding="utf-8")).encode())
    return digest.hexdigest()


def render_all(
    out_dir: str | os.PathLike, names: Iterable[str] | None = None, *, force: bool = False
) -> list[Path]:
    """Render recipes (all by default) into ``out_dir``; returns the files written or kept.

    Unless ``force``, an artifact built by the same package code (docstrings
    and comments aside) is kept as it is, which makes a warm docs build fast.

    Examples:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> [path.name for path in render_all(folder, names=["qkv_score_functions"])]
        ['qkv_score_functions.svg']
    """
    out_dir = Path(out_dir)
    stamps = out_dir / ".stamps"
    key = render_key()
    paths = []
    for name in names if names is not None else FIGURES:
        recipe = FIGURES[name]
        stamp = stamps / name
        existing = [out_dir / f"{name}{suffix}" for suffix in (".svg", ".md")]
        fresh = [path for path in existing if path.is_file()]
        if not force and fresh and stamp.is_file() and stamp.read_text() == key:
            paths.extend(fresh)
            continue
        path = render(recipe, out_dir)
        stamps.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)
        paths.append(path)
    return paths
