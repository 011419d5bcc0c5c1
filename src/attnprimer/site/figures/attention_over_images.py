"""Figures and tables of the chapter "Attention over images"
(``docs/chapters/attention-over-images.md``).

The patch reader (three seeds, ``READER_SEEDS``) reads held-out canvases; its maps are drawn over
the canvas, step by step, and the interventions of
[`attention_over_images`][attnprimer.site.experiments.attention_over_images] are tabled. The
diagram of the model is drawn by code, like every diagram of the site.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.patches import patchify
from attnprimer.site.catalogue import site_seeds
from attnprimer.site.experiments.attention_over_images import (
    cached_blanking_by_step,
    cached_reading,
    read,
)
from attnprimer.site.figures.diagrams import arrow, box, canvas, frame, legend
from attnprimer.site.figures.plotting import HEATMAP, ORANGE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.tasks.digit_reading import END, NONE, DigitReadingTask
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["EXAMPLE_SEED", "plot_reading_maps", "reader_models"]

EXAMPLE_SEED = 7
"""The held-out stream of the page's example canvas (``held_out_generator(7)``), its first."""


def reader_models() -> list[TrainedModel]:
    """The patch reader's trained seeds, in seed order."""
    return [model.trained() for model in site_seeds("digit-reading")]


def example_canvas(trained: TrainedModel, count: int = 4) -> tuple[torch.Tensor, object]:
    """The first canvas of ``count`` digits in the example's held-out stream, and its layout."""
    layout = trained.task.layout(200, held_out_generator(EXAMPLE_SEED))
    index = int((layout.count == count).nonzero()[0])
    one = layout._replace(**{name: getattr(layout, name)[index:index + 1]
                             for name in ("image", "label", "x", "y", "count")})
    return trained.task.paint(one)[0], one


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def _step_name(value: int) -> str:
    return {END: "end", NONE: "-"}.get(value, str(value))


def plot_reading_maps(canvas_image: torch.Tensor, weights: torch.Tensor, predictions: list[int],
                      patch: int) -> Figure:
    """The canvas, then each output step's weights over its patches, laid over the canvas.

    Args:
        canvas_image: (Hi, Wi).
        weights: (T, N), one map per step, patches in row-major order.
        predictions: the class each step wrote.
        patch: P.
    """
    height, width = canvas_image.shape
    rows, cols = height // patch, width // patch
    steps = len(predictions)
    # One column: as readable on a phone as on a desktop
    figure = Figure(figsize=(4.4, 0.4 + 1.45 * (steps + 1)), layout="constrained")
    grid = figure.subplots(steps + 1, 1)
    extent = (-0.5, width - 0.5, height - 0.5, -0.5)
    grid[0].imshow(canvas_image.numpy(), cmap="Greys", vmin=0, vmax=1, extent=extent)
    grid[0].set_title("the canvas (held out)", fontsize=10, loc="left")
    image = None
    for step, axes in enumerate(grid[1:]):
        shown = weights[step].reshape(rows, cols).numpy()
        axes.imshow(canvas_image.numpy(), cmap="Greys", vmin=0, vmax=1, extent=extent)
        image = axes.imshow(shown, cmap=HEATMAP, vmin=0, vmax=float(weights.max()), alpha=0.75,
                            extent=extent, interpolation="nearest")
        axes.set_title(f"step {step}: writes {_step_name(predictions[step])}", fontsize=10,
                       loc="left")
    for axes in grid:
        axes.set_xticks(np.arange(-0.5, width, patch), minor=True)
        axes.set_yticks(np.arange(-0.5, height, patch), minor=True)
        axes.grid(which="minor", color=ORANGE, lw=0.4, alpha=0.5)
        axes.set_xticks([0, width - 1])
        axes.set_yticks([0, height - 1])
        axes.tick_params(labelsize=8)
    grid[-1].set_xlabel("column (pixels)", fontsize=8)
    for axes in grid:
        axes.set_ylabel("row", fontsize=8)
    colorbar = figure.colorbar(image, ax=list(grid), fraction=0.04, pad=0.02)
    colorbar.set_label("attention weight")
    return figure


