"""Figures and tables of "Patches as tokens", in the chapter "Attention over images"
(``docs/chapters/attention-over-images.md``).

The patch encoder with a class token
([`attnprimer.models.patch_encoder`][attnprimer.models.patch_encoder]) names the two digits of
a canvas, left first; three seeds with the patches' 2-D positions, three without
([`PAIR_VARIANTS`][attnprimer.site.catalogue.PAIR_VARIANTS]). The experiments are in
[`attnprimer.site.experiments.patch_tokens`][attnprimer.site.experiments.patch_tokens]; the
diagram of the model is drawn by code, like every diagram of the site.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.site.catalogue import PAIR_VARIANTS, site_seeds
from attnprimer.site.experiments.patch_tokens import (
    cached_distances,
    cached_half_shares,
    cached_pair_reading,
    encode,
    layer_weights,
    patch_distances,
)
from attnprimer.site.figures.diagrams import arrow, box, canvas, legend
from attnprimer.site.figures.plotting import BLUE, HEATMAP, ORANGE, PURPLE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["EXAMPLE_SEED", "example_canvas", "pair_models"]

EXAMPLE_SEED = 7
"""The held-out stream of the page's example canvases (``held_out_generator(7)``)."""

SEED_COLOURS = (BLUE, ORANGE, PURPLE)


def pair_models(variant: str) -> list[TrainedModel]:
    """The trained seeds of one variant of ``PAIR_VARIANTS``, in seed order."""
    return [model.trained() for model in site_seeds("digit-pair", **PAIR_VARIANTS[variant])]


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


@recipe("encoder_diagram", "the patch encoder: patches and a class token through two encoder "
        "blocks; the class token is read", chapter="attention-over-images")
def encoder_diagram() -> Figure:
    figure, axes = canvas(7.4, 3.2)
    pixels = box(axes, 0.65, 2.55, "canvas", shape="(8, 24)", width=0.9, height=0.5)
    patches = box(axes, 0.65, 1.35, "patches", shape="(12, 16)", width=0.9, height=0.5)
    arrow(axes, pixels.bottom, patches.top, text="cut 4×4", fontsize=8)
    embed = box(axes, 2.0, 1.35, "Linear\n+ row, col", "learned", width=1.0, height=0.55,
                fontsize=8)
    arrow(axes, patches.right, embed.left)
    token = box(axes, 2.0, 2.55, "class token", "learned", shape="(D,)", width=1.0,
                height=0.5, fontsize=9)
    tokens = box(axes, 3.45, 1.95, "token 0, then\nthe 12 patches", shape="(13, D)",
                 width=1.2, height=0.7, fontsize=8)
    arrow(axes, token.right, tokens.at("left", 0.15))
    arrow(axes, embed.right, tokens.at("left", -0.15))
    blocks = box(axes, 5.0, 1.95, "encoder block\n× 2, no mask", "learned", width=1.2,
                 height=0.7, fontsize=8)
    arrow(axes, tokens.right, blocks.left)
    read = box(axes, 6.55, 2.6, "token 0's\nvector", shape="(D,)", width=0.95, height=0.6,
               fontsize=8)
    arrow(axes, blocks.right, read.left)
    out = box(axes, 6.55, 1.6, "LayerNorm,\nLinear", "learned", width=0.95, height=0.5,
              fontsize=8)
    arrow(axes, read.bottom, out.top)
    answer = box(axes, 6.55, 0.75, "left, right", shape="(2, 10)", width=0.95, height=0.45,
                 fontsize=8)
    arrow(axes, out.bottom, answer.top)
    legend(axes, 0.3, 0.25, step=1.9)
    return figure


@recipe("pair_table", "held-out accuracy of the patch encoder with and without positions, and "
        "what swapping the canvas's halves does", chapter="attention-over-images")
