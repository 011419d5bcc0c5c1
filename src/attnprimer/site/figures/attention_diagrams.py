"""Diagrams of attention and of the models built from it, with the shapes of their tensors.

Scaled dot-product attention and the counting model (the QKV chapter), multi-head split and
merge (the self-attention chapter), and the signal model with its encoder layer (the
positional-encoding chapter), the pre-LN encoder-decoder Transformer (the Transformer chapter),
each drawn from the code it shows:
[`scaled_dot_product_attention`][attnprimer.dot_product.scaled_dot_product_attention],
[`CountingModel`][attnprimer.models.counting.CountingModel],
[`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention],
[`SignalModel`][attnprimer.models.signal.SignalModel] and
[`Transformer`][attnprimer.transformer.Transformer]. None needs a trained model.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from attnprimer.site.figures.diagrams import arrow, box, canvas, frame, label, legend
from attnprimer.site.figures.plotting import BLUE, GREEN, ORANGE, PURPLE
from attnprimer.site.figures.recipes import recipe

__all__ = ["plot_counting_model", "plot_multihead", "plot_scaled_dot_product",
           "plot_signal_model", "plot_transformer"]

_HEADS = (BLUE, ORANGE, GREEN, PURPLE)  # one colour per head


def plot_scaled_dot_product() -> Figure:
    """softmax(Q K^T / sqrt(Dk)) V as a data flow, left to right, with every tensor's shape."""
    figure, axes = canvas(7.3, 3.3)
    query = box(axes, 0.5, 2.3, "Q", shape="(L, $D_k$)", width=0.7, height=0.5)
    key = box(axes, 0.5, 1.45, "K", shape="(S, $D_k$)", width=0.7, height=0.5)
    product = box(axes, 1.6, 1.85, "$QK^\\top$", "operation", width=0.6, height=0.5)
    scale = box(axes, 2.65, 1.85, "$\\div\\sqrt{D_k}$", "operation", width=0.65, height=0.5)
    mask = box(axes, 3.75, 1.85, "mask\n(optional)", "operation", width=0.75, height=0.5,
               fontsize=8)
    softmax = box(axes, 4.95, 1.85, "softmax\nover keys", "operation", width=0.8, height=0.5,
                  fontsize=8)
    weighted = box(axes, 6.35, 1.85, "weights\n$\\cdot\\, V$", "operation", width=0.7,
                   height=0.5, fontsize=9)
    value = box(axes, 6.35, 0.75, "V", shape="(S, $D_v$)", width=0.7, height=0.5)
    context = box(axes, 6.35, 2.9, "context", shape="(L, $D_v$)", width=0.95, height=0.5)
    weights = box(axes, 4.95, 0.75, "weights", shape="(L, S), returned", width=1.2, height=0.5)
    arrow(axes, query.right, product.at("left", 0.12))
    arrow(axes, key.right, product.at("left", -0.12), text="$K^\\top$: ($D_k$, S)",
          where=0.0, dx=0.02, dy=-0.3)
    for left, right, text in ((product, scale, "scores"), (scale, mask, ""),
                              (mask, softmax, "")):
        arrow(axes, left.right, right.left, text=text, dx=0, dy=0.16, ha="center", fontsize=8)
        label(axes, (left.right[0] + right.left[0]) / 2, 1.62, "(L, S)", fontsize=8)
    arrow(axes, softmax.right, weighted.left)
    label(axes, (softmax.right[0] + weighted.left[0]) / 2, 1.62, "(L, S)", fontsize=8)
    arrow(axes, softmax.bottom, weights.top)
    arrow(axes, value.top, weighted.bottom)
    arrow(axes, weighted.top, context.bottom)
    label(axes, 3.75, 2.4, "False: $-\\infty$", fontsize=8)
    label(axes, 4.95, 2.4, "rows sum to 1", fontsize=8)
    legend(axes, 0.3, 0.15, step=2.0)
    return figure