@recipe("canvases", "three held-out canvases of two, three and four digits")
def canvases() -> Figure:
    task = DigitReadingTask()
    figure = Figure(figsize=(3.8, 4.4), layout="constrained")
    grid = figure.subplots(3)
    layout = task.layout(200, held_out_generator(EXAMPLE_SEED))
    for axes, count in zip(grid, (2, 3, 4), strict=True):
        index = int((layout.count == count).nonzero()[0])
        one = layout._replace(**{name: getattr(layout, name)[index:index + 1]
                                 for name in ("image", "label", "x", "y", "count")})
        axes.imshow(task.paint(one)[0].numpy(), cmap="Greys", vmin=0, vmax=1)
        axes.set_title(" ".join(str(int(d)) for d in one.label[0, :count]), fontsize=10,
                       loc="left")
        axes.set_xticks([0, task.width - 1])
        axes.set_yticks([0, task.height - 1])
        axes.tick_params(labelsize=8)
    grid[-1].set_xlabel("column (pixels)")
    grid[1].set_ylabel("row (pixels)")
    return figure


@recipe("worked_patches", "a 4 x 4 image of the numbers 0-15 cut into 2 x 2 patches")
def worked_patches() -> str:
    image = torch.arange(16).reshape(1, 4, 4)
    patches = patchify(image.float(), 2)[0].long()
    table = markdown_table(
        ["the image", "column 0", "column 1", "column 2", "column 3"],
        [[f"row {row}", *(str(int(v)) for v in image[0, row])] for row in range(4)],
        align="lcccc")
    return table + "\n" + markdown_table(
        ["patch", "where", "its pixels, row by row"],
        [[str(index), where, ", ".join(str(int(v)) for v in patch)]
         for index, (where, patch) in enumerate(zip(
             ("top left", "top right", "bottom left", "bottom right"), patches, strict=True))],
        align="llr",
        caption="The image's pixels, numbered, and its four patches, computed by "
                "`attnprimer.patches.patchify` when this page was built.")


@recipe("reading_maps", "the patch reader's map over a held-out canvas at each output step")
def reading_maps() -> Figure:
    trained = reader_models()[0]
    image, _ = example_canvas(trained)
    predictions, weights = read(trained, image[None])
    return plot_reading_maps(image, weights[0], predictions[0].tolist(), trained.task.patch)


@recipe("example_reading", "what the example canvas holds and what each seed reads")
def example_reading() -> str:
    rows = []
    for trained in reader_models():
        image, layout = example_canvas(trained)
        predictions, _ = read(trained, image[None])
        rows.append([str(trained.config.seed),
                     "".join(str(int(digit)) for digit in layout.label[0, :4]),
                     trained.task.describe_output(predictions[0])])
    return markdown_table(["trained model (seed)", "digits on the canvas", "read"], rows,
                          align="lll",
                          caption="The example canvas above, read by each trained model "
                                  "(\".\" is the end token).")


@recipe("reading_table", "held-out exact match and weight on the digit being read, three seeds")
def reading_table() -> str:
    readings = [cached_reading(trained) for trained in reader_models()]
    return markdown_table(
        ["model", "canvases read wholly right (%)", "weight on the digit's square (%)"],
        [["patch reader", mean_range([r.exact_match for r in readings]),
          mean_range([r.on_digit for r in readings])]],
        align="lrr",
        caption="2,000 held-out canvases of 2 to 4 digits, built from held-out images only; "
                "mean over three trained models, then the lowest and highest. The weight is a "
                "digit step's share on the patches that overlap its digit's 8 x 8 square.")


@recipe("reading_by_seed", "exact match and weight on the digit of each trained patch reader")
def reading_by_seed() -> str:
    rows = [[str(trained.config.seed), _percent(r.exact_match), _percent(r.on_digit),
             str(r.canvases)]
            for trained in reader_models() for r in [cached_reading(trained)]]
    return markdown_table(
        ["seed", "read wholly right (%)", "weight on its digit (%)", "canvases read right"],
        rows, align="rrrr",
        caption="Each trained patch reader on the 2,000 held-out canvases.")


@recipe("interventions_by_seed", "the interventions on each trained patch reader")
def interventions_by_seed() -> str:
    rows = [[str(trained.config.seed), _percent(r.blanked_changes),
             _percent(r.control_changes), _percent(r.moved_same), _percent(r.moved_follows),
             _percent(r.swapped)]
            for trained in reader_models() for r in [cached_reading(trained)]]
    return markdown_table(
        ["seed", "blanked: digit changes (%)", "control: changes (%)", "moved: same (%)",
         "map follows (%)", "swapped: read swapped (%)"],
        rows, align="rrrrrr",
        caption="On the canvases each model reads right (the last column of the table above).")


@recipe("interventions_table", "what changes when attended patches are blanked, a digit moves, "
        "two digits swap")
