"""The figures and tables of "What the heads do", in the chapter "The Transformer".

Its recipes are registered in
[`attnprimer.site.figures.transformer`][attnprimer.site.figures.transformer].

Every head of the two Transformers on one input, as a grid; over held-out inputs, where each
head looks ([`head_patterns`][attnprimer.site.experiments.transformer_heads.head_patterns]) and
what switching it off costs
([`head_ablation`][attnprimer.site.experiments.transformer_heads.head_ablation]).
[`plot_heads`][attnprimer.site.figures.transformer_heads.plot_heads] is also what
``attnprimer test reversal-transformer --plot FILE`` draws.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.site.catalogue import REVERSAL_EXAMPLE, TRANSFORMERS, reversal_seeds
from attnprimer.site.experiments.head_ablation import head_names
from attnprimer.site.experiments.transformer_heads import (
    cached_head_ablation,
    cached_head_patterns,
    copy_groups,
)
from attnprimer.site.figures.plotting import draw_attention
from attnprimer.site.figures.tables import by_seed, markdown_table, mean_range
from attnprimer.site.report import head_labels
from attnprimer.training.train import TrainedModel, predict_one
from attnprimer.transformer import DecoderOnly

__all__ = ["copy_test_table", "example_attention", "example_grid", "head_results",
           "head_table", "plot_heads"]

AXES = {"encoder self": ("input letter", "input letter read"),
        "decoder self": ("output step writes", "step read"),
        "cross": ("output step writes", "input letter read")}
"""What the rows and the columns of each kind of attention are (the decoder-only model's
positions: the token each holds)."""
DECODER_ONLY_AXES = ("token", "token read")


def plot_heads(attention: dict[str, torch.Tensor],
               labels: dict[str, tuple[list[str], list[str]]], *,
               decoder_only: bool = False, width: float = 7.2) -> Figure:
    """Every head's weights (L, S) on one input: a row per attention layer, a column per head.

    ``attention`` is named as the models name it (``"cross 1.2"``), ``labels`` gives the rows'
    and the columns' labels by kind (``"cross"``), as
    [`head_labels`][attnprimer.site.report.head_labels] makes them. One colour scale, [0, 1].

    Examples:
        >>> weights = {f"cross 1.{head}": torch.eye(2) for head in (1, 2)}
        >>> figure = plot_heads(weights, {"cross": (["B", "A"], ["A", "B"])})
        >>> [axes.get_title() for axes in figure.axes[:2]]
        ['head 1', 'head 2']
    """
    order = {kind: index for index, kind in enumerate(AXES)}  # encoder, decoder self, cross
    layers = sorted(dict.fromkeys(name.rpartition(".")[0] for name in attention),
                    key=lambda layer: (order[layer.rpartition(" ")[0]], layer))
    heads = max(int(name.rpartition(".")[2]) for name in attention)
    rows_per_layer = max(len(labels[layer.rpartition(" ")[0]][0]) for layer in layers)
    height = len(layers) * max(0.11 * rows_per_layer + 0.5, 1.4) + 0.4  # inches
    figure = Figure(figsize=(width, height), layout="constrained")
    grid = np.atleast_2d(figure.subplots(len(layers), heads, squeeze=False))
    image = None
    for row, layer in enumerate(layers):
        kind = layer.rpartition(" ")[0]
        query_labels, key_labels = labels[kind]
        ylabel, xlabel = DECODER_ONLY_AXES if decoder_only else AXES[kind]
        for column in range(heads):
            axes = grid[row, column]
            image = draw_attention(axes, attention[f"{layer}.{column + 1}"], query_labels,
                                   key_labels, annotate=False)
            axes.tick_params(labelsize=6 if len(key_labels) > 12 else 7, length=2, pad=1)
            axes.set_aspect("auto")
            axes.set_xlabel(xlabel, fontsize=7, labelpad=1)
            if column == 0:
                axes.set_ylabel(f"{layer}\n{ylabel}", fontsize=8)
            else:
                axes.tick_params(labelleft=False)
            if row == 0:
                axes.set_title(f"head {column + 1}", fontsize=9)
    colorbar = figure.colorbar(image, ax=list(grid.flat), fraction=0.04, pad=0.02, shrink=0.6)
    colorbar.set_label("attention weight")
    return figure


def example_attention(trained: TrainedModel, text: str = REVERSAL_EXAMPLE):
    """The weights of every head on one input, greedy, with their labels."""
    task = trained.task
    tokens = task.encode(text)[: len(text)]  # the letters, no padding: (n,)
    prediction, attention = predict_one(trained.model, tokens)
    decoder_only = isinstance(trained.model, DecoderOnly)
    return attention, head_labels(task, tokens, prediction, decoder_only), decoder_only


def example_grid(name: str) -> Figure:
    """Every head of seed 0 of ``name`` on the page's example."""
    attention, labels, decoder_only = example_attention(reversal_seeds(name)[0])
    return plot_heads(attention, labels, decoder_only=decoder_only)


