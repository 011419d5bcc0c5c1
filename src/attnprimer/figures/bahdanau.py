"""Figures and tables of the chapter "Bahdanau attention" (``docs/chapters/bahdanau.md``).

Additive attention computed by hand and checked against the module, and the trained
attention encoder-decoders: one decoded example, its alignment (the shape of Bahdanau et
al.'s Figure 3), and where each model's largest weight falls over held-out inputs.
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure

from attnprimer.additive import AdditiveAttention
from attnprimer.analysis import alignment_offsets, encoder_state_probe
from attnprimer.figures.plotting import plot_attention
from attnprimer.figures.registry import recipe
from attnprimer.figures.tables import cli_sample, markdown_table, percent
from attnprimer.report import attention_report
from attnprimer.site_models import REVERSAL_DECODERS, REVERSAL_EXAMPLE, site_model
from attnprimer.train import TrainedModel, predict_one

__all__: list[str] = []


def reversal_model(decoder: str) -> TrainedModel:
    return site_model("reversal", **REVERSAL_DECODERS[decoder]).trained()


@recipe("additive_by_hand", "additive attention in a few lines, checked against the module")
def additive_by_hand() -> str:
    torch.manual_seed(0)
    module = AdditiveAttention(query_dim=6, key_dim=6, hidden_dim=5).double()
    generator = torch.Generator().manual_seed(0)
    state = torch.randn(1, 6, generator=generator, dtype=torch.float64)  # one decoder state s
    memory = torch.randn(4, 6, generator=generator, dtype=torch.float64)  # four encoder states h
    W_q, W_k, v = module.score.query_proj.weight, module.score.key_proj.weight, module.score.v
    # --8<-- [start:additive_by_hand]
    scores = torch.stack([v @ torch.tanh(W_q @ state[0] + W_k @ h) for h in memory])  # (S,)
    weights = torch.exp(scores) / torch.exp(scores).sum()  # softmax over the S encoder states
    context = (weights[:, None] * memory).sum(dim=0)  # weighted average of the states: (H,)
    # --8<-- [end:additive_by_hand]
    weights, context = weights.detach(), context.detach()
    with torch.no_grad():
        module_context, module_weights = module(state, memory, memory)
    lines = [f"weights by hand:    {[round(float(w), 4) for w in weights]}",
             f"weights, module:    {[round(float(w), 4) for w in module_weights[0]]}",
             f"largest difference: weights {float((weights - module_weights[0]).abs().max()):.1e}"
             f", context {float((context - module_context[0]).abs().max()):.1e}"]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def _example():
    trained = reversal_model("attention (additive)")
    tokens = trained.task.encode(REVERSAL_EXAMPLE)
    return (trained, tokens, *predict_one(trained.model, tokens))


@recipe("alignment", "the attention model's alignment on one example (Bahdanau's Figure 3)")
def alignment() -> Figure:
    trained, tokens, prediction, attention = _example()
    output = trained.task.decode_output(prediction)
    weights = attention["encoder-decoder"][: len(output), : len(REVERSAL_EXAMPLE)]  # no padding
    output_labels = [char if char != "." else "end" for char in output]
    return plot_attention(weights, [f"{label} ({step})" for step, label in enumerate(output_labels)],
                          [f"{char}\n{step}" for step, char in enumerate(REVERSAL_EXAMPLE)],
                          xlabel="input letter and position", ylabel="output letter (step)")


@recipe("sample", "`attnprimer test reversal` on the example")
def sample() -> str:
    trained, tokens, prediction, _ = _example()
    task = trained.task
    report = attention_report(task, tokens, prediction, {}, task.targets_for(tokens[None])[0])
    return cli_sample(f'attnprimer test reversal --input "{REVERSAL_EXAMPLE}"', report)


@recipe("alignment_table", "where each attention model's largest weight falls")
def alignment_table() -> str:
    longest = reversal_model("attention (additive)").task.max_len
    rows = []
    for decoder, settings in REVERSAL_DECODERS.items():
        if settings["decoder"] != "attention":
            continue
        trained = reversal_model(decoder)
        probe = encoder_state_probe(trained)
        for name, lengths in ((f"1–{longest}", range(1, longest + 1)),
                              (f"{longest + 1}–{2 * longest}", range(longest + 1, 2 * longest + 1))):
            offsets = alignment_offsets(trained, lengths)
            on, right = offsets.get(0, 0.0), offsets.get(1, 0.0)
            rows.append([decoder, name, percent(on), percent(right), percent(1 - on - right),
                         percent(probe["letter j"]), percent(probe["letter j - 1"])])
    return markdown_table(
        ["model", "lengths", "on the copied letter", "one to its right", "elsewhere",
         "state j holds letter j", "state j holds letter j − 1"], rows, align="ll" + "r" * 5,
        caption="Where the largest attention weight of each output letter falls (end token "
                "excluded), over 500 held-out inputs per length. The last two columns: linear "
                "probes reading the letter at position j, and the letter before it, from the "
                "encoder's state at position j (fitted on 2,000 held-out inputs, scored on 2,000 "
                "others).")