def interventions_table() -> str:
    readings = [cached_reading(trained) for trained in reader_models()]

    def row(name: str, field: str) -> list[str]:
        return [name, mean_range([getattr(r, field) for r in readings])]

    return markdown_table(
        ["intervention on a canvas read right", "share (%)"],
        [row("blank the patches holding 80 % of step 0's weight: its digit changes",
             "blanked_changes"),
         row("blank as many other inked patches: step 0's digit changes",
             "control_changes"),
         row("move the first digit to another height: the reading stays the same", "moved_same"),
         row("... and step 0's weight moves with the digit", "moved_follows"),
         row("swap the first two digits' images: the reading swaps too", "swapped")],
        align="lr",
        caption="On the held-out canvases each model reads wholly right; mean over three "
                "trained models, then the lowest and highest. Blanking sets a patch's 16 "
                "pixels to the background (0).")


@recipe("blanking_by_step", "blanking what each digit step looks at, step by step")
def blanking_by_step() -> str:
    runs = [cached_blanking_by_step(trained) for trained in reader_models()]  # seed, then step

    def share(step: int, field: str) -> str:
        return mean_range([getattr(run[step], field) for run in runs])

    rows = [[str(step), str(min(run[step].canvases for run in runs)),
             share(step, "blanked_changes"), share(step, "control_changes"),
             share(step, "blanked_kept"), share(step, "control_kept")]
            for step in range(len(runs[0]))]
    return markdown_table(
        ["digit step", "canvases (fewest)", "blanked: its digit changes (%)",
         "control: changes (%)", "blanked: earlier digits kept (%)",
         "control: earlier digits kept (%)"],
        rows, align="rrrrrr",
        caption="On the held-out canvases each model reads wholly right and that have a digit "
                "at the step; mean over three trained models, then the lowest and highest. "
                "The changes count only canvases whose earlier digits were still read as "
                "before.")


@recipe("reader_diagram", "the patch reader: patches, one self-attention block, the Bahdanau "
        "decoder")
def reader_diagram() -> Figure:
    figure, axes = canvas(7.4, 3.9)
    frame(axes, 0.15, 0.55, 3.3, 3.75, "reads the canvas once")
    frame(axes, 3.5, 0.55, 7.25, 3.75, "each output step t")
    pixels = box(axes, 0.75, 1.2, "canvas", shape="(16, 40)", width=0.95, height=0.5)
    patches = box(axes, 0.75, 2.45, "patches", shape="(40, 16)", width=0.95, height=0.5)
    arrow(axes, pixels.top, patches.bottom, text="cut 4×4", fontsize=8)
    embed = box(axes, 2.05, 2.45, "Linear\n+ row, col", "learned", width=1.0, height=0.55,
                fontsize=8)
    arrow(axes, patches.right, embed.left)
    block = box(axes, 2.05, 1.2, "self-attention\nblock", "learned", width=1.1, height=0.55,
                fontsize=8)
    arrow(axes, embed.bottom, block.top)
    memory = box(axes, 4.15, 1.2, "$h_j$", shape="(40, D)", width=0.8, height=0.5)
    arrow(axes, block.right, memory.left)
    state = box(axes, 4.15, 3.25, "$s_{t-1}$", shape="(D,)", width=0.7, height=0.5)
    score = box(axes, 4.15, 2.3, "additive\nscore", "learned", width=0.9, height=0.55,
                fontsize=8)
    arrow(axes, state.bottom, score.top)
    arrow(axes, memory.top, score.bottom)
    weights = box(axes, 5.4, 2.3, "softmax", "operation", width=0.85, height=0.45, fontsize=8)
    arrow(axes, score.right, weights.left)
    context = box(axes, 5.4, 1.2, "$c_t=\\sum_j a_{tj} h_j$", "operation", width=1.1,
                  height=0.5, fontsize=8)
    arrow(axes, weights.bottom, context.top, text="$a_t$: a map over\nthe 40 patches",
          fontsize=8)
    arrow(axes, memory.right, context.left)
    gru = box(axes, 6.65, 1.2, "GRU", "learned", width=0.7, height=0.5, fontsize=9)
    arrow(axes, context.right, gru.left)
    arrow(axes, state.right, (gru.x, gru.y + gru.height / 2), bend=-0.3)
    digit = box(axes, 6.65, 2.3, "writes a\ndigit", "learned", width=0.8, height=0.5,
                fontsize=8)
    arrow(axes, gru.top, digit.bottom, text="$s_t$", fontsize=8)
    legend(axes, 0.3, 0.25, step=2.3)
    return figure