def pair_table() -> str:
    rows = []
    for variant in PAIR_VARIANTS:
        readings = [cached_pair_reading(trained) for trained in pair_models(variant)]
        rows.append([variant, *(mean_range([getattr(r, name) for r in readings])
                                for name in ("exact_match", "either_order", "swap_unchanged",
                                             "swap_follows"))])
    return markdown_table(
        ["patch encoder", "both digits, left first (%)", "both digits, either order (%)",
         "halves swapped: answer unchanged (%)", "... read as the swap (%)"],
        rows, align="lrrrr",
        caption="2,000 held-out canvases, built from held-out images only; mean over three "
                "trained models, then the lowest and highest. A canvas of two equal digits "
                "keeps its right answer under the swap (about one in ten). The last column "
                "counts the canvases read right whose two digits differ.")


@recipe("pair_by_seed", "each trained patch encoder on held-out pairs and swapped halves",
        chapter="attention-over-images")
def pair_by_seed() -> str:
    rows = [[variant, str(trained.config.seed), _percent(r.exact_match),
             _percent(r.either_order), _percent(r.swap_unchanged), _percent(r.swap_follows),
             _percent(r.wrong_on_one_order), f"{r.swap_largest_change:.1e}"]
            for variant in PAIR_VARIANTS for trained in pair_models(variant)
            for r in [cached_pair_reading(trained)]]
    return markdown_table(
        ["positions", "seed", "left first (%)", "either order (%)", "swap: unchanged (%)",
         "swap: read swapped (%)", "different digits: wrong on one order (%)",
         "swap: largest logit change"],
        rows, align="lrrrrrrr",
        caption="Each trained model on the same 2,000 held-out canvases; "
                f"{_percent(cached_pair_reading(pair_models('with')[0]).different)} % of them "
                "hold two different digits.")


def example_canvas(trained: TrainedModel) -> tuple[torch.Tensor, torch.Tensor]:
    """The first canvas of the example's held-out stream that holds two different digits and
    that ``trained`` reads right (Hi, Wi), and its two digits (2,): the figure shows where the
    class token looks when the model gets the answer, not why it fails."""
    task = trained.task
    layout = task.layout(50, held_out_generator(EXAMPLE_SEED))
    canvases = task.paint(layout)
    logits, _ = encode(trained, canvases)
    right = (logits.argmax(-1) == layout.label).all(dim=1) & (layout.label[:, 0]
                                                              != layout.label[:, 1])
    index = int(right.nonzero()[0])
    return canvases[index], layout.label[index]


@recipe("class_token_maps", "where the class token looks, head by head and layer by layer, on "
        "a held-out canvas", chapter="attention-over-images")
def class_token_maps() -> Figure:
    trained = pair_models("with")[0]
    task = trained.task
    image, digits = example_canvas(trained)
    logits, attention = encode(trained, image[None])
    rows, cols = task.height // task.patch, task.width // task.patch
    heads = layer_weights(attention, 1).shape[1]
    maps = torch.stack([layer_weights(attention, layer)[0, :, 0, 1:]
                        for layer in range(1, task.layers + 1)])  # (layers, H, N)
    # One column, layer 1's heads then layer 2's: as readable on a phone as on a desktop
    figure = Figure(figsize=(4.4, 0.5 + 1.35 * task.layers * heads), layout="constrained")
    grid = figure.subplots(task.layers * heads, 1)
    extent = (-0.5, task.width - 0.5, task.height - 0.5, -0.5)
    shown = None
    for index, axes in enumerate(grid):
        layer, head = divmod(index, heads)
        axes.imshow(image.numpy(), cmap="Greys", vmin=0, vmax=1, extent=extent)
        shown = axes.imshow(maps[layer, head].reshape(rows, cols).numpy(), cmap=HEATMAP,
                            vmin=0, vmax=float(maps.max()), alpha=0.75, extent=extent,
                            interpolation="nearest")
        axes.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=10, loc="left")
        axes.set_xticks(np.arange(-0.5, task.width, task.patch), minor=True)
        axes.set_yticks(np.arange(-0.5, task.height, task.patch), minor=True)
        axes.grid(which="minor", color=ORANGE, lw=0.4, alpha=0.5)
        axes.set_xticks([0, task.width - 1])
        axes.set_yticks([0, task.height - 1])
        axes.tick_params(labelsize=8)
        axes.set_ylabel("row", fontsize=8)
    grid[-1].set_xlabel("column (pixels)", fontsize=8)
    answer = logits[0].argmax(-1).tolist()
    figure.suptitle(f"digits {int(digits[0])} {int(digits[1])}, read as {answer[0]} {answer[1]}",
                    fontsize=10)
    colorbar = figure.colorbar(shown, ax=list(grid), fraction=0.04, pad=0.02)
    colorbar.set_label("class token's weight")
    return figure


