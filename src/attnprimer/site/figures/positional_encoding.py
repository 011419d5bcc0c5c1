"""Figures and tables of the chapter "Positional encoding"
(``docs/chapters/positional-encoding.md``).

The trained signal and counting models; the pure plots of the encodings and score biases are
in [`figures.encodings`][attnprimer.site.figures.encodings], the experiments in
[`attnprimer.site.experiments.positional_encoding`][attnprimer.site.experiments.positional_encoding].
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.site.catalogue import (
    COUNTING_LENGTH_VARIANTS,
    SEEDS,
    SIGNAL_EXAMPLE,
    SIGNAL_VARIANTS,
    site_model,
    site_seeds,
)
from attnprimer.site.experiments import positional_encoding as experiments
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.experiments.positional_encoding import SIGNAL_GROUPS, signal_group
from attnprimer.site.figures.curves import plot_accuracy_curves, plot_lengths
from attnprimer.site.figures.encodings import plot_rotary_scores, plot_score_biases, plot_sinusoidal
from attnprimer.site.figures.plotting import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    draw_attention,
    weight_colorbar,
)
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import cli_sample, markdown_table, mean_range, percent
from attnprimer.site.report import attention_report, encoding_norms_report
from attnprimer.tasks import Task
from attnprimer.tasks.signal import multiset_bound
from attnprimer.training.model_cache import cached_evaluation
from attnprimer.training.train import predict_one

__all__ = ["LENGTHS", "plot_learned_norms", "plot_signal_attention"]

LENGTHS = tuple(range(5, 21))
"""The input lengths the length-generalisation figure evaluates at."""


def plot_learned_norms(norms: dict[str, torch.Tensor], length: int) -> Figure:
    """The L2 norm of a learned positional encoding at each position, one bar group per model."""
    figure = Figure(figsize=(8, 3.4), layout="constrained")
    axes = figure.add_subplot()
    positions = np.arange(length)
    width = 0.8 / max(1, len(norms))
    for index, (colour, (label, values)) in enumerate(zip((BLUE, ORANGE, GREEN, GREY),
                                                          norms.items(), strict=False)):
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


@recipe("equivariance", "permutation equivariance of attention, measured on our modules")
def equivariance() -> str:
    gaps = experiments.equivariance_gaps(site_model("counting", seed=0).trained())
    return markdown_table(
        ["what is compared", "largest difference"],
        [(what, f"{gap:.1e}") for what, gap in gaps.items()],
        caption="One random sequence of 10 vectors (D = 16, 4 heads, float64) and one random "
                "shuffle of its positions; the counting model (seed 0, float32) on one held-out "
                "input of 10 tokens and one shuffle of it, and on 1,000 held-out inputs of 10 "
                "tokens, each written twice: 20 tokens.")


@recipe("sinusoidal", "the sinusoidal encoding and its dot product against the offset")
def sinusoidal() -> Figure:
    return plot_sinusoidal()


@recipe("rotary", "scores of one query-key pair at every pair of positions, rotary vs added")
def rotary() -> Figure:
    return plot_rotary_scores()


@recipe("score_biases", "what ALiBi and a relative position bias add to the scores")
def score_biases() -> Figure:
    return plot_score_biases()


@recipe("signal_accuracy", "held-out accuracy of the signal models, with the multiset bound")
def signal_accuracy() -> str:
    first, rows = site_model("signal", pos_enc="learned").trained(), []
    for name in SIGNAL_GROUPS:
        scores = [cached_evaluation(trained).exact_match for trained in signal_group(name)]
        rows.append([name, mean_range(scores, digits=2)])
    bound = float(multiset_bound(first.task.max_len, first.task.vocab_size))
    rows.append(["*best possible from the multiset alone*", f"*{100 * bound:.2f}*"])
    config = first.config
    return markdown_table(
        ["signal model", "exact match&nbsp;%"], rows,
        caption=f"Exact match on {10_000:,} held-out sequences of {first.task.length} letters; "
                f"seeds {', '.join(map(str, SEEDS))}: the mean, and the range in brackets. "
                f"Every model trained {config.steps:,} steps, batches of {config.batch_size}, "
                f"Adam from lr {config.lr:g} with {config.schedule} decay. The bound is exact "
                f"(computed over every count vector, "
                f"[`multiset_bound`][attnprimer.tasks.signal.multiset_bound]).")


ERROR_BUCKETS = {"counts 0–5": range(0, 6), "counts 6–7": range(6, 8), "count 8": range(8, 9),
                 "counts 9–10": range(9, 11)}
"""The true counts the error table groups, by column."""


@recipe("signal_errors", "where the added encodings' errors lie, with and without W_q, W_k")
def signal_errors() -> str:
    rows = []
    for name in ("learned", "learned, with W_q, W_k", "sinusoidal", "sinusoidal, with W_q, W_k"):
        errors = [experiments.cached_errors_by_count(trained) for trained in signal_group(name)]
        rows.append([name, *(mean_range((float(wrong[list(counts)].sum() / seen.sum())
                                         for wrong, seen in errors), digits=2)
                             for counts in ERROR_BUCKETS.values()),
                     mean_range((float(wrong.sum() / seen.sum()) for wrong, seen in errors),
                                digits=2)])
    seen = errors[0][1]
    return markdown_table(
        ["signal model", *(f"{bucket}&nbsp;%" for bucket in ERROR_BUCKETS), "all&nbsp;%"], rows,
        caption="Percent of 10,000 held-out sequences answered wrong, by the true count; "
                f"seeds {', '.join(map(str, SEEDS))}: the mean, and the range in brackets. "
                "Each row's columns add up to its error, 100 % minus its exact match. Every "
                f"model is scored on the same sequences, of which "
                f"{percent(float(seen[8] / seen.sum()))} have a count of 8.")


def _span(values) -> str:
    """Whole numbers as their range, "lowest–highest", or one number when they agree."""
    values = sorted(set(values))
    return "–".join(map(str, sorted({values[0], values[-1]})))


@recipe("signal_counts", "accuracy at each large count, drawn given the count, per model group")
def signal_counts() -> str:
    counts, rows = range(6, 11), []
    for name in [*POSITIONAL_ENCODINGS[1:], *SIGNAL_VARIANTS]:
        results = [experiments.cached_accuracy_by_count(trained) for trained in signal_group(name)]
        rows.append([name, *(mean_range((result["accuracy"][count] for result in results), 0)
                             for count in counts),
                     _span(int(max(result["largest"])) for result in results)])
    return markdown_table(
        ["signal model", *(f"count {count}, %" for count in counts), "largest answer"], rows,
        align="l" + "r" * (len(counts) + 1),
        caption=f"Percent right at each true count on 500 held-out inputs per count drawn "
                f"given the count (the signal letter at random, that many later copies at "
                f"random places): the mean of seeds {', '.join(map(str, SEEDS))} and, in "
                f"brackets, the lowest and the highest seed. Largest answer: the largest count "
                f"a seed gave on any of the 5,500 inputs, from the lowest seed's to the "
                f"highest's.")


@recipe("signal_training", "held-out exact match of the signal models while training")
def signal_training() -> Figure:
    return plot_accuracy_curves({f"{encoding} encoding": [trained.history for trained in
                                                          signal_group(encoding)]
                                 for encoding in POSITIONAL_ENCODINGS})


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
    reading = {"encoder-decoder": attention["encoder-decoder"]}
    report = attention_report(trained.task, tokens, prediction, reading,
                              trained.task.targets_for(tokens[None])[0])
    norms = encoding_norms_report(trained.model, len(tokens))
    return cli_sample(f'attnprimer test signal --pos-enc learned --input "{SIGNAL_EXAMPLE}"',
                      f"{report}\n\n(encoder self-attention rows left out: see the heatmap)"
                      f"\n\n{norms}")


@recipe("signal_norms", "the learned encoding's norm at each position, three seeds")
def signal_norms() -> Figure:
    models = signal_group("learned")
    norms = {f"seed {seed}": trained.model.position.norms()
             for seed, trained in zip(SEEDS, models, strict=True)}
    return plot_learned_norms(norms, models[0].task.length)


@recipe("signal_letters", "the output step's weight on the signal position, by signal letter")
def signal_letters() -> str:
    rows = []
    for encoding in ("learned", "sinusoidal"):
        for seed, trained in zip(SEEDS, signal_group(encoding), strict=True):
            weights = experiments.cached_signal_weight_by_letter(trained)
            rows.append([encoding, seed, *(f"{weight:.2f}" for weight in weights.values())])
    return markdown_table(
        ["encoding", "seed", *(f"signal {letter}" for letter in weights)], rows,
        caption="Mean weight of the output step on position 0, over 5,000 held-out sequences, "
                f"split by the signal's letter. Even attention gives 1/11 = {1 / 11:.2f}.")


@recipe("signal_where", "where the signal models' output step looks, per encoding")
def signal_where() -> str:
    rows, kinds = [], []
    for name in SIGNAL_GROUPS:
        results = [experiments.cached_signal_attention(trained) for trained in signal_group(name)]
        kinds = list(results[0])
        rows.append([name, *(mean_range((result[kind] for result in results), 2,
                                        percent=False) for kind in kinds)])
    length = site_model("signal").task.length
    return markdown_table(
        ["signal model", *kinds], rows,
        caption=f"Mean weight of the output step on one position of each kind, over 5,000 "
                f"held-out sequences: the mean of seeds {', '.join(map(str, SEEDS))} and, in "
                f"brackets, the lowest and the highest seed. Even attention would give "
                f"1/{length} = {1 / length:.2f}.")


@recipe("length_generalisation", "exact match against the input length, trained at length 10")
def length_generalisation() -> Figure:
    groups = {"counting": [model.trained() for model in site_seeds("counting")],
              **{f"signal, {name} encoding": signal_group(name)
                 for name in POSITIONAL_ENCODINGS[1:]}}
    curves = {label: [cached_accuracy_by_length(trained, LENGTHS) for trained in models]
              for label, models in groups.items()}
    return plot_lengths(curves, LENGTHS, (10, 10), "trained at 10")


@recipe("counting_lengths", "counting at lengths 2 to 40: one or mixed lengths, start token")
def counting_lengths() -> Figure:
    return plot_lengths(experiments.counting_lengths(), experiments.COUNTING_LENGTHS, (5, 20),
                        "mixed lengths: trained from 5 to 20; the others at 10")


@recipe("counting_counts", "start-token counting beyond training: large counts, or the length")
def counting_counts() -> str:
    results, lengths = experiments.counts_or_length_by_variant(), (20, 25, 30, 40)
    one, mixed = "one length, start token", "mixed lengths, start token"
    task = {name: site_model("counting", **COUNTING_LENGTH_VARIANTS[name]).task
            for name in (one, mixed)}
    at = [experiments.COUNTING_LENGTHS[4:].index(length) for length in lengths]

    def row(label, name, key):
        return [label, *(mean_range(result[key][index] for result in results[name])
                         for index in at)]

    def answers(index, name):  # the largest answer, the range over seeds
        return _span(int(result["largest"][index]) for result in results[name])

    rows = [row("inputs with every count ≤&nbsp;10&nbsp;%", one, "small")]
    for name, trained in ((one, "10 tokens"), (mixed, "5 to 20 tokens")):
        rows += [[(f"**{name.removesuffix(', start token')}** ({trained}; classes "
                   f"0–{task[name].num_classes - 1})"),
                  *[""] * len(lengths)],
                 row("right&nbsp;%", name, "exact"),
                 row("right on every count ≤&nbsp;10&nbsp;%", name, "exact_small"),
                 row("padded: right&nbsp;%", name, "padded"),
                 ["largest answer", *(answers(index, name) for index in at)]]
    largest = int(max(max(result["largest"]) for result in results[one]))
    share = partial(experiments.share_with_count_above, letters=task[one].vocab_size)
    mixed_lengths = range(task[mixed].max_len // 4, task[mixed].max_len + 1)  # as CountingTask
    above = {one: share(largest, task[one].max_len),
             mixed: float(np.mean([share(10, length) for length in mixed_lengths]))}
    return markdown_table(
        ["start-token models", *(f"{length} tokens" for length in lengths)], rows,
        caption=f"Seeds {', '.join(map(str, SEEDS))} of each model: the mean, and the range in "
                f"brackets. *Right*: exact match on the figure's 2,000 held-out inputs of that "
                f"length. *Every count ≤ 10*: those of them in which no letter occurs more than "
                f"10 times (the same inputs for both models). *Padded*: the figure's 2,000 "
                f"held-out inputs of 10 tokens, blanks appended up to the length: their counts "
                f"and answers stay those of 10 tokens. *Largest answer*: the largest count a seed "
                f"gave at that length. Of the inputs drawn in training, {percent(above[one], 3)} "
                f"hold a letter more than {largest} times at 10 tokens, {percent(above[mixed], 3)}"
                f" more than 10 times at 5 to 20 tokens (exact shares: every input of a length "
                f"alike, every length alike).")
