"""Figures and tables of the chapter "Induction heads" (``docs/chapters/induction-heads.md``).

The learning curves and the heads' scores come from
[`induction_heads`][attnprimer.site.experiments.induction_heads], the ablations and the path
patching from [`induction_interventions`][attnprimer.site.experiments.induction_interventions].
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from attnprimer.site.catalogue import SEEDS, site_model
from attnprimer.site.experiments.induction_heads import (
    cached_curves,
    drop_step,
    heads_of,
    induction_models,
)
from attnprimer.site.experiments.induction_interventions import (
    LONGER,
    cached_control,
    cached_interventions,
)
from attnprimer.site.figures.plotting import (
    BLUE,
    GREY,
    INK,
    ORANGE,
    draw_attention,
    weight_colorbar,
)
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range

__all__ = ["EXAMPLE", "plot_circuit", "plot_curves", "plot_patterns", "plot_scores"]

EXAMPLE = "JQCMAETHSGCMAEKPL"
"""The sequence the heatmaps and the worked table show: the segment C M A E at 2 and 10."""
EXAMPLE_QUERY = 12
"""The position the circuit diagram follows: the A of the repeat."""

SEED_STYLES = ("-", "--", ":")


def plot_circuit(letters: str, query: int) -> Figure:
    """The two heads of the circuit on ``letters``, for the query at position ``query``.

    The previous-token head (layer 1) writes into each position the letter before it; the
    induction head (layer 2) at the query looks for a position whose previous letter is the
    query's letter, and its value there is the letter to predict.
    """
    earlier = letters.index(letters[query])  # the letter's earlier occurrence
    figure = Figure(figsize=(6.8, 2.6))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(-2.3, query + 1.8)
    axes.set_ylim(-1.3, 1.9)
    axes.set_axis_off()
    for position, letter in enumerate(letters[: query + 1]):
        key = position in (earlier, earlier + 1, query)
        axes.text(position, 0, letter, ha="center", va="center", fontsize=13,
                  color=INK, fontweight="bold" if key else "normal")
        axes.text(position, -0.55, str(position), ha="center", va="center", fontsize=8,
                  color=GREY)
    axes.text(query + 1, 0, "?", ha="center", va="center", fontsize=13, color=ORANGE,
              fontweight="bold")
    axes.text(-0.6, -0.55, "position", ha="right", va="center", fontsize=8, color=GREY)
    previous = FancyArrowPatch((earlier + 1, -0.3), (earlier, -0.3),
                               connectionstyle="arc3,rad=-0.9", arrowstyle="-|>",
                               mutation_scale=12, color=BLUE, lw=1.6)
    induction = FancyArrowPatch((query, 0.3), (earlier + 1, 0.3),
                                connectionstyle="arc3,rad=0.25", arrowstyle="-|>",
                                mutation_scale=12, color=ORANGE, lw=1.8)
    axes.add_patch(previous)
    axes.add_patch(induction)
    axes.text(-2.2, -1.15, f"layer 1, previous-token head: position {earlier + 1} "
              f"reads its previous letter, {letters[earlier]}", ha="left", va="center",
              fontsize=9, color=BLUE)
    axes.text(-2.2, 1.6,
              f"layer 2, induction head: {letters[query]} at {query} looks for "
              f"\"after {letters[earlier]}\", finds {earlier + 1}, copies "
              f"{letters[earlier + 1]}", ha="left", va="center", fontsize=9, color=ORANGE)
    return figure


def plot_curves(curves: list, drops: list[int]) -> Figure:
    """Loss on the repeat and on the first occurrence against the step, one line a seed."""
    figure = Figure(figsize=(8, 3.6), layout="constrained")
    axes = figure.subplots()
    for seed, (result, drop, style) in enumerate(zip(curves, drops, SEED_STYLES, strict=False)):
        axes.plot(result.steps, result.repeat_loss, color=ORANGE, ls=style,
                  label=f"repeat, seed {seed}")
        axes.plot(result.steps, result.first_loss, color=BLUE, ls=style, alpha=0.8,
                  label=f"first occurrence, seed {seed}")
        axes.axvline(drop, color=GREY, ls=style, lw=0.8)
    axes.axhline(curves[0].chance, color=INK, lw=0.8)
    axes.text(curves[0].steps[-1], curves[0].chance + 0.05, "chance, ln 20", ha="right",
              va="bottom", fontsize=8, color=INK)
    axes.set_xlabel("training step (grey lines: the drop of each seed)")
    axes.set_ylabel("loss per letter (nats)")
    axes.set_ylim(0, max(max(result.repeat_loss) for result in curves) + 0.3)
    axes.legend(fontsize=7, ncols=2, loc="lower left")
    return figure


def plot_scores(curves: list) -> Figure:
    """Each seed's previous-token head and induction head: their scores against the step."""
    figure = Figure(figsize=(8, 3.4), layout="constrained")
    left, right = figure.subplots(1, 2, sharey=True)
    for seed, (result, style) in enumerate(zip(curves, SEED_STYLES, strict=False)):
        previous, induction = heads_of(result)
        left.plot(result.steps, result.previous_token[previous], color=BLUE, ls=style,
                  label=f"seed {seed}: head {previous.removeprefix('layer ')}")
        right.plot(result.steps, result.induction[induction], color=ORANGE, ls=style,
                   label=f"seed {seed}: head {induction.removeprefix('layer ')}")
    left.set_title("previous-token score, layer 1", fontsize=10)
    right.set_title("induction score, layer 2", fontsize=10)
    for axes in (left, right):
        axes.set_xlabel("training step")
        axes.set_ylim(0, 1)
        axes.legend(fontsize=7, loc="upper left")
    left.set_ylabel("mean attention weight")
    return figure