def plot_counting_model() -> Figure:
    """The counting model: learned queries read embedded tokens, one count per query."""
    figure, axes = canvas(7.3, 3.6)
    tokens = box(axes, 0.6, 2.8, "tokens", shape="(B, S)", width=0.8, height=0.5)
    one_hot = box(axes, 1.8, 2.8, "one-hot", "operation", width=0.75, height=0.4, fontsize=9)
    embed = box(axes, 3.05, 2.8, "Linear", "learned", width=0.7, height=0.4, fontsize=9)
    keys = box(axes, 4.5, 2.8, "keys = values", shape="(B, S, D)", width=1.2, height=0.5)
    queries = box(axes, 0.75, 1.35, "queries", "learned", shape="(T, D), from 0", width=1.1,
                  height=0.5)
    attend = box(axes, 2.45, 1.35, "scaled\ndot-product\nattention", "operation", width=1.05,
                 height=0.65, fontsize=8)
    residual = box(axes, 3.75, 1.35, "+", "operation", width=0.32, height=0.32)
    norm = box(axes, 4.6, 1.35, "LayerNorm", "learned", width=0.9, height=0.4, fontsize=9)
    classify = box(axes, 5.6, 1.35, "Linear", "learned", width=0.65, height=0.4, fontsize=9)
    logits = box(axes, 6.7, 1.35, "logits", shape="(B, T, C)", width=0.85, height=0.5)
    arrow(axes, tokens.right, one_hot.left)
    arrow(axes, one_hot.right, embed.left)
    label(axes, (one_hot.right[0] + embed.left[0]) / 2, 3.05, "(B, S, V+1)", fontsize=8)
    arrow(axes, embed.right, keys.left)
    arrow(axes, keys.bottom, attend.at("top", 0.25), text="K, V", dx=0.1, where=0.4)
    arrow(axes, queries.right, attend.left, text="Q", dx=0, dy=0.14, ha="center")
    arrow(axes, attend.right, residual.left)
    label(axes, (attend.right[0] + residual.left[0]) / 2, 1.1, "(B, T, D)", fontsize=8)
    corner = queries.at("bottom", 0.3)
    arrow(axes, corner, (corner[0], 0.7), head=False)
    arrow(axes, (corner[0], 0.7), (residual.x, 0.7), head=False, text="residual: + queries",
          where=0.75, dx=0, dy=-0.12, ha="center", fontsize=8)
    arrow(axes, (residual.x, 0.7), residual.bottom)
    arrow(axes, residual.right, norm.left)
    arrow(axes, norm.right, classify.left)
    arrow(axes, classify.right, logits.left)
    label(axes, 2.45, 0.88, "weights (B, T, S)", fontsize=8)
    label(axes, 6.7, 0.85, "C = counts 0 to 10", fontsize=8)
    label(axes, 0.2, 3.45, "T = 3 queries (A, B, C); S = 10 tokens; V + 1 = 4 tokens "
          "(A, B, C, blank)",
          fontsize=8, ha="left")
    legend(axes, 0.3, 0.15, step=2.0)
    return figure


def _strip(axes, x: float, y: float, width: float = 0.8, height: float = 0.22) -> list[float]:
    """A (B, L, D) tensor drawn as its D features cut into the heads' slices; their centres."""
    slice_width = width / len(_HEADS)
    centres = []
    for head, colour in enumerate(_HEADS):
        left = x - width / 2 + head * slice_width
        box(axes, left + slice_width / 2, y, "", fill=colour, width=slice_width, height=height)
        centres.append(left + slice_width / 2)
    return centres


def plot_multihead() -> Figure:
    """Multi-head attention: project, cut D into H slices, attend per head, merge, project."""
    figure, axes = canvas(7.3, 4.4)
    rows = (3.45, 2.6, 1.75, 0.9)  # one per head
    x = box(axes, 0.45, 2.175, "x", shape="(B, L, D)", width=0.7, height=0.5)
    heads = []
    for name, y in zip(("q", "k", "v"), (2.95, 2.175, 1.4), strict=True):
        weight = box(axes, 1.25, y, f"$W_{name}$", "learned", width=0.45, height=0.36)
        arrow(axes, x.right, weight.left)
        centres = _strip(axes, 2.15, y)
        arrow(axes, weight.right, (1.75, y))
        label(axes, 2.15, y + 0.22, f"{name} (B, L, D)", fontsize=8)
        heads.append(centres)
    label(axes, 3.0, 3.95, "split_heads:\n(B, H, L, $D_h$)", fontsize=8)
    attends = []
    for head, (y, colour) in enumerate(zip(rows, _HEADS, strict=True)):
        attend = box(axes, 3.75, y, f"head {head + 1}:\nattention", "operation", fill=colour,
                     width=0.95, height=0.5, fontsize=8)
        for name, centres in enumerate(heads):
            start = (centres[head], (2.95, 2.175, 1.4)[name] - 0.11)
            arrow(axes, start, attend.at("left", 0.12 - 0.12 * name), colour=colour, lw=0.9)
        attends.append(attend)
    label(axes, 3.75, 0.45, "weights (B, H, L, S):\none L x S matrix per head", fontsize=8)
    merged = _strip(axes, 5.05, 2.175)
    for head, attend in enumerate(attends):
        arrow(axes, attend.right, (merged[head], 2.175 + (0.11 if head < 2 else -0.11)),
              colour=_HEADS[head], lw=0.9)
    label(axes, 5.05, 3.35, "merge_heads:\n(B, L, D)", fontsize=8)
    out = box(axes, 5.95, 2.175, "$W_o$", "learned", width=0.45, height=0.36)
    arrow(axes, (5.45, 2.175), out.left)
    output = box(axes, 6.8, 2.175, "output", shape="(B, L, D)", width=0.8, height=0.5)
    arrow(axes, out.right, output.left)
    label(axes, 0.2, 4.25, "H = 4 heads, each $D_h$ = D / H features wide: the slices of "
          "one colour; a head never sees another's slice", fontsize=8, ha="left")
    legend(axes, 0.3, 0.15, step=2.0)
    return figure