@recipe("halves_by_seed", "the class token's weight on the left half of the canvas, head by "
        "head, in every trained patch encoder", chapter="attention-over-images")
def halves_by_seed() -> str:
    rows = []
    for variant in PAIR_VARIANTS:
        for trained in pair_models(variant):
            shares = cached_half_shares(trained)["left"]
            rows.append([variant, str(trained.config.seed),
                         *(" · ".join(f"{100 * share:.0f}" for share in layer)
                           for layer in shares)])
    return markdown_table(
        ["positions", "seed", "layer 1, heads 1 · 2 · 3 · 4 (%)",
         "layer 2, heads 1 · 2 · 3 · 4 (%)"], rows, align="lrrr",
        caption="The share of the class token's weight that falls on the left half's patches, "
                "averaged over 500 held-out canvases; the rest falls on the right half and on "
                "the class token itself.")


@recipe("attention_distance", "each head's mean attention distance by layer, with and without "
        "positions, three seeds", chapter="attention-over-images")
def attention_distance() -> Figure:
    # One column, one panel per variant: as readable on a phone as on a desktop
    figure = Figure(figsize=(4.4, 5.2), layout="constrained")
    panels = figure.subplots(len(PAIR_VARIANTS), 1, sharex=True, sharey=True)
    task = pair_models("with")[0].task
    rows, cols = task.height // task.patch, task.width // task.patch
    even = patch_distances(rows, cols, task.patch).mean().item()  # what even weights give
    for axes, variant in zip(panels, PAIR_VARIANTS, strict=True):
        for seed, trained in enumerate(pair_models(variant)):
            for layer, heads in enumerate(cached_distances(trained), start=1):
                x = layer + (seed - 1) * 0.12 + np.zeros(len(heads))
                axes.plot(x, heads, "o", color=SEED_COLOURS[seed], ms=5, alpha=0.85,
                          label=f"seed {seed}" if layer == 1 else None)
        axes.axhline(even, color="grey", ls="--", lw=1)
        axes.text(0.6, even + 0.2, "even weights", fontsize=8, color="grey")
        axes.set_title(f"{variant} positions", fontsize=10)
        axes.set_xticks(range(1, task.layers + 1))
        axes.set_xlim(0.5, task.layers + 0.5)
        axes.set_ylabel("distance (pixels)")
    panels[-1].set_xlabel("layer")
    panels[0].legend(fontsize=8, loc="lower right")
    return figure


@recipe("worked_distance", "one query's mean attention distance over three patches in a row, "
        "every number", chapter="attention-over-images")
def worked_distance() -> str:
    distances = patch_distances(1, 3, patch=4)[0]  # from patch 0
    weights = torch.tensor([0.5, 0.25, 0.25])
    rows = [[f"patch {index}", f"{float(distance):g}", f"{float(weight):g}",
             f"{float(weight * distance):g}"]
            for index, (distance, weight) in enumerate(zip(distances, weights, strict=True))]
    rows.append(["sum", "", f"{float(weights.sum()):g}",
                 f"**{float((weights * distances).sum()):g}**"])
    return markdown_table(
        ["patch", "distance (pixels)", "weight", "weight × distance"], rows,
        align="lrrr",
        caption="Three 4 × 4 patches side by side; the query is patch 0, and the distance is "
                "from its centre to each patch's. Computed by "
                "`attnprimer.site.experiments.patch_tokens.patch_distances` when this page "
                "was built.")
