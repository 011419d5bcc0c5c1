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

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from matplotlib import rc_context
from matplotlib.figure import Figure

from attnprimer.additive import AdditiveScore
from attnprimer.attention import masked_softmax
from attnprimer.dot_product import GeneralScore, dot_scores
from attnprimer.report import attention_report
from attnprimer.tasks import BLANK, CountingTask, Task
from attnprimer.train import (
    TrainConfig,
    TrainedModel,
    evaluate,
    get_trained,
    predict,
    predict_one,
    source_hash,
)

__all__ = [
    "FIGURES",
    "SITE_MODELS",
    "Recipe",
    "plot_attention",
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
    weights = torch.as_tensor(weights).detach().float()
    if weights.dim() != 2 or weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"weights must be (L, S) = ({len(query_labels)}, {len(key_labels)}) to match the "
            f"labels, got {tuple(weights.shape)}"
        )
    rows, cols = weights.shape
    figure = Figure(figsize=(1.2 + 0.55 * cols + 1.2, 1.0 + 0.5 * rows + 0.6), layout="constrained")
    axes = figure.add_subplot()
    image = axes.imshow(weights.numpy(), cmap=HEATMAP, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(cols), key_labels)
    axes.set_yticks(range(rows), query_labels)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    if annotate:
        for row in range(rows):
            for col in range(cols):
                value = float(weights[row, col])
                axes.text(col, row, f"{value:.2f}".lstrip("0"), ha="center", va="center",
                          fontsize=8, color="white" if value > 0.55 else "black")
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    colorbar.set_label("attention weight")
    return figure


def plot_task_attention(
    task: Task, tokens: torch.Tensor, prediction: torch.Tensor, weights: torch.Tensor
) -> Figure:
    """A task model's encoder-decoder attention (T, S) with tokens and predictions as labels.

    Examples:
        >>> task = CountingTask(max_len=4)
        >>> figure = plot_task_attention(task, task.encode("AB C"), torch.tensor([1, 1, 1]),
        ...                              torch.full((3, 4), 0.25))
        >>> [label.get_text() for label in figure.axes[0].get_yticklabels()]
        ['A = 1', 'B = 1', 'C = 1']
    """
    key_labels = [f"{'_' if char == BLANK else char}\n{step}"
                  for step, char in enumerate(task.decode(tokens))]
    query_labels = [f"{label} = {int(value)}"
                    for label, value in zip(task.output_labels(), prediction, strict=True)]
    return plot_attention(
        weights, query_labels, key_labels,
        xlabel="input token and step (_ = blank)", ylabel="output step: prediction",
    )


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


def _counting(seed: int) -> tuple[Task, TrainConfig]:
    return CountingTask(), TrainConfig(**{**CountingTask.train_defaults, "seed": seed})


SITE_MODELS: dict[str, tuple[Task, TrainConfig]] = {
    **{f"counting, seed {seed}": _counting(seed) for seed in (0, 1, 2)},
    # The original primer's recipe: 2000 steps at a constant learning rate of 1e-2.
    "counting, original recipe": (
        CountingTask(), TrainConfig(steps=2000, lr=1e-2, schedule="constant", seed=0)
    ),
}
"""Every trained model the site shows, by label (``attnprimer train all`` trains them)."""

COUNTING_EXAMPLE = "AACCB CCCB"
"""The counting example of the original primer's README, shown on the QKV page."""


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
    header = "| model | exact match | " + " | ".join(f"count of {l}" for l in letters) + " |"
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
    key = source_hash(presentation=True)
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