def plot_patterns(before: torch.Tensor, after: torch.Tensor, letters: str,
                  steps: tuple[int, int]) -> Figure:
    """One head's weights (L, L) on ``letters`` at two steps of training, side by side."""
    figure = Figure(figsize=(9.6, 4.6), layout="constrained")
    grid = figure.subplots(1, 2)
    labels = [f"{letter} {position}" for position, letter in enumerate(letters)]
    image = None
    for axes, weights, step in zip(grid, (before, after), steps, strict=True):
        image = draw_attention(axes, weights, labels, labels, annotate=False)
        axes.set_title(f"step {step}", fontsize=10)
        axes.set_xlabel("position looked at (key)")
        axes.tick_params(labelsize=7)
        axes.tick_params(axis="x", labelrotation=90)
    grid[0].set_ylabel("position looking (query)")
    weight_colorbar(figure, image, list(grid))
    return figure


@recipe("circuit_diagram", "the two heads of an induction circuit on the example, drawn")
def circuit_diagram() -> Figure:
    return plot_circuit(EXAMPLE, EXAMPLE_QUERY)


@recipe("curves", "the loss on the repeat and on the first occurrence over training")
def curves() -> Figure:
    results = [cached_curves(trained) for trained in induction_models(2)]
    return plot_curves(results, [drop_step(result) for result in results])


@recipe("scores", "the previous-token and induction scores over training, three seeds")
def scores() -> Figure:
    return plot_scores([cached_curves(trained) for trained in induction_models(2)])