def plot_signal_model() -> Figure:
    """The signal model: embedding, position, one post-norm encoder layer, one query reads it."""
    figure, axes = canvas(7.3, 6.9)
    column, side = 1.55, 2.75  # the layer's column, and where its notes start
    steps = [("tokens", "tensor", "(B, S)"), ("embed: one-hot, Linear", "learned", None),
             ("+ position", "operation", None), ("scaled dot-product\nattention", "operation",
                                                 None),
             ("+", "operation", None), ("LayerNorm", "learned", None),
             ("feed-forward", "learned", None), ("+", "operation", None),
             ("LayerNorm", "learned", None), ("encoded", "tensor", "(B, S, D)")]
    ys = [0.75, 1.35, 1.95, 2.7, 3.35, 3.9, 4.5, 5.1, 5.65, 6.45]
    boxes = []
    for (text, kind, shape), y in zip(steps, ys, strict=True):
        small = text == "+"
        boxes.append(box(axes, column, y, text, kind, shape=shape,
                         width=0.32 if small else 1.8, height=0.32 if small else
                         (0.5 if shape or "\n" in text else 0.34), fontsize=9))
        if len(boxes) > 1:
            arrow(axes, boxes[-2].top, boxes[-1].bottom)
    frame(axes, 0.3, 2.18, 2.6, 6.08, "EncoderLayer")
    for start, end in ((2, 4), (5, 7)):  # the residuals: around attention, around feed-forward
        tap = (column, (boxes[start].top[1] + boxes[start + 1].bottom[1]) / 2)
        arrow(axes, tap, (0.5, tap[1]), head=False)
        arrow(axes, (0.5, tap[1]), (0.5, boxes[end].y), head=False)
        arrow(axes, (0.5, boxes[end].y), boxes[end].left)
    notes = [(1.95, "learned or sinusoidal (B, S, D);\nnothing for none and rotary"),
             (2.7, "q = k = v = x; with projections\n$W_q x$, $W_k x$; rotary rotates them"),
             (3.35, "residual: x + context"), (4.5, "Linear D to 2D, ReLU,\nLinear 2D to D"),
             (5.1, "residual: x + feed-forward(x)")]
    for y, text in notes:
        label(axes, side, y, text, fontsize=8, ha="left")
    label(axes, side, 6.27, "self-attention weights (B, S, S)", fontsize=8, ha="left")
    readout = [("scaled dot-product\nattention", "operation"), ("+", "operation"),
               ("LayerNorm", "learned"), ("Linear", "learned"), ("logits (B, 1, C)", "tensor")]
    previous = None
    for (text, kind), y in zip(readout, (5.4, 4.55, 3.95, 3.35, 2.7), strict=True):
        small = text == "+"
        current = box(axes, 5.9, y, text, kind, width=0.32 if small else 1.45,
                      height=0.32 if small else (0.5 if "\n" in text else 0.36), fontsize=9)
        if previous is not None:
            arrow(axes, previous.bottom, current.top)
        previous = current
        if text.startswith("scaled"):
            attend = current
    arrow(axes, boxes[-1].right, (attend.x, boxes[-1].y), head=False)
    arrow(axes, (attend.x, boxes[-1].y), attend.top, text="K, V", dx=-0.06, ha="right",
          where=0.25)
    query = box(axes, 6.6, 6.45, "query", "learned", shape="(1, D), from 0", width=1.1,
                height=0.5)
    arrow(axes, query.at("bottom", -0.2), attend.at("top", 0.5), text="Q", dx=0.06)
    tap = query.at("bottom", 0.4)
    arrow(axes, tap, (tap[0], 4.55), head=False)
    arrow(axes, (tap[0], 4.55), (5.9 + 0.16, 4.55), text="+ query", where=0.45, dy=0.14,
          fontsize=8, ha="center")
    frame(axes, 4.95, 2.18, 7.25, 6.08, "readout")
    legend(axes, 0.3, 0.2, step=2.0)
    return figure


