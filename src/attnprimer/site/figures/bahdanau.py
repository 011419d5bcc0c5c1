"""Figures and tables of the chapter "Bahdanau attention" (``docs/chapters/bahdanau.md``).

One additive score worked by hand
([`attnprimer.site.experiments.worked_additive`][attnprimer.site.experiments.worked_additive]),
the alignment a reversal needs, additive attention computed by hand and checked against the
module, and the trained
reversal encoder-decoders, three seeds each: exact match against the input length (the shape
of Bahdanau et al.'s Figure 2), training curves, one decoded example and its alignment (their
Figure 3), where the largest weights fall, and what the decoder does when its attention is
forced ([`attnprimer.site.experiments.bahdanau`][attnprimer.site.experiments.bahdanau]).
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from attnprimer.additive import AdditiveAttention, additive_attention_by_hand
from attnprimer.site.catalogue import (
    REVERSAL_BIDIRECTIONAL,
    REVERSAL_DECODERS,
    REVERSAL_EXAMPLE,
    site_model,
    site_seeds,
)
from attnprimer.site.experiments.bahdanau import (
    FORCED_OFFSETS,
    alignment_by_length,
    first_step_reaching,
    forced_attention,
    largest_weight,
    state_probes,
)
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.experiments.worked_additive import (
    additive_example,
    score_lines,
    softmax_rows,
    vector_text,
)
from attnprimer.site.figures.curves import plot_accuracy_curves, plot_length_generalisation
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE, plot_attention
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.rnn_diagrams import plot_alignment_model
from attnprimer.site.figures.tables import by_seed, cli_sample, markdown_table, mean_range
from attnprimer.site.report import attention_report
from attnprimer.training.train import TrainedModel, predict_one

__all__ = ["MODELS", "seeds"]

BIDIRECTIONAL = "attention (additive), bidirectional"
MODELS = {**REVERSAL_DECODERS, BIDIRECTIONAL: REVERSAL_BIDIRECTIONAL}
"""The reversal models of this page, by name: their settings in the catalogue."""
ATTENTION = ("attention (additive)", "attention (dot)", BIDIRECTIONAL)
COLOURS = dict(zip(MODELS, (GREY, BLUE, ORANGE, GREEN, "#CC79A7"), strict=True))  # every figure


def reversal_model(name: str, seed: int = 0) -> TrainedModel:
    return site_model("reversal", seed=seed, **MODELS[name]).trained()


def seeds(name: str) -> list[TrainedModel]:
    """Every seed of the model called ``name`` in
    [`MODELS`][attnprimer.site.figures.bahdanau.MODELS]."""
    return [model.trained() for model in site_seeds("reversal", **MODELS[name])]


def spread(values) -> str:
    """The seeds' percentages as the site writes results over seeds: "99.1 (98.7–99.4)"."""
    return mean_range(list(values))


@recipe("worked_score", "one additive score, every step small enough to check by hand")
def worked_score() -> str:
    return "```text\n" + "\n".join(score_lines(additive_example())) + "\n```\n"


@recipe("worked_softmax", "the worked example's three scores, their softmax and the context")
def worked_softmax() -> str:
    worked = additive_example()
    return markdown_table(
        ["j", "h_j", "W_k h_j", "W_q s + W_k h_j", "tanh of it", "score e_j", "weight α_j"],
        softmax_rows(worked), align="lrrrrrr",
        caption=f"The same s, W_q, W_k and v against three encoder states; W_q s = "
                f"{vector_text(worked.projected_state)} in every row. The weights are the "
                f"softmax of the scores; the context, their weighted average of the h_j, is "
                f"c = {vector_text(worked.context)}.")


@recipe("additive_by_hand", "additive attention in a few lines, checked against the module")
def additive_by_hand() -> str:
    torch.manual_seed(0)
    module = AdditiveAttention(query_dim=6, key_dim=6, hidden_dim=5).double()
    generator = torch.Generator().manual_seed(0)
    state = torch.randn(6, generator=generator, dtype=torch.float64)  # one decoder state s
    memory = torch.randn(4, 6, generator=generator, dtype=torch.float64)  # four encoder states h
    with torch.no_grad():
        context, weights = additive_attention_by_hand(module.score, state, memory)
        module_context, module_weights = module(state[None], memory, memory)
    lines = [f"weights by hand:    {[round(float(w), 4) for w in weights]}",
             f"weights, module:    {[round(float(w), 4) for w in module_weights[0]]}",
             (f"largest difference: weights {float((weights - module_weights[0]).abs().max()):.1e}"
              f", context {float((context - module_context[0]).abs().max()):.1e}")]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _example(name: str = "attention (additive)"):
    trained = reversal_model(name)
    tokens = trained.task.encode(REVERSAL_EXAMPLE)
    return (trained, tokens, *predict_one(trained.model, tokens))


