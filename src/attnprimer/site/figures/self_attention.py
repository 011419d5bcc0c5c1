"""Figures and tables of the chapter "Self-attention" (``docs/chapters/self-attention.md``).

Masks on one set of scores, what a causal mask keeps fixed, the measured cost of attention,
the shapes inside multi-head attention, and the trained difference models: accuracy and
training over seeds, their attention on the primer's example, and what the difference step
reads, uses (ablations and swaps) and holds (probes).
"""

from __future__ import annotations

import functools

import torch
from matplotlib.figure import Figure

from attnprimer.site.bench.attention_cost import CostPoint, measure_in_fresh_process
from attnprimer.site.catalogue import DIFFERENCE_EXAMPLE, DIFFERENCE_VARIANTS, SEEDS, site_model
from attnprimer.site.experiments.difference_model import (
    cached_block_and_swap,
    cached_probes,
    difference_step_profile,
    encoder_weight_by_token,
    mean_self_attention,
)
from attnprimer.site.experiments.self_attention import (
    BROADCAST,
    READOUT_CONDITIONS,
    broadcast_step,
    cached_readout,
    difference_models,
    mean_first_reaching,
    projection_sweep_models,
    self_attention_models,
    sweep_runs,
)
from attnprimer.site.experiments.self_attention import multihead_shapes as shapes_of_multihead
from attnprimer.site.figures.curves import plot_accuracy_curves
from attnprimer.site.figures.mechanisms import (
    plot_attention_cost,
    plot_attention_patterns,
    plot_causal_demo,
)
from attnprimer.site.figures.plotting import (
    plot_attention_grid,
    plot_difference_profile,
    plot_task_attention,
)
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import cell, cli_sample, markdown_table, mean_range, percent
from attnprimer.site.report import attention_report
from attnprimer.tasks import BLANK
from attnprimer.training.model_cache import cached_evaluation
from attnprimer.training.train import predict_one

__all__: list[str] = []


# --- the difference models --------------------------------------------------------------------


def _difference_results():
    first = site_model("difference", self_att=True).trained()
    return first, {variant: [cached_evaluation(trained) for trained in difference_models(variant)]
                   for variant in DIFFERENCE_VARIANTS}


@recipe("difference_accuracy", "held-out accuracy of the difference models, mean (min-max)")
def difference_accuracy() -> str:
    first, results = _difference_results()
    labels = first.task.output_labels()
    rows = [[variant, f"**{mean_range([r.exact_match for r in runs], digits=2)}**",
             *(mean_range([r.per_step[step] for r in runs], digits=2)
               for step in range(len(labels)))] for variant, runs in results.items()]
    config, samples = first.config, next(iter(results.values()))[0].samples
    return markdown_table(
        ["model", "exact match (%)", *(f"{cell(label)} (%)" for label in labels)], rows,
        align="l" + "r" * (len(labels) + 1),
        caption=f"Exact match: all {len(labels)} outputs right. The mean of three training "
                f"runs, then their lowest and highest, each scored on {samples:,} held-out "
                f"sequences; trained {config.steps:,} steps, batches of {config.batch_size}, "
                f"Adam from lr {config.lr:g} with {config.schedule} decay.")


@recipe("difference_accuracy_by_seed", "held-out accuracy of every difference model, by seed")
def difference_accuracy_by_seed() -> str:
    first, results = _difference_results()
    rows = [[variant, seed, f"**{percent(result.exact_match)}**",
             *(percent(accuracy) for accuracy in result.per_step)]
            for variant, runs in results.items()
            for seed, result in zip(SEEDS, runs, strict=True)]
    return markdown_table(["model", "seed", "exact match", *map(cell, first.task.output_labels())],
                          rows)


@recipe("difference_training", "held-out exact match while training, per variant, over seeds")
def difference_training() -> Figure:
    return plot_accuracy_curves({variant: [run.history for run in difference_models(variant)]
                                 for variant in DIFFERENCE_VARIANTS})


def _difference_example(variant: str):
    trained = site_model("difference", **DIFFERENCE_VARIANTS[variant]).trained()
    tokens = trained.task.encode(DIFFERENCE_EXAMPLE)
    return (trained.task, tokens, *predict_one(trained.model, tokens))


def _difference_heatmap(variant: str) -> Figure:
    task, tokens, prediction, attention = _difference_example(variant)
    return plot_task_attention(task, tokens, prediction, attention["encoder-decoder"],
                               self_weights=attention.get("self"))


def _difference_sample(variant: str) -> str:
    task, tokens, prediction, attention = _difference_example(variant)
    targets = task.targets_for(tokens[None])[0]
    report = attention_report(task, tokens, prediction, attention, targets)
    flags = "".join(f" --{name.replace('_', '-')}" for name in DIFFERENCE_VARIANTS[variant])
    return cli_sample(f'attnprimer test difference{flags} --input "{DIFFERENCE_EXAMPLE}"', report)


