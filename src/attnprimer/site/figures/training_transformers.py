"""Figures and tables of the chapter "Training the Transformer" (``training-transformers.md``).

The encoder-decoder Transformer of the chapter "The Transformer", trained pre-LN and post-LN,
at two peak learning rates, with and without warm-up (``NORM_PLACEMENTS`` x ``NORM_GRID_LRS`` x
``NORM_GRID_SCHEDULES`` in [`attnprimer.site.catalogue`][attnprimer.site.catalogue]), and without
its residual connections (``NO_RESIDUALS``), three seeds each; the measurements at
initialisation are in
[`attnprimer.site.experiments.transformer_training`][attnprimer.site.experiments.transformer_training].
The models are those of the Transformer chapter
([`attnprimer.site.figures.transformer`][attnprimer.site.figures.transformer]); this page
trains them in other ways.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from attnprimer.site.catalogue import (
    DEEP_LAYERS,
    DEEP_LR,
    DEEP_NORM_CELLS,
    DEEP_RADAM,
    NO_RESIDUALS,
    NORM_GRID_LRS,
    NORM_GRID_SCHEDULES,
    NORM_PLACEMENTS,
    SEEDS,
    TRANSFORMER_STEPS,
    site_seeds,
)
from attnprimer.site.experiments.bahdanau import first_step_reaching
from attnprimer.site.experiments.transformer_training import (
    first_gradient_norms,
    initial_model,
    position_spread,
    step_blind_loss,
    step_dependence,
)
from attnprimer.site.figures.curves import smoothed
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import by_seed, markdown_table, mean_range
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainConfig, TrainedModel, held_out_generator

__all__ = ["STUCK", "cell_runs", "floor", "gradient_norms", "no_residual_runs", "radam_runs",
           "spreads", "step_dependences", "trained_spreads"]

STEPS = TRANSFORMER_STEPS["encoder-decoder"]
CHAPTER_LR = NORM_GRID_LRS[0]  # the chapter's peak learning rate
WINDOW = 10  # steps per point of the smoothed loss curves
DEPTHS = (2, DEEP_LAYERS)  # blocks per stack: the chapter's, and deeper
VARIANTS = {"pre-LN": {"pre_norm": True}, "post-LN": {"pre_norm": False},
            "pre-LN, no residuals": {"pre_norm": True, "residual": False}}
"""The blocks the measurements at initialisation compare, by name: task settings."""
COLOURS = {"pre-LN": BLUE, "post-LN": ORANGE, "pre-LN, no residuals": GREEN}
FLOOR = 1e-12  # gradient norms at or below it are drawn on it
WARMUP = {"cosine": "no warm-up", "warmup-cosine": "warm-up"}
STUCK = ("post-LN, 6 blocks, no warm-up", "pre-LN, no residuals")
"""The two models that do not learn the task, beside the chapter's (``"pre-LN"``)."""


def cell_runs(norm: str, lr: float, schedule: str, layers: int = 2,
              optimizer: str = "adam") -> list[TrainedModel]:
    """Every seed of one cell of the grid: ``norm`` a name of ``NORM_PLACEMENTS``."""
    return [model.trained() for model in site_seeds(
        "reversal-transformer", **NORM_PLACEMENTS[norm], layers=layers, steps=STEPS, lr=lr,
        schedule=schedule, optimizer=optimizer)]


def radam_runs() -> list[TrainedModel]:
    """Every seed of the deep cell trained with RAdam (``DEEP_RADAM``): post-LN, no warm-up."""
    return cell_runs(DEEP_RADAM["norm"], DEEP_LR, DEEP_RADAM["schedule"], DEEP_LAYERS,
                     DEEP_RADAM["optimizer"])


def no_residual_runs() -> list[TrainedModel]:
    """Every seed of the chapter's model without residual connections."""
    return [model.trained() for model in site_seeds("reversal-transformer", **NO_RESIDUALS,
                                                    steps=STEPS)]


def floor() -> float:
    """The step-blind predictor's training loss on the chapter's task (lengths 1 to 10, 8
    letters): where the two stuck models' losses sit."""
    task = ReversalTransformerTask()
    return step_blind_loss(task.max_len, task.vocab_size, task.min_len)


def _stuck_runs(model: str) -> list[TrainedModel]:
    if model == "pre-LN":
        return cell_runs("pre-LN", CHAPTER_LR, "cosine")
    if model == STUCK[0]:
        return cell_runs("post-LN", DEEP_LR, "cosine", DEEP_LAYERS)
    return no_residual_runs()