def _alignment(name: str) -> Figure:
    trained, _, prediction, attention = _example(name)
    output = trained.task.decode_output(prediction)
    weights = attention["encoder-decoder"][: len(output), : len(REVERSAL_EXAMPLE)]  # no padding
    output_labels = [char if char != "." else "end" for char in output]
    return plot_attention(weights,
                          [f"{label} ({step})" for step, label in enumerate(output_labels)],
                          [f"{char}\n{step}" for step, char in enumerate(REVERSAL_EXAMPLE)],
                          xlabel="input letter and position", ylabel="output letter (step)",
                          title=f"{name}, seed 0")


@recipe("alignment", "the attention model's alignment on one example (Bahdanau's Figure 3)")
def alignment() -> Figure:
    return _alignment("attention (additive)")


@recipe("alignment_model", "the alignment model, arrows as wide as the trained model's weights")
def alignment_model() -> Figure:
    trained, _, prediction, attention = _example()
    output = trained.task.decode_output(prediction)
    weights = attention["encoder-decoder"][: len(output), : len(REVERSAL_EXAMPLE)]  # no padding
    return plot_alignment_model(weights, REVERSAL_EXAMPLE,
                                [char if char != "." else "end" for char in output], step=1)


@recipe("alignment_ideal", "the alignment a reversal needs, drawn as the alignment model")
def alignment_ideal() -> Figure:
    """Each output step reads exactly the state of the letter it copies: no trained model."""
    n = len(REVERSAL_EXAMPLE)
    weights = torch.eye(n).flip(0)  # step t reads position n - 1 - t
    return plot_alignment_model(weights, REVERSAL_EXAMPLE, list(REVERSAL_EXAMPLE[::-1]), step=1)


@recipe("alignment_bidirectional", "the bidirectional attention model's alignment on the example")
def alignment_bidirectional() -> Figure:
    return _alignment(BIDIRECTIONAL)


@recipe("sample", "`attnprimer test reversal` on the example")
def sample() -> str:
    trained, tokens, prediction, _ = _example()
    task = trained.task
    report = attention_report(task, tokens, prediction, {}, task.targets_for(tokens[None])[0])
    return cli_sample(f'attnprimer test reversal --input "{REVERSAL_EXAMPLE}"', report)


def _lengths() -> tuple[list[int], list[int]]:
    """The lengths of training (1 to 10) and the next as many (11 to 20)."""
    longest = reversal_model("vanilla").task.max_len
    return list(range(1, longest + 1)), list(range(longest + 1, 2 * longest + 1))


@recipe("length", "exact match against input length, five encoder-decoders, three seeds each")
def length() -> Figure:
    inside, beyond = _lengths()
    lengths = inside + beyond
    scores = {name: np.array([cached_accuracy_by_length(trained, lengths, 1000)
                              for trained in seeds(name)])
              for name in MODELS}  # (seeds, lengths) per model
    figure = plot_length_generalisation(
        {name: (lengths, runs.mean(axis=0)) for name, runs in scores.items()},
        trained_length=inside[-1])
    axes = figure.axes[0]
    for line, runs in zip(axes.get_lines(), scores.values(), strict=False):
        axes.fill_between(lengths, runs.min(axis=0), runs.max(axis=0), color=line.get_color(),
                          alpha=0.2, lw=0)
    axes.set_xlabel("input length (letters to reverse)")
    axes.set_ylabel("held-out exact match (mean of 3 seeds)")
    axes.texts[0].set_text("longest in training")
    return figure


@recipe("accuracy", "exact match of the five encoder-decoders, inside and beyond training")
def accuracy() -> str:
    inside, beyond = _lengths()
    rows = []
    for name in MODELS:
        runs = [cached_accuracy_by_length(trained, inside + beyond, 1000)
                for trained in seeds(name)]
        rows.append([name, spread(np.mean(run[: len(inside)]) for run in runs),
                     spread(run[len(inside) - 1] for run in runs),
                     spread(np.mean(run[len(inside):]) for run in runs)])
    first = reversal_model("vanilla")
    return markdown_table(
        ["model", f"lengths {inside[0]}–{inside[-1]} (trained), %", f"length {inside[-1]}, %",
         f"lengths {beyond[0]}–{beyond[-1]}, %"], rows,
        caption=f"Exact match (every letter and the end token right, greedy decoding), 1,000 "
                f"held-out inputs per length, averaged over the lengths of the column; "
                f"each cell gives the mean over seeds 0, 1 and 2, then the lowest and highest "
                f"of the three in brackets. Every model trained {first.config.steps:,} steps on "
                f"lengths {inside[0]}–{inside[-1]}, batches of {first.config.batch_size}, teacher "
                f"forcing. The unidirectional encoders have {first.task.hidden} units; the "
                f"bidirectional one {REVERSAL_BIDIRECTIONAL['hidden']} per direction, so that its "
                f"states have the same {first.task.hidden} numbers.")


