"""Diagrams of the recurrent encoder-decoders (the RNN recap and Bahdanau chapters).

[`plot_encoder_decoder`][attnprimer.site.figures.rnn_diagrams.plot_encoder_decoder] draws the three
decoders of [`attnprimer.rnn`][attnprimer.rnn] unrolled on one reversal, at the same places,
so that what changes from one to the next is only what the decoder reads: nothing (vanilla),
the encoder's final state at every step (peeky), or a context made for each step from every
encoder state (attention).
[`plot_alignment_model`][attnprimer.site.figures.rnn_diagrams.plot_alignment_model]
draws Bahdanau's alignment model with the weights of a trained model as the arrows' widths;
its recipe is in [`figures.bahdanau`][attnprimer.site.figures.bahdanau], which fetches the model.
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure

from attnprimer.site.figures.diagrams import arrow, box, canvas, frame, label, legend
from attnprimer.site.figures.plotting import BLUE, ORANGE, PURPLE
from attnprimer.site.figures.recipes import recipe

__all__ = ["plot_alignment_model", "plot_encoder_decoder"]

_INPUT, _OUTPUT = "BAD", ["D", "A", "B", "end"]  # a reversal, small enough to unroll
_ENCODER_X = (0.6, 1.35, 2.1)
_BRIDGE_X = 2.95
_DECODER_X = (3.95, 4.9, 5.85, 6.8)
_TOKENS, _CELLS, _READS, _OUTS, _WRITTEN = 1.05, 1.8, 2.6, 3.35, 3.95  # rows, bottom to top
_TITLES = {
    "vanilla": "vanilla: the encoder's final state starts the decoder, and that is all",
    "peeky": "peeky: the final state also enters every decoder step and its output layer",
    "attention": "attention: every step reads its own context $c_t$, made from every $h_j$",
}


def plot_encoder_decoder(kind: str) -> Figure:
    """The encoder-decoder with the ``kind`` of decoder, unrolled on reversing "BAD".

    Examples:
        >>> from attnprimer.site.figures.diagrams import texts
        >>> "attend" in texts(plot_encoder_decoder("attention"))
        True
    """
    if kind not in _TITLES:
        raise ValueError(f"kind must be one of {', '.join(_TITLES)}, got {kind!r}")
    figure, axes = canvas(7.3, 4.6)
    label(axes, 0.2, 4.42, _TITLES[kind], fontsize=10, ha="left")
    frame(axes, 0.2, _TOKENS - 0.25, 2.42, _CELLS + 0.45, "encoder")
    frame(axes, 2.6, _TOKENS - 0.45, 7.2, _WRITTEN + 0.3, "decoder")
    legend(axes, 0.3, 0.15, step=2.3)
    encoder = []
    for step, (x, letter) in enumerate(zip(_ENCODER_X, _INPUT, strict=True)):
        token = box(axes, x, _TOKENS, letter, width=0.34, height=0.3)
        encoder.append(box(axes, x, _CELLS, "GRU", "learned", width=0.5, height=0.46))
        arrow(axes, token.top, encoder[-1].bottom)
        if step:
            arrow(axes, encoder[-2].right, encoder[-1].left, text=f"$h_{step - 1}$", dy=0.14,
                  dx=0, ha="center")
    bridge = box(axes, _BRIDGE_X, _CELLS, "Linear\n+ tanh", "learned", width=0.62, height=0.5,
                 fontsize=8)
    arrow(axes, encoder[-1].right, bridge.left, text=f"$h_{len(_INPUT) - 1}$", dx=-0.08, dy=0.14,
          ha="left")
    previous = bridge.right
    cells = []
    for step, (x, written) in enumerate(zip(_DECODER_X, _OUTPUT, strict=True)):
        fed = "start" if step == 0 else _OUTPUT[step - 1]
        token = box(axes, x, _TOKENS, fed, width=0.5 if step == 0 else 0.34, height=0.3,
                    fontsize=9 if step == 0 else 10)
        cell = box(axes, x, _CELLS, "GRU", "learned", width=0.56, height=0.46)
        out = box(axes, x, _OUTS, "Linear", "learned", width=0.56, height=0.36, fontsize=8)
        top = box(axes, x, _WRITTEN, written, width=0.5 if written == "end" else 0.34,
                  height=0.3, fontsize=9 if written == "end" else 10)
        arrow(axes, token.top, cell.bottom)
        # positions and steps count from 0: step t reads s_{t-1}, the start state is s_{-1}
        arrow(axes, previous, cell.left, text=f"$s_{{{step - 1}}}$", dx=0, dy=-0.14,
              ha="center")
        arrow(axes, cell.at("top", 0.17), out.at("bottom", 0.17))
        arrow(axes, out.top, top.bottom)
        previous = cell.right
        cells.append((cell, out))
    label(axes, _DECODER_X[0] - 0.3, _TOKENS - 0.3, "each step is fed the letter written "
          "before", fontsize=8, ha="left")
    label(axes, 0.3, 0.42, "tokens: (B,); states $h_j$, $s_t$: (B, H); each Linear writes "
          "logits (B, C), C letters + end", fontsize=8, ha="left")
    if kind == "peeky":
        _draw_peeky(axes, encoder[-1], cells)
    elif kind == "attention":
        _draw_attention(axes, encoder, bridge, cells)
    return figure


def _draw_peeky(axes, final, cells) -> None:
    rail_x = [cell.x - 0.14 for cell, _ in cells]
    arrow(axes, final.top, (final.x, _READS), colour=PURPLE, lw=1.4, head=False)
    arrow(axes, (final.x, _READS), (rail_x[-1], _READS), colour=PURPLE, lw=1.4, head=False)
    label(axes, final.x + 0.1, _READS + 0.14, f"$h_{len(_INPUT) - 1}$: one vector (B, H)",
          fontsize=8, ha="left")
    for x, (cell, out) in zip(rail_x, cells, strict=True):
        arrow(axes, (x, _READS), cell.at("top", -0.14), colour=PURPLE, lw=1.4)
        arrow(axes, (x, _READS), out.at("bottom", -0.14), colour=PURPLE, lw=1.4)


def _draw_attention(axes, encoder, bridge, cells) -> None:
    for state in encoder:
        arrow(axes, state.top, (state.x, _READS), colour=BLUE, lw=1.4, head=False)
    label(axes, encoder[0].x - 0.05, _READS + 0.16, "memory: every $h_j$ (B, S, H)",
          fontsize=8, ha="left")
    rail = encoder[0].x
    for step, (cell, out) in enumerate(cells):
        attend = box(axes, cell.x - 0.3, _READS, "attend", "operation", width=0.52,
                     height=0.32, fontsize=8)
        arrow(axes, (rail, _READS), attend.left, colour=BLUE, lw=1.4, head=False)
        rail = attend.right[0]
        query_x = (cells[step - 1][0].right[0] if step else bridge.right[0]) + 0.06
        arrow(axes, (query_x, _CELLS), attend.at("bottom", -0.12), lw=0.9, bend=-0.25)
        arrow(axes, attend.at("bottom", 0.16), cell.at("top", -0.14), colour=PURPLE, lw=1.4)
        arrow(axes, attend.at("top", 0.16), out.at("bottom", -0.14), colour=PURPLE, lw=1.4)
    label(axes, 2.7, _OUTS, "one context\n$c_t$ per step,\n(B, H)", fontsize=8, ha="left")
    label(axes, cells[0][0].x - 0.62, _CELLS + 0.45, "$s_{t-1}$ asks", fontsize=8,
          ha="right")


@recipe("vanilla_diagram", "the vanilla encoder-decoder, unrolled on one reversal",
        chapter="rnn-recap")
def vanilla_diagram() -> Figure:
    return plot_encoder_decoder("vanilla")


@recipe("peeky_diagram", "the peeky encoder-decoder, unrolled on one reversal",
        chapter="rnn-recap")
def peeky_diagram() -> Figure:
    return plot_encoder_decoder("peeky")


@recipe("attention_diagram", "the attention encoder-decoder, unrolled on one reversal",
        chapter="bahdanau")
def attention_diagram() -> Figure:
    return plot_encoder_decoder("attention")


def plot_alignment_model(weights: torch.Tensor, inputs: str, outputs: list[str],
                         step: int = 1) -> Figure:
    """Bahdanau's alignment model, with arrows as wide as a model's weights (T, S).

    Top, output step ``step``: the alignment model scores the decoder's previous state
    against every encoder state, and the weighted sum's arrows are as wide as the weights.
    Bottom, every output step at once: the lines of output letter t are row t of ``weights``.
    Lines under a weight of 0.005 are not drawn. Each arrow and line is labelled
    ``"step t state j"`` (a label matplotlib does not draw), for the tests.

    Examples:
        >>> figure = plot_alignment_model(torch.eye(3), "ABC", ["x", "y", "z"], step=0)
        >>> widths = {patch.get_label(): patch.get_linewidth() for patch in figure.axes[0].patches}
        >>> widths["step 0 state 0"] > widths["step 0 state 1"]
        True
    """
    weights = torch.as_tensor(weights).detach().float()
    if weights.shape != (len(outputs), len(inputs)) or not 0 <= step < len(outputs):
        raise ValueError(f"weights must be (T, S) = ({len(outputs)}, {len(inputs)}) and step "
                         f"one of its rows, got {tuple(weights.shape)} and step {step}")
    figure, axes = canvas(7.3, 6.95)
    gap = min(0.7, 6.0 / max(len(outputs) - 1, 1))
    xs = [3.9 + (j - (len(inputs) - 1) / 2) * gap for j in range(len(inputs))]
    _one_step(axes, weights[step], inputs, xs, step, outputs[step])
    label(axes, 0.2, 3.35, "(b) every output step: row t of the weights as the widths of "
          "the lines into letter t", fontsize=10, ha="left")
    tops = [3.9 + (t - (len(outputs) - 1) / 2) * gap for t in range(len(outputs))]
    states = [box(axes, x, 1.05, f"$h_{{{j}}}$", width=0.42, height=0.32, fontsize=9)
              for j, x in enumerate(xs)]
    for x, letter in zip(xs, inputs, strict=True):
        label(axes, x, 0.65, f"{letter}", fontsize=10)
    label(axes, 0.2, 0.65, "input", fontsize=8, ha="left")
    label(axes, 0.2, 1.05, "encoder\nstates", fontsize=8, ha="left")
    label(axes, 0.2, 2.65, "written", fontsize=8, ha="left")
    for t, (x, letter) in enumerate(zip(tops, outputs, strict=True)):
        written = box(axes, x, 2.65, letter, width=0.5 if len(letter) > 1 else 0.34,
                      height=0.3, fontsize=9 if len(letter) > 1 else 10)
        label(axes, x, 3.0, f"t = {t}" if t == 0 else f"{t}", fontsize=8)
        for j, state in enumerate(states):
            width = float(weights[t, j])
            if width >= 0.005:  # thinner than a hair: not drawn
                line = arrow(axes, state.top, written.bottom, lw=7 * width, head=False,
                             colour=ORANGE if t == step else BLUE, alpha=0.85)
                line.set_label(f"step {t} state {j}")
    legend(axes, 0.3, 0.18, step=2.3)
    return figure


def _one_step(axes, row: torch.Tensor, inputs: str, xs: list[float], step: int,
              written: str) -> None:
    """Panel (a): the alignment model at one output step, arrows as wide as ``row`` (S,)."""
    label(axes, 0.2, 6.75, f"(a) step t = {step} (counted from 0): the alignment model "
          "scores $s_{t-1}$ against every $h_j$", fontsize=10, ha="left")
    query = box(axes, 0.65, 6.05, "$s_{t-1}$", shape="(B, D)", width=0.7, height=0.5)
    score = box(axes, 2.55, 6.05, "alignment model\n$e_{tj} = v^\\top\\tanh(W_q s_{t-1} + "
                "W_k h_j)$", "learned", width=2.5, height=0.55, fontsize=9)
    softmax = box(axes, 4.55, 6.05, "softmax\nover j", "operation", width=0.9, height=0.5,
                  fontsize=9)
    total = box(axes, 3.9, 5.25, "weighted sum $\\sum_j \\alpha_{tj} h_j$", "operation",
                width=2.4, height=0.4, fontsize=9)
    context = box(axes, 6.3, 5.25, "$c_t$", shape="(B, H)", width=0.6, height=0.5)
    arrow(axes, query.right, score.left)
    arrow(axes, score.right, softmax.left, text="$e_{tj}$", dx=-0.12, dy=0.14)
    arrow(axes, softmax.bottom, (softmax.x, total.top[1]), text="$\\alpha_{tj}$", dy=0.02)
    arrow(axes, total.right, context.left)
    label(axes, context.x, 5.95, f"read by step {step},\nwhich writes {written}", fontsize=8)
    states = []
    for j, (x, letter) in enumerate(zip(xs, inputs, strict=True)):
        states.append(box(axes, x, 4.25, f"$h_{{{j}}}$", width=0.42, height=0.32, fontsize=9))
        label(axes, x, 3.8, letter, fontsize=10)
        if j:
            arrow(axes, states[-2].right, states[-1].left, lw=0.8)
        end = (total.x + (j - (len(inputs) - 1) / 2) * 0.22, total.bottom[1])
        patch = arrow(axes, states[-1].top, end, lw=0.3 + 8 * float(row[j]), colour=ORANGE)
        patch.set_label(f"step {step} state {j}")
    arrow(axes, states[0].at("top", -0.1), score.at("bottom", -0.9), lw=0.8, ls="--",
          text="every $h_j$", dx=-0.08, ha="right")
    label(axes, 0.2, 3.8, "input", fontsize=8, ha="left")