def step_dependences(model: str) -> list[dict[str, float]]:
    """[`step_dependence`][attnprimer.site.experiments.transformer_training.step_dependence] of
    every seed of ``model`` (``"pre-LN"``, the chapter's, or one of ``STUCK``), through the
    result cache."""
    return [cached_result(step_dependence, run, samples=500) for run in _stuck_runs(model)]


def gradient_norms(variant: str, layers: int) -> dict[str, np.ndarray]:
    """Block name -> gradient norm at the first step, one per seed (untrained models);
    computed once per version of the code, for the page and its claims tests."""
    runs = cached_result(_gradient_norms, None, variant=variant, layers=layers)
    return {block: np.array(norms) for block, norms in runs.items()}


def _gradient_norms(variant: str, layers: int) -> dict[str, list[float]]:
    task = ReversalTransformerTask(**VARIANTS[variant], layers=layers)
    runs = [first_gradient_norms(task, TrainConfig(steps=STEPS, lr=CHAPTER_LR, seed=seed))
            for seed in SEEDS]
    return {block: [run[block] for run in runs] for block in runs[0]}


def spreads(variant: str, layers: int = 2, samples: int = 500) -> list[float]:
    """Position spread of the encoder's output at initialisation, one per seed; computed once
    per version of the code."""
    return cached_result(_spreads, None, variant=variant, layers=layers, samples=samples)


def _spreads(variant: str, layers: int, samples: int) -> list[float]:
    task = ReversalTransformerTask(**VARIANTS[variant], layers=layers)
    inputs = task.sample(samples, held_out_generator(0)).inputs  # (B, S)
    return [position_spread(initial_model(task, TrainConfig(seed=seed)), inputs)
            for seed in SEEDS]


def _band(axes, steps, runs: np.ndarray, colour: str, style: str, label: str) -> None:
    """Mean line and min-max band over the seeds: runs (seeds, points)."""
    axes.fill_between(steps, runs.min(axis=0), runs.max(axis=0), color=colour, alpha=0.15, lw=0)
    axes.plot(steps, runs.mean(axis=0), color=colour, ls=style, lw=1.4, label=label)


def _curves(axes_loss, axes_match, runs: list[TrainedModel], colour: str, style: str,
            label: str) -> None:
    steps = np.asarray(runs[0].history["step"][WINDOW - 1:])
    loss = np.array([smoothed(run.history["loss"], WINDOW) for run in runs])  # (seeds, steps)
    _band(axes_loss, steps, loss, colour, style, label)
    checked = np.asarray(runs[0].history["held_out_step"])
    match = np.array([run.history["held_out_exact_match"] for run in runs])  # (seeds, points)
    _band(axes_match, checked, match, colour, style, label)
    axes_match.scatter(np.repeat(checked[None], len(runs), 0), match, color=colour, s=6)


def _floor_line(axes) -> None:
    """The step-blind predictor's loss, as a dotted line."""
    axes.axhline(floor(), color=GREY, lw=0.9, ls=":")


def _label_curves(axes_loss, axes_match) -> None:
    axes_loss.set_yscale("log")
    axes_loss.set_ylabel(f"training loss\n(mean of {WINDOW} steps)")
    axes_match.set_ylim(0, 1.02)
    axes_match.set_ylabel("held-out exact match\n(lengths 1–10)")
    axes_match.set_xlabel("training step")
    for axes in (axes_loss, axes_match):
        axes.grid(alpha=0.3)


@recipe("norms", "pre-LN and post-LN, two peak learning rates, with and without warm-up: "
        "loss and held-out exact match while training")
def norms() -> Figure:
    figure = Figure(figsize=(10, 5.6), layout="constrained")
    grid = figure.subplots(2, len(NORM_GRID_LRS) + 1, sharex=True, sharey="row")
    styles = dict(zip(NORM_GRID_SCHEDULES, ("-", "--"), strict=True))
    for column, lr in enumerate(NORM_GRID_LRS):
        for norm in NORM_PLACEMENTS:
            for schedule in NORM_GRID_SCHEDULES:
                _curves(grid[0, column], grid[1, column], cell_runs(norm, lr, schedule),
                        COLOURS[norm], styles[schedule], f"{norm}, {WARMUP[schedule]}")
        grid[0, column].set_title(f"2 blocks, peak learning rate {lr:g}", fontsize=10)
    for norm, schedule in DEEP_NORM_CELLS:
        _curves(grid[0, -1], grid[1, -1], cell_runs(norm, DEEP_LR, schedule, DEEP_LAYERS),
                COLOURS[norm], styles[schedule], f"{norm}, {WARMUP[schedule]}")
    _curves(grid[0, -1], grid[1, -1], radam_runs(), COLOURS[DEEP_RADAM["norm"]], ":",
            f"{DEEP_RADAM['norm']}, {WARMUP[DEEP_RADAM['schedule']]}, RAdam")
    grid[0, -1].set_title(f"{DEEP_LAYERS} blocks, peak learning rate {DEEP_LR:g}", fontsize=10)
    for column in range(grid.shape[1]):
        _floor_line(grid[0, column])
        _label_curves(grid[0, column], grid[1, column])
    grid[0, -1].text(STEPS, floor() * 1.25, f"step-blind {floor():.4f}", fontsize=7,
                     color=GREY, ha="right", va="bottom")
    for axes in grid[:, 1:].flat:
        axes.set_ylabel("")
    grid[1, 0].legend(fontsize=8, loc="lower right")
    grid[1, -1].legend(handles=grid[1, -1].get_lines()[-1:], fontsize=8, loc="center right")
    return figure