@recipe("projection_sweep", "exact match of the W_q, W_k, W_v variant at three learning rates")
def projection_sweep_table() -> str:
    plain = difference_models("self-attention")
    labels, rows = plain[0].task.output_labels(), []
    for variant, by_lr in sweep_runs().items():
        for lr, models in by_lr.items():
            values = [cached_evaluation(trained).exact_match for trained in models]
            reached, steps = mean_first_reaching(models, 0.9), map(broadcast_step, models)
            scores = [percent(value) + ("" if step is None else f" ({cell(labels[step])})")
                      for value, step in zip(values, steps, strict=True)]
            rows.append([variant, f"{lr:g}", *scores, percent(sum(values) / len(values)),
                         "never" if reached is None else f"{reached:,}"])
    config, every = plain[0].config, plain[0].history["held_out_step"][0]
    return markdown_table(
        ["self-attention", "peak lr", *(f"seed {seed}" for seed in SEEDS), "mean",
         "mean ≥ 90&nbsp;% at step"], rows, align="ll" + "r" * (len(SEEDS) + 2),
        caption=f"Exact match, on the held-out sequences of the table above. Everything but the "
                f"peak learning rate as there ({config.steps:,} steps, batches of "
                f"{config.batch_size}, Adam, {config.schedule} decay). *Mean ≥ 90&nbsp;% at "
                f"step*: the first evaluation (every {every} steps) at which the seeds' mean "
                f"exact match reached 90&nbsp;%. In brackets after a score, the step that run "
                f"*broadcasts*: every step puts at least {BROADCAST:g} of its self-attention "
                f"weight on it, averaged over 5,000 held-out sequences.")


@recipe("projection_sweep_training", "held-out exact match while training, W_q, W_k, W_v per lr")
def projection_sweep_training() -> Figure:
    return plot_accuracy_curves({f"{variant}, lr {lr:g}": [run.history for run in models]
                                 for variant, by_lr in sweep_runs().items()
                                 for lr, models in by_lr.items()})


@recipe("difference_readout", "where the difference step without self-attention gets |A-B|")
def difference_readout() -> str:
    results = [cached_readout(trained) for trained in difference_models("no self-attention")]
    rows = [[text, *(percent(result[key]) for result in results)]
            for key, text in READOUT_CONDITIONS.items()]
    return markdown_table(
        [cell("|A − B| read by..."), *(f"seed {seed}" for seed in SEEDS)], rows,
        align="l" + "r" * 3,
        caption="The difference model without self-attention, its difference step. Probes are "
                "multinomial logistic regressions fitted on 10,000 held-out sequences; every "
                "row is scored on 10,000 others.")


@recipe("difference_heatmap_plain",
        "attention of the difference model (no self-attention, seed 0) on the primer's example")
def difference_heatmap_plain() -> Figure:
    return _difference_heatmap("no self-attention")


@recipe("difference_heatmap_self",
        "attention of the difference model (self-attention, seed 0) on the primer's example")
def difference_heatmap_self() -> Figure:
    return _difference_heatmap("self-attention")


@recipe("difference_sample_plain",
        "`attnprimer test difference` (no self-attention, seed 0) on the primer's example")
def difference_sample_plain() -> str:
    return _difference_sample("no self-attention")


@recipe("difference_sample_self",
        "`attnprimer test difference` (self-attention, seed 0) on the primer's example")
def difference_sample_self() -> str:
    return _difference_sample("self-attention")


@recipe("difference_encoder_weights", "where the difference step reads the input, per variant")
def difference_encoder_weights() -> str:
    task = site_model("difference", self_att=True).task
    kinds = ["blank" if char == BLANK else char for char in task.alphabet]
    rows = []
    for variant in DIFFERENCE_VARIANTS:
        weights = torch.stack([encoder_weight_by_token(trained)
                               for trained in difference_models(variant)])  # (seeds, V + 1)
        low, mean, high = weights.amin(0), weights.mean(0), weights.amax(0)
        rows.append([variant, *(f"{m:.3f} ({lo:.3f}–{hi:.3f})"
                                for lo, m, hi in zip(low, mean, high, strict=True))])
    return markdown_table(
        ["model", *(f"one {kind}" for kind in kinds)], rows,
        caption=f"Mean weight the difference step's encoder-decoder attention gives one input "
                f"position holding each kind of token, over 5,000 held-out sequences and "
                f"{len(SEEDS)} seeds (range in brackets). Even attention would give "
                f"1/{task.max_len} = {1 / task.max_len:.3f} to every kind.")


@recipe("difference_self_means", "mean self-attention of every self-attention model")
def difference_self_means() -> Figure:
    models = self_attention_models()
    matrices = {f"{short}, seed {seed}": mean_self_attention(trained)
                for short, seed, trained in models}
    for lr, swept in list(projection_sweep_models().items())[1:]:  # the lower learning rates
        matrices |= {f"W_q, W_k, W_v, lr {lr:g}, seed {seed}": mean_self_attention(trained)
                     for seed, trained in zip(SEEDS, swept, strict=True)}
    return plot_attention_grid(matrices, models[0][2].task.output_labels(), columns=len(SEEDS))


