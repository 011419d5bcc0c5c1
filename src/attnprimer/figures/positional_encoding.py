"""Figures and tables of the chapter "Positional encoding" (``docs/chapters/positional-encoding.md``).

Attention's permutation equivariance, measured; the sinusoidal and rotary encodings; and the
trained signal models: accuracy against the multiset bound, their errors, training curves,
the learned encoding's norms, where the output step looks, and accuracy at other lengths.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.analysis import accuracy_by_length, errors_by_count, signal_attention
from attnprimer.figures.plotting import (BLUE, GREEN, GREY, ORANGE, draw_attention,
                                         plot_accuracy_curves, plot_length_generalisation,
                                         weight_colorbar)
from attnprimer.figures.registry import recipe
from attnprimer.figures.tables import cli_sample, markdown_table, percent
from attnprimer.multihead import MultiHeadAttention
from attnprimer.positional import POSITIONAL_ENCODINGS, apply_rotary, sinusoidal_encoding
from attnprimer.report import attention_report, encoding_norms_report
from attnprimer.site_models import SEEDS, SIGNAL_EXAMPLE, site_model, site_seeds
from attnprimer.tasks import Task
from attnprimer.tasks.signal import multiset_bound
from attnprimer.train import TrainedModel, evaluate, predict_one

__all__ = ["LENGTHS", "plot_learned_norms", "plot_rotary_scores",
           "plot_signal_attention", "plot_sinusoidal"]

LENGTHS = tuple(range(5, 21))
"""The input lengths the length-generalisation figure evaluates at."""


def plot_sinusoidal(length: int = 64, dim: int = 64, starts: Iterable[int] = (0, 10, 30)) -> Figure:
    """The sinusoidal encoding as a heatmap, and the dot product of two positions against their offset.

    Examples:
        >>> figure = plot_sinusoidal(length=16, dim=8, starts=(0, 4))
        >>> [axes.get_xlabel() for axes in figure.axes[:2]]
        ['dimension', 'offset k']
    """
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


def plot_signal_attention(task: Task, tokens: torch.Tensor, prediction: torch.Tensor,
                          attention: dict[str, torch.Tensor]) -> Figure:
    """A signal model on one input: the encoder's self-attention, and what the output reads.

    Examples:
        >>> from attnprimer.tasks import SignalTask
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
    weight_colorbar(figure, image, [top, bottom])
    return figure


# --- the recipes ------------------------------------------------------------------------------


def _signal_models(encoding: str) -> list[TrainedModel]:
    return [model.trained() for model in site_seeds("signal", pos_enc=encoding)]


@recipe("equivariance", "permutation equivariance of attention, measured on our modules")
def equivariance() -> str:
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attention = MultiHeadAttention(16, num_heads=4).double()
    x = torch.randn(1, 10, 16, generator=generator, dtype=torch.float64)  # (B, L, D)
    order = torch.randperm(10, generator=generator)
    encoding = sinusoidal_encoding(10, 16).double()
    counting = site_model("counting", seed=0).trained()
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
    return markdown_table(
        ["what is compared", "largest difference"],
        [(what, f"{float(value):.1e}") for what, value in rows],
        caption="One random sequence of 10 vectors (D = 16, 4 heads, float64) and one random "
                "shuffle of its positions; the counting model in float32.")


@recipe("sinusoidal", "the sinusoidal encoding and its dot product against the offset")
def sinusoidal() -> Figure:
    return plot_sinusoidal()


@recipe("rotary", "scores of one query-key pair at every pair of positions, rotary vs added")
def rotary() -> Figure:
    return plot_rotary_scores()


@recipe("signal_accuracy", "held-out accuracy of the signal models, with the multiset bound")
def signal_accuracy() -> str:
    first = site_model("signal", pos_enc="learned").trained()
    rows = []
    for encoding in POSITIONAL_ENCODINGS:
        scores = [evaluate(trained).exact_match for trained in _signal_models(encoding)]
        rows.append([encoding, *map(percent, scores), f"**{percent(float(np.mean(scores)))}**"])
    bound = float(multiset_bound(first.task.max_len, first.task.vocab_size))
    rows.append(["*best possible from the multiset alone*", *[""] * len(SEEDS),
                 f"*{percent(bound)}*"])
    config = first.config
    return markdown_table(
        ["positional encoding", *(f"seed {seed}" for seed in SEEDS), "mean"], rows,
        caption=f"Exact match on {10_000:,} held-out sequences of {first.task.length} letters. "
                f"Trained {config.steps:,} steps, batches of {config.batch_size}, Adam "
                f"from lr {config.lr:g} with {config.schedule} decay. The bound is exact "
                f"(computed over every count vector, "
                f"[`multiset_bound`][attnprimer.tasks.signal.multiset_bound]).")