@recipe("norms_table", "final exact match and the step reaching 99 %: every cell of the grid, "
        "and the model without residual connections")
def norms_table() -> str:
    cells = [(norm, 2, lr, schedule, cell_runs(norm, lr, schedule))
             for norm in NORM_PLACEMENTS for lr in NORM_GRID_LRS
             for schedule in NORM_GRID_SCHEDULES]
    cells += [(norm, DEEP_LAYERS, DEEP_LR, schedule,
               cell_runs(norm, DEEP_LR, schedule, DEEP_LAYERS))
              for norm, schedule in DEEP_NORM_CELLS]
    cells.append((f"{DEEP_RADAM['norm']}, RAdam", DEEP_LAYERS, DEEP_LR, DEEP_RADAM["schedule"],
                  radam_runs()))
    cells.append(("pre-LN, no residuals", 2, CHAPTER_LR, "cosine", no_residual_runs()))
    rows = []
    for norm, layers, lr, schedule, runs in cells:
        reached = [first_step_reaching(run.history, 0.99) for run in runs]
        rows.append([norm, layers, f"{lr:g}", "yes" if schedule == "warmup-cosine" else "no",
                     mean_range(run.history["held_out_exact_match"][-1] for run in runs),
                     by_seed(f"{step:,}" if step else "never" for step in reached),
                     f"{np.mean([np.mean(run.history['loss'][-WINDOW:]) for run in runs]):.4f}"])
    return markdown_table(
        ["norm", "blocks per stack", "peak learning rate", "warm-up", "exact match at the end, %",
         "first at 99&nbsp;%, step", "loss, last 10 steps"], rows,
        caption=f"The chapter's encoder-decoder Transformer ($D = 32$, 4 heads, 2 blocks per "
                f"stack unless the table says {DEEP_LAYERS}, Adam unless it says RAdam, "
                f"batches of 100, {STEPS} steps, the learning rate decaying along a cosine; "
                f"with warm-up, it first rises linearly from 0 over the first tenth of the "
                f"steps). Exact match: on the training monitor, 1,000 held-out inputs of 1 to "
                f"10 letters, greedy, after the last step: the mean of seeds 0, 1 and 2 and, "
                f"in brackets, the lowest and the highest seed. \"First at "
                f"99&nbsp;%\": the first of the monitor's checks (every 100 steps) at 99&nbsp;% "
                f"or more, seeds 0 / 1 / 2. Loss: the training cross-entropy averaged over the "
                f"last {WINDOW} steps and the seeds.")


@recipe("residuals", "with and without residual connections: loss and held-out exact match "
        "while training")
def residuals() -> Figure:
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    axes_loss, axes_match = figure.subplots(1, 2)
    _curves(axes_loss, axes_match, cell_runs("pre-LN", CHAPTER_LR, "cosine"), BLUE, "-",
            "pre-LN (the chapter's model)")
    _curves(axes_loss, axes_match, no_residual_runs(), GREEN, "-", "pre-LN, no residuals")
    _floor_line(axes_loss)
    axes_loss.text(STEPS, floor() * 1.25, f"step-blind {floor():.4f}", fontsize=7, color=GREY,
                   ha="right", va="bottom")
    _label_curves(axes_loss, axes_match)
    axes_loss.set_xlabel("training step")
    axes_match.legend(fontsize=8, loc="center right")
    return figure


@recipe("stuck", "the stuck models' predictions barely change with the step: distances from "
        "the step-blind predictor")