def head_results(name: str) -> dict[str, list]:
    """Per seed: the heads' patterns, exact match with each head off, and with groups off;
    ``"alone"`` and ``"groups"`` zero the heads, ``"mean alone"`` and ``"mean groups"`` set them
    to their mean output (mean ablation)."""
    runs = reversal_seeds(name)
    patterns = [cached_head_patterns(trained) for trained in runs]
    results: dict[str, list] = {"patterns": patterns}
    for prefix, ablation in (("", "zero"), ("mean ", "mean")):
        results[f"{prefix}alone"] = [cached_head_ablation(trained, ablation=ablation)
                                     for trained in runs]
        results[f"{prefix}groups"] = [
            cached_head_ablation(trained, copy_groups(found), ablation=ablation)
            for trained, found in zip(runs, patterns, strict=True)]
    return results


def _head_rows(name: str) -> list[list[str]]:
    results = head_results(name)
    rows = []
    for head in head_names(reversal_seeds(name)[0].model):
        scores = [run[head] for run in results["patterns"]]  # per seed: pattern -> weight
        others = [pattern for pattern in scores[0] if pattern != "copy"]
        top = max(others, key=lambda pattern: np.mean([run[pattern] for run in scores]))
        copy = (mean_range([run["copy"] for run in scores], 0) if "copy" in scores[0]
                else "–")
        rows.append([head, copy, f"{top}: " + mean_range([run[top] for run in scores], 0),
                     mean_range([run[head] for run in results["alone"]]),
                     mean_range([run[head] for run in results["mean alone"]])])
    return rows


def head_table(name: str) -> str:
    """Every head of ``name``: its weights on the targets, and the cost of switching it off."""
    whole = mean_range([run["none"] for run in head_results(name)["alone"]])
    return markdown_table(
        ["head", "weight on the letter copied, %", "another target's weight, %",
         "exact match, head zeroed, %", "exact match, head set to its mean, %"],
        _head_rows(name),
        caption=f"{name}: every head, over the three seeds (mean, and in brackets the lowest "
                f"and the highest seed). Weights: teacher-forced, the mean weight the head's "
                f"queries put on a target, 1,000 held-out inputs of 1 to 10 letters; the "
                f"targets are defined in [`PATTERNS`][attnprimer.site.experiments.transformer_heads"
                f".PATTERNS]; the third column gives, of the other targets, the one with the "
                f"highest mean over the seeds (in a single seed another may weigh more). "
                f"Exact match: greedy, 500 held-out inputs of 1 to 10 letters, "
                f"that one head switched off, by zeroing its output or by setting it to its mean "
                f"output over 1,000 other held-out inputs; with every head on, "
                f"{whole}&nbsp;%. A head's number "
                f"names a slot, not a role: head 2 of one seed need not do what head 2 of "
                f"another does.")


def copy_test_table() -> str:
    """The table of exact match with groups of heads off, both models."""
    rows = []
    for name in TRANSFORMERS:
        results = head_results(name)
        groups = [copy_groups(found) for found in results["patterns"]]
        for group in groups[0]:
            heads = by_seed(", ".join(h.rpartition(" ")[2] for h in seed[group])
                            for seed in groups) if "copy" in group else group.split(",")[0]
            rows.append([name, group, heads,
                         mean_range([run[group] for run in results["groups"]]),
                         mean_range([run[group] for run in results["mean groups"]])])
    return markdown_table(
        ["model", "switched off", "heads (seeds 0 / 1 / 2)", "exact match, zeroed, %",
         "exact match, set to their means, %"], rows,
        caption="Greedy exact match on 500 held-out inputs of 1 to 10 letters with a group of "
                "heads switched off together, zeroed or set to their mean outputs (mean of "
                "seeds 0, 1 and 2, and in brackets the lowest and the highest). The groups are "
                "chosen in each seed from its own weights (the copy column of that model's "
                "table above, per seed): the head or the two heads with the most weight on the "
                "letter being copied, the one or two with the least, and every head of one "
                "layer. Heads are named layer.head (2.4: head 4 of the second block's "
                "cross-attention, or of the decoder-only model's second block).")