@recipe("signal_errors", "which counts the signal models get wrong, per encoding")
def signal_errors() -> str:
    misses, seen = {}, None
    for encoding in POSITIONAL_ENCODINGS:
        counted = [errors_by_count(trained) for trained in _signal_models(encoding)]
        misses[encoding] = sum(wrong for wrong, _ in counted)
        seen = counted[0][1]  # the same data for every model
    rows = [[count, f"{int(seen[count]):,}", *(int(wrong[count]) for wrong in misses.values())]
            for count in range(len(seen))]
    rows.append(["all", f"{int(seen.sum()):,}",
                 *(f"**{int(wrong.sum()):,}**" for wrong in misses.values())])
    return markdown_table(
        ["true count", "sequences", *(f"wrong, {encoding}" for encoding in misses)], rows,
        align="r" * (2 + len(misses)),
        caption=f"Wrong answers by the true count, summed over {len(SEEDS)} seeds, each scored "
                f"on the same 10,000 held-out sequences (so every sequence is counted once per "
                f"seed).")


@recipe("signal_training", "held-out exact match of the signal models while training")
def signal_training() -> Figure:
    return plot_accuracy_curves({
        f"{encoding} encoding": [trained.history for trained in _signal_models(encoding)]
        for encoding in POSITIONAL_ENCODINGS
    })


def _signal_example():
    trained = site_model("signal", pos_enc="learned").trained()
    tokens = trained.task.encode(SIGNAL_EXAMPLE)
    return (trained, tokens, *predict_one(trained.model, tokens))


@recipe("signal_heatmap", "the learned-encoding signal model on the primer's example")
def signal_heatmap() -> Figure:
    trained, tokens, prediction, attention = _signal_example()
    return plot_signal_attention(trained.task, tokens, prediction, attention)


@recipe("signal_sample", "`attnprimer test signal --pos-enc learned` on the primer's example")
def signal_sample() -> str:
    trained, tokens, prediction, attention = _signal_example()
    task = trained.task
    report = attention_report(task, tokens, prediction,
                              {"encoder-decoder": attention["encoder-decoder"]},
                              task.targets_for(tokens[None])[0])
    norms = encoding_norms_report(trained.model, len(tokens))
    return cli_sample(f'attnprimer test signal --pos-enc learned --input "{SIGNAL_EXAMPLE}"',
                      f"{report}\n\n(encoder self-attention rows left out here: see the "
                      f"heatmap)\n\n{norms}")


@recipe("signal_norms", "the learned encoding's norm at each position, three seeds")
def signal_norms() -> Figure:
    models = _signal_models("learned")
    norms = {f"seed {seed}": trained.model.position.norms()
             for seed, trained in zip(SEEDS, models, strict=True)}
    return plot_learned_norms(norms, models[0].task.length)


@recipe("signal_where", "where the signal models' output step looks, per encoding")
def signal_where() -> str:
    rows, kinds = [], []
    for encoding in POSITIONAL_ENCODINGS:
        results = [signal_attention(trained) for trained in _signal_models(encoding)]
        kinds = list(results[0])
        rows.append([encoding, *(f"{np.mean([result[kind] for result in results]):.3f}"
                                 for kind in kinds)])
    length = site_model("signal").task.length
    return markdown_table(
        ["encoding", *kinds], rows,
        caption=f"Mean weight of the output step on one position of each kind, over 5,000 "
                f"held-out sequences and {len(SEEDS)} seeds. Even attention would give "
                f"1/{length} = {1 / length:.3f}.")


@recipe("length_generalisation", "exact match against the input length, trained at length 10")
def length_generalisation() -> Figure:
    groups = {"counting": [model.trained() for model in site_seeds("counting")]}
    groups.update({f"signal, {encoding} encoding": _signal_models(encoding)
                   for encoding in POSITIONAL_ENCODINGS if encoding != "none"})
    curves = {}
    for label, models in groups.items():
        scores = np.mean([accuracy_by_length(trained, LENGTHS) for trained in models], axis=0)
        curves[f"{label} ({len(models)} seeds)"] = (list(LENGTHS), scores.tolist())
    return plot_length_generalisation(curves, trained_length=groups["counting"][0].task.max_len)