def stuck() -> str:
    rows = []
    for model in ("pre-LN", *STUCK):
        found = step_dependences(model)
        rows.append([model if model != "pre-LN" else "pre-LN, 2 blocks (the chapter's model)",
                     mean_range([run["loss"] for run in found], 4, percent=False),
                     mean_range([run["across steps"] for run in found]),
                     mean_range([run["from step-blind"] for run in found])])
    return markdown_table(
        ["model", "held-out loss", "change across the steps, %", "distance from step-blind, %"],
        rows,
        caption=f"Teacher-forced, on 500 held-out inputs of 1 to 10 letters, each scored step "
                f"(the letters and the end): the model's predicted distribution over the "
                f"outputs. Change across the steps: its distance from the mean of the model's "
                f"predictions over that input's steps (0: the same prediction at every step). "
                f"Distance from step-blind: from the predictor that gives each letter its "
                f"count over n + 1 and the end 1 / (n + 1), whose loss on these inputs is "
                f"{np.mean([run['step-blind loss'] for run in step_dependences('pre-LN')]):.4f} "
                f"and in expectation {floor():.4f}. Distances are total variation, in % (0 the "
                f"same distribution, 100 disjoint). The mean of seeds 0, 1 and 2 and, in "
                f"brackets, the lowest and the highest seed.")


@recipe("gradients", "gradient norm of each block at the first training step: pre-LN, "
        "post-LN and no residuals, 2 and 6 blocks per stack")
def gradients() -> Figure:
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    panels = figure.subplots(1, len(DEPTHS), sharey=True,
                             width_ratios=[2 * layers + 1 for layers in DEPTHS])
    for axes, layers in zip(panels, DEPTHS, strict=True):
        for offset, variant in zip((-0.2, 0.0, 0.2), VARIANTS, strict=True):
            norms = gradient_norms(variant, layers)  # block -> (seeds,)
            where = np.arange(len(norms)) + offset
            values = np.array(list(norms.values()))  # (blocks, seeds)
            floor = np.maximum(values, FLOOR)  # a log axis: zero is drawn at the floor
            axes.vlines(where, floor.min(axis=1), floor.max(axis=1), color=COLOURS[variant])
            axes.plot(where, floor.mean(axis=1), "o", ms=4, color=COLOURS[variant],
                      label=variant)
        short = [block.replace("encoder ", "E").replace("decoder ", "D")
                 for block in norms]  # E1, E2, D1, D2, output
        axes.set_xticks(range(len(norms)), short, fontsize=8)
        axes.axhline(FLOOR, color=GREY, lw=0.6, ls=":")
        axes.set_yscale("log")
        axes.set_title(f"{layers} blocks per stack")
        axes.set_xlabel("block, input to output (E encoder, D decoder)")
        axes.grid(alpha=0.3, axis="y")
    panels[0].set_ylabel("gradient norm, first step\n(seeds 0–2: mean, range)")
    panels[-1].text(-0.4, FLOOR * 3, f"{FLOOR:.0e} or less, 0 included", fontsize=7,
                    color=GREY)
    panels[-1].legend(fontsize=8, loc="center left")
    return figure


def trained_spreads(runs: list[TrainedModel], samples: int = 500) -> list[float]:
    """Position spread of the encoder's output after training, one per seed."""
    inputs = runs[0].task.sample(samples, held_out_generator(0)).inputs  # (B, S)
    return [position_spread(run.model, inputs) for run in runs]


@recipe("spread", "how far apart the encoder's output vectors are across positions, with and "
        "without residual connections")
def spread() -> str:
    rows = [["pre-LN (the chapter's)", mean_range(spreads("pre-LN", 2)),
             mean_range(spreads("pre-LN", 6)),
             mean_range(trained_spreads(cell_runs("pre-LN", CHAPTER_LR, "cosine")))],
            ["pre-LN, no residuals", mean_range(spreads("pre-LN, no residuals", 2), digits=2),
             mean_range(spreads("pre-LN, no residuals", 6), digits=2),
             mean_range(trained_spreads(no_residual_runs()))]]
    return markdown_table(
        ["model", "untrained, 2 blocks per stack, %", "untrained, 6 blocks, %",
         f"trained ({STEPS} steps, 2 blocks), %"], rows,
        caption="How different the encoder's output vectors (the memory the decoder reads) "
                "are from one position of an input to the next: for each of 500 held-out "
                "inputs of 1 to 10 letters, the mean distance of each letter's vector from the "
                "mean of that input's vectors, as a percentage of their mean length; averaged "
                "over the inputs. 0 would mean every position carries the same vector. "
                "Untrained: the initialisation of seeds 0, 1 and 2, exactly as training starts "
                "from it; trained: the same seeds after training. The mean of the seeds and, "
                "in brackets, the lowest and the highest.")