@recipe("difference_profile", "the difference step's self-attention against count(A) - count(B)")
def difference_profile() -> Figure:
    models = difference_models("self-attention")
    profiles = [difference_step_profile(trained) for trained in models]
    return plot_difference_profile(profiles, models[0].task.output_labels())


@recipe("difference_interventions", "the difference step's accuracy under ablations and swaps")
def difference_interventions() -> str:
    by_variant = {}  # a table per variant: seven columns do not fit the page's column
    for short, seed, trained in self_attention_models():
        by_variant.setdefault(short, {})[f"seed {seed}"] = cached_block_and_swap(trained)
    return "\n".join(markdown_table(
        [f"{variant}: the difference step...", *columns],
        [[condition, *(percent(result[condition]) for result in columns.values())]
         for condition in next(iter(columns.values()))],
        caption=f"Self-attention with {variant}: accuracy of the difference step on the "
                "10,000 held-out sequences minus those with count(A) = count(B).")
        for variant, columns in by_variant.items())


@recipe("difference_probes", "linear probes on the difference step's state, per variant")
def difference_probes() -> str:
    results = {variant: [cached_probes(trained, samples=5000)
                         for trained in difference_models(variant)]
               for variant in DIFFERENCE_VARIANTS}
    keys = list(dict.fromkeys((probe.target, probe.state)
                              for runs in results.values() for run in runs for probe in run))
    rows = []
    for target, state in keys:
        cells = []
        for runs in results.values():
            values = [probe.accuracy for run in runs for probe in run
                      if (probe.target, probe.state) == (target, state)]
            cells.append("—" if not values else mean_range(values))
        rows.append([cell(target), f"{state} self-attention", *cells])
    return markdown_table(
        ["probe reads", "from the difference step's state", *results], rows, align="ll" + "r" * 3,
        caption=f"Mean over {len(SEEDS)} seeds, in % (range in brackets). Probes are multinomial "
                "logistic regressions fitted on 5,000 held-out sequences and scored on 5,000 "
                "others. Without self-attention, *before* is the state the classifier reads.")


# --- attention on its own -----------------------------------------------------------------------


@recipe("patterns", "soft, hard, padded, causal and local attention on the same scores")
def patterns() -> Figure:
    return plot_attention_patterns()


@recipe("causal", "which outputs move when later inputs change, with and without a mask")
def causal() -> Figure:
    return plot_causal_demo()


def _mib(peak_bytes: int | None) -> str:
    return "n/a" if peak_bytes is None else f"{peak_bytes / 2**20:.1f} MiB"


def _grid(points):
    """(names in order, lengths, {(name, length): point}) of measurements named by their first
    field."""
    names = list(dict.fromkeys(point[0] for point in points))
    return names, sorted({point.length for point in points}), {(p[0], p.length): p for p in points}


@functools.cache
def _cost_points() -> tuple[CostPoint, ...]:
    """One measurement per process, shared by the cost figure and table so they agree."""
    return tuple(measure_in_fresh_process())


@recipe("cost", "time and peak memory of attention against sequence length (measured)",
        alone=True)
def cost() -> Figure:
    return plot_attention_cost(_cost_points())


@recipe("cost_table", "the measured cost numbers, with the growth per doubling of L",
        alone=True)
def cost_table() -> str:
    names, lengths, by = _grid(_cost_points())
    rows = []
    for length in lengths:
        cells = []
        for name in names:
            point = by[name, length]
            cells += [f"{point.seconds * 1e3:.2f} ms", _mib(point.peak_bytes)]
        rows.append([f"{length:,}", *cells])
    growth = []
    for name in names:
        first, last = by[name, lengths[-2]], by[name, lengths[-1]]
        memory = ("" if not first.peak_bytes or not last.peak_bytes
                  else f", memory × {last.peak_bytes / first.peak_bytes:.1f}")
        growth.append(f"{name}: time × {last.seconds / first.seconds:.1f}{memory}")
    return markdown_table(
        ["L", *(f"{name}: {what}" for name in names for what in ("time", "memory"))], rows,
        align="r" * (1 + 2 * len(names)),
        caption=f"From L = {lengths[-2]:,} to {lengths[-1]:,}: " + "; ".join(growth) + ". "
                f"One sequence, H = 4 heads of Dh = 64, float32, forward only, CPU, "
                f"{torch.get_num_threads()} threads, fastest of 3 calls (median of 3 for "
                "memory), measured when this page was built.")


@recipe("multihead_shapes", "the shapes inside multi-head attention, printed by running it")
def multihead_shapes() -> str:
    batch, length, memory_length, dim, heads = 2, 5, 7, 8, 2
    rows = shapes_of_multihead(batch, length, memory_length, dim, heads)
    lines = [(f"B={batch}, L={length}, S={memory_length}, D={dim}, H={heads}, "
              f"Dh=D/H={dim // heads}")]
    lines += [f"{name:<28}{shape!s:<16}{note}" for note, name, shape in rows]
    return "```text\n" + "\n".join(lines) + "\n```\n"