def _stack(axes, x: float, steps, ys) -> list:
    """Boxes up a column, each fed by the one below: steps are (text, kind, shape)."""
    boxes = []
    for (text, kind, shape), y in zip(steps, ys, strict=True):
        small = text == "+"
        boxes.append(box(axes, x, y, text, kind, shape=shape, width=0.32 if small else 1.9,
                         height=0.32 if small else (0.5 if shape else 0.34), fontsize=9))
        if len(boxes) > 1:
            arrow(axes, boxes[-2].top, boxes[-1].bottom)
    return boxes


def _residual(axes, below, plus, side: float) -> None:
    """The residual path: from under ``below`` (a LayerNorm) round to the ``+`` box."""
    tap = (plus.x, below.bottom[1] - 0.14)
    arrow(axes, tap, (side, tap[1]), head=False)
    arrow(axes, (side, tap[1]), (side, plus.y), head=False)
    arrow(axes, (side, plus.y), plus.left if side < plus.x else plus.right)


def plot_transformer() -> Figure:
    """The pre-LN encoder-decoder Transformer: two blocks side by side, residuals drawn."""
    figure, axes = canvas(7.3, 9.3)
    norm = ("LayerNorm", "learned", None)
    plus = ("+", "operation", None)
    encoder = _stack(axes, 1.75, [
        ("input tokens", "tensor", "(B, S)"), ("embed + position", "learned", "(B, S, D)"),
        norm, ("self-attention, H heads", "learned", None), plus, norm,
        ("feed-forward", "learned", None), plus, norm, ("memory", "tensor", "(B, S, D)")],
        [0.75, 1.45, 2.2, 2.75, 3.3, 3.85, 4.4, 4.95, 5.7, 6.4])
    decoder = _stack(axes, 5.2, [
        ("start, $y_0$ ... $y_{T-2}$", "tensor", "(B, T)"),
        ("embed + position", "learned", "(B, T, D)"), norm,
        ("causal self-attention", "learned", None), plus, norm,
        ("cross-attention", "learned", None), plus, norm, ("feed-forward", "learned", None),
        plus, norm, ("Linear", "learned", None), ("logits", "tensor", "(B, T, C)")],
        [0.75, 1.45, 2.2, 2.75, 3.3, 3.85, 4.4, 4.95, 5.5, 6.05, 6.6, 7.3, 7.9, 8.6])
    for start, end in ((2, 4), (5, 7)):
        _residual(axes, encoder[start], encoder[end], 0.55)
    for start, end in ((2, 4), (5, 7), (8, 10)):
        _residual(axes, decoder[start], decoder[end], 6.4)
    frame(axes, 0.35, 1.85, 3.0, 5.35, "EncoderBlock, x 2")
    frame(axes, 3.95, 1.85, 6.6, 7.0, "DecoderBlock, x 2")
    memory = encoder[-1]
    arrow(axes, memory.right, (3.55, memory.y), head=False)
    arrow(axes, (3.55, memory.y), (3.55, decoder[6].y), head=False)
    arrow(axes, (3.55, decoder[6].y), decoder[6].left, text="K, V", where=0.1, dy=0.14,
          fontsize=8)
    label(axes, 1.75, 7.0, "pre-LN: x + f(LayerNorm(x)),\nand a LayerNorm after the stack",
          fontsize=8)
    label(axes, 1.75, 7.75, "padding is masked in every\nattention over the input",
          fontsize=8)
    label(axes, 5.2, 0.28, "teacher forcing: all T steps at once;\ngreedy: one step per pass",
          fontsize=8)
    legend(axes, 0.3, 9.05, step=2.4)
    return figure


@recipe("sdpa_diagram", "scaled dot-product attention as a data flow, with shapes",
        chapter="qkv")
def sdpa_diagram() -> Figure:
    return plot_scaled_dot_product()


@recipe("counting_diagram", "the counting model: learned queries read the embedded tokens",
        chapter="qkv")
def counting_diagram() -> Figure:
    return plot_counting_model()


@recipe("multihead_diagram", "multi-head attention: split into heads, attend, merge",
        chapter="self-attention")
def multihead_diagram() -> Figure:
    return plot_multihead()


@recipe("signal_diagram", "the signal model and its encoder layer, as the code builds it",
        chapter="positional-encoding")
def signal_diagram() -> Figure:
    return plot_signal_model()


@recipe("transformer_diagram", "the pre-LN encoder-decoder Transformer, as the code builds it",
        chapter="transformer")
def transformer_diagram() -> Figure:
    return plot_transformer()