def _pattern_steps(result) -> tuple[int, int]:
    """A snapshot well before the drop (half its step) and the end of training."""
    drop = drop_step(result)
    before = max(step for step in result.steps if step <= drop // 2)
    return before, result.steps[-1]


@recipe("patterns", "the induction head's weights on the example, before the drop and after")
def patterns() -> Figure:
    trained = site_model("induction", layers=2, seed=0).trained()
    result = cached_curves(trained)
    _, induction = heads_of(result)
    before, after = _pattern_steps(result)
    tokens = trained.task.encode(EXAMPLE)[None]
    snapshots = trained.model
    early = snapshots.snapshot(result.steps.index(before))
    with torch.no_grad():
        first = early(tokens).attention[induction][0]
        last = snapshots.model(tokens).attention[induction][0]
    return plot_patterns(first, last, EXAMPLE, (before, after))


@recipe("drop_table", "the step of the drop, and the loss before and after, per seed")
def drop_table() -> str:
    rows = []
    for seed, trained in zip(SEEDS, induction_models(2), strict=True):
        result = cached_curves(trained)
        drop = drop_step(result)
        at = result.steps.index(drop)
        induction = result.induction[heads_of(result)[1]]
        after = min(at + 2, len(result.steps) - 1)
        rows.append([seed, drop, f"{result.repeat_loss[at - 2]:.2f}",
                     f"{result.repeat_loss[-1]:.2f}", f"{result.first_loss[-1]:.2f}",
                     f"{induction[at - 2]:.2f} → {induction[after]:.2f}"])
    return markdown_table(
        ["seed", "step of the drop", "repeat loss 100 steps before", "repeat loss at the end",
         "first-occurrence loss at the end", "induction score, 100 steps before → after"],
        rows, align="rrrrrr",
        caption="1,000 held-out sequences. The drop is the first snapshot (every 50 steps) where "
                "the loss on the repeat is below halfway from chance (ln 20 = 3.00) to its "
                "final value.")


def _role_rows(results) -> list[list[str]]:
    """The ablation grid: rows by the role a head plays in its seed."""
    roles = {"previous-token head (layer 1)": lambda r: r.previous_head,
             "other layer-1 head": lambda r: next(h for h in r.zero if h.startswith("layer 1.")
                                                  and h != r.previous_head),
             "induction head (layer 2)": lambda r: r.induction_head,
             "other layer-2 head": lambda r: next(h for h in r.zero if h.startswith("layer 2.")
                                                  and h != r.induction_head),
             "both layer-2 heads": lambda r: "layer 2"}
    rows = [["nothing", mean_range([r.intact for r in results], 2, percent=False),
             mean_range([r.intact for r in results], 2, percent=False)]]
    for role, head in roles.items():
        rows.append([role, mean_range([r.zero[head(r)] for r in results], 2, percent=False),
                     mean_range([r.mean[head(r)] for r in results], 2, percent=False)])
    return rows


@recipe("ablation_table", "the loss on the repeat with each head zero- and mean-ablated")
def ablation_table() -> str:
    results = [cached_interventions(trained) for trained in induction_models(2)]
    return markdown_table(
        ["head switched off", "zero ablation", "mean ablation"], _role_rows(results),
        align="lrr",
        caption="Loss on the repeat (nats) of the trained two-layer models, 2,000 held-out "
                "sequences; mean over three seeds, then the lowest and highest. Chance is "
                "3.00. Zero ablation replaces the head's output by zeros, mean ablation by its "
                "mean over the sequences at each position.")


@recipe("patching_table", "the induction head's keys computed from another sequence's "
        "previous-token head")
def patching_table() -> str:
    results = [cached_interventions(trained) for trained in induction_models(2)]

    def other(r) -> str:
        return next(h for h in r.patched if h != r.previous_head)
    rows = [["nothing", mean_range([r.intact for r in results], 2, percent=False),
             mean_range([r.intact_score for r in results], 2, percent=False)],
            ["previous-token head", mean_range([r.patched[r.previous_head] for r in results],
                                               2, percent=False),
             mean_range([r.patched_score[r.previous_head] for r in results], 2,
                        percent=False)],
            ["other layer-1 head", mean_range([r.patched[other(r)] for r in results], 2,
                                              percent=False),
             mean_range([r.patched_score[other(r)] for r in results], 2, percent=False)]]
    return markdown_table(
        ["layer-1 head taken from another sequence, for layer 2's keys only",
         "loss on the repeat", "induction score of the induction head"], rows, align="lrr",
        caption="Layer 2's keys are computed from a residual stream in which one layer-1 "
                "head's output comes from a run on a different held-out sequence; its queries "
                "and values, and everything else, are the real ones. Mean over three seeds, "
                "then the lowest and highest.")


@recipe("generalisation_table", "the loss on held-out letter pairs and on longer repeats")
def generalisation_table() -> str:
    results = [cached_interventions(trained) for trained in induction_models(2)]
    controls = [cached_control(trained) for trained in induction_models(1)]
    rows = [["repeats like training's (4-12 letters)",
             mean_range([r.intact for r in results], 2, percent=False),
             mean_range([r.intact_first for r in results], 2, percent=False),
             mean_range([c.repeat for c in controls], 2, percent=False)],
            ["only held-out letter pairs",
             mean_range([r.held_out for r in results], 2, percent=False),
             mean_range([r.held_out_first for r in results], 2, percent=False),
             mean_range([c.held_out for c in controls], 2, percent=False)],
            [f"longer: {LONGER[0]}-{LONGER[1]} letters",
             mean_range([r.longer for r in results], 2, percent=False), "",
             mean_range([c.longer for c in controls], 2, percent=False)]]
    return markdown_table(
        ["held-out sequences", "two layers: repeat", "two layers: first occurrence",
         "one layer: repeat"], rows, align="lrrr",
        caption="Loss (nats) per letter, 2,000 sequences each; mean over three seeds, then "
                "the lowest and highest. Chance is 3.00.")


@recipe("worked_table", "the induction head on the example, query by query in the repeat")
def worked_table() -> str:
    trained = site_model("induction", layers=2, seed=0).trained()
    _, induction = heads_of(cached_curves(trained))
    tokens = trained.task.encode(EXAMPLE)[None]
    with torch.no_grad():
        output = trained.model.model(tokens)
    weights, guesses = output.attention[induction][0], output.logits[0].argmax(-1)
    rows = []
    for query in range(10, 10 + 3):  # C M A at 10, 11, 12: each letter's next is known
        earlier = EXAMPLE.index(EXAMPLE[query])
        target = earlier + 1
        rows.append([f"{EXAMPLE[query]} at {query}", earlier, f"{EXAMPLE[target]} at {target}",
                     f"{float(weights[query, target]):.2f}",
                     f"{float(weights[query].max()):.2f} at {int(weights[query].argmax())}",
                     trained.task.alphabet[int(guesses[query])]])
    return markdown_table(
        ["query", "its letter was at", "the letter after it", "weight there",
         "largest weight", "the model predicts"], rows, align="lrrrrr",
        caption=f"The trained two-layer model (seed 0), head {induction.removeprefix('layer ')}, "
                f"on {EXAMPLE}. The segment C M A E stands at 2 and again at 10.")


@recipe("control_table", "the one-layer model: its loss and its preference for seen letters")
def control_table() -> str:
    rows = []
    for seed, trained in zip(SEEDS, induction_models(1), strict=True):
        c = cached_control(trained)
        rows.append([seed, f"{c.repeat:.2f}", f"{c.boost:.2f}", f"{c.repeat_ablated:.2f}",
                     f"{c.boost_ablated:.2f}", f"{c.held_out:.2f}"])
    return markdown_table(
        ["seed", "loss on the repeat", "seen / unseen", "loss, heads off",
         "seen / unseen, heads off", "loss, held-out pairs"], rows, align="rrrrrr",
        caption="2,000 held-out sequences. Chance is 3.00.")


@recipe("budget", "the recorded training time of the chapter's six models")
def budget() -> str:
    rows, total = [], 0.0
    for layers in (2, 1):
        for seed, trained in zip(SEEDS, induction_models(layers), strict=True):
            rows.append([layers, seed, f"{trained.train_seconds:.1f}"])
            total += trained.train_seconds
    return markdown_table(
        ["layers", "seed", "training (CPU-s)"], rows, align="rrr",
        caption=f"The CPU time each model's training took, one thread, as recorded when it "
                f"trained: {total:.0f} CPU-seconds in all.")