@recipe("training", "held-out exact match while training, attention models, three seeds each")
def training() -> Figure:
    names = ("peeky", *ATTENTION)
    figure = plot_accuracy_curves({name: [trained.history for trained in seeds(name)]
                                   for name in names})
    for axes in figure.axes:  # the colours of the length figure: one colour per model
        for line, band, name in zip(axes.get_lines(), axes.collections, names, strict=True):
            line.set_color(COLOURS[name])
            band.set_color(COLOURS[name])
    figure.axes[0].legend(fontsize=8, loc="lower right")
    return figure


@recipe("training_table", "when each attention model's seeds reached 90 % and 99 % exact match")
def training_table() -> str:
    rows = []
    for name in ("peeky", *ATTENTION):
        histories = [trained.history for trained in seeds(name)]
        reached = {level: [first_step_reaching(history, level) for history in histories]
                   for level in (0.9, 0.99)}
        rows.append([name, *(by_seed(f"{step:,}" if step else "never" for step in steps)
                             for steps in reached.values()),
                     spread(history["held_out_exact_match"][-1] for history in histories)])
    return markdown_table(
        ["model", "first reached 90&nbsp;%", "first reached 99&nbsp;%", "at the end, %"], rows,
        caption="The training step at which held-out exact match (1,000 inputs of lengths "
                "1–10, scored every 100 steps) first reached 90&nbsp;% and 99&nbsp;%, and its "
                "value at the last step; each cell gives seeds 0 / 1 / 2.")


@recipe("alignment_table", "where each attention model's largest weight falls, three seeds")
def alignment_table() -> str:
    inside, beyond = _lengths()
    rows = []
    for name in ATTENTION:
        shares = [(alignment_by_length(trained, inside), alignment_by_length(trained, beyond))
                  for trained in seeds(name)]
        on = [trained.get(0, 0.0) for trained, _ in shares]
        right = [trained.get(1, 0.0) for trained, _ in shares]
        rows.append([name, spread(on), spread(right),
                     mean_range([largest_weight(trained, inside) for trained in seeds(name)],
                                digits=2, percent=False),
                     spread(longer.get(0, 0.0) + longer.get(1, 0.0) for _, longer in shares)])
    return markdown_table(
        ["model", "on the copied letter, %", "one to its right, %", "largest weight",
         f"{beyond[0]}–{beyond[-1]} letters: on it or one right, %"], rows,
        caption=f"Where the largest attention weight of each output letter falls (end token "
                f"excluded), greedy decoding, 500 held-out inputs per length; the first three "
                f"columns over lengths {inside[0]}–{inside[-1]}, where the rest (under 5&nbsp;%) "
                f"falls elsewhere. \"largest weight\": its mean size (1 when a step reads one "
                f"state alone). Each cell: the mean of three training runs, then their lowest "
                f"and highest.")


@recipe("probe_table", "what the encoder's state at position j holds, read by linear probes")
def probe_table() -> str:
    rows = []
    for name in ATTENTION:
        probes = [state_probes(trained) for trained in seeds(name)]
        rows.append([name, *(spread(probe[target] for probe in probes)
                             for target in ("letter j", "letter j - 1"))])
    return markdown_table(
        ["model", "state j holds letter j, %", "state j holds letter j − 1, %"], rows,
        caption="Linear probes reading the letter at position j, and the letter before it, from "
                "the encoder's state at position j (positions 1 and later; fitted on 2,000 "
                "held-out inputs of lengths 1–10, scored on 2,000 others). Each cell: the mean of "
                "three training runs, then their lowest and highest.")


@recipe("forced_table", "per-step letter accuracy when the attention is forced onto one state")
def forced_table() -> str:
    results = {name: [forced_attention(trained) for trained in seeds(name)] for name in ATTENTION}
    conditions = ["as trained", "its own largest weight", *FORCED_OFFSETS]
    rows = [[condition, *(spread(result[condition] for result in results[name])
                          for name in ATTENTION)] for condition in conditions]
    return markdown_table(
        ["every step reads", *(f"{name}, %" for name in ATTENTION)], rows,
        caption="Teacher-forced per-step letter accuracy: the decoder is fed the correct "
                "previous letters and its attention is replaced by a one-hot on the chosen "
                "encoder state at every step. Output steps t ≥ 2 (where every chosen position "
                "is inside the input) of 500 held-out inputs of each length 3–10. Chance is 1 in 8 "
                "letters. Each cell: the mean of three "
                "training runs, then their lowest and highest.")
