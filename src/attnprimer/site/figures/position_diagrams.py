"""The diagram of the chapter "Train short, test long": where each position scheme enters.

Drawn from the code the chapter shows, [`SchemeDecoder`][attnprimer.position_schemes.SchemeDecoder]
and [`SchemeAttention`][attnprimer.position_schemes.SchemeAttention]: one sequence padded on the
left, the embedding (plus the sinusoids, for that scheme alone), and the attention of every
block, where rotary turns the queries and keys and ALiBi or the relative bias add to the
scores. NoPE is the path with none of the three. No trained model is needed.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from attnprimer.site.figures.diagrams import arrow, box, canvas, frame, label, legend
from attnprimer.site.figures.recipes import recipe

__all__ = ["plot_scheme_decoder"]


def plot_scheme_decoder() -> Figure:
    """The decoder-only model of the chapter: the sequence, the embedding, one block's
    attention with the three places a scheme can act, and the output."""
    figure, axes = canvas(7.3, 4.9)
    tokens = box(axes, 1.05, 4.15, "pad  pad  ^  A B C  |  C B A", shape="(B, L)",
                 width=1.9, height=0.5, fontsize=9)
    embed = box(axes, 2.85, 4.15, "embedding", "learned", shape="(B, L, D)", width=1.1,
                height=0.5, fontsize=9)
    sinusoids = box(axes, 4.45, 4.15, "+ sinusoids\n(sinusoidal only)", "operation",
                    width=1.4, height=0.5, fontsize=8)
    arrow(axes, tokens.right, embed.left)
    arrow(axes, embed.right, sinusoids.left)
    legend(axes, 0.25, 4.7, step=2.35)
    frame(axes, 0.2, 0.95, 7.1, 3.55, "EncoderBlock (pre-LN), x 2: its attention is "
          "SchemeAttention")
    norm = box(axes, 0.85, 2.75, "LayerNorm", "learned", width=0.95, fontsize=8)
    project = box(axes, 2.05, 2.75, "$W_q, W_k, W_v$", "learned", shape="q, k, v",
                  width=1.05, height=0.5, fontsize=9)
    rotate = box(axes, 3.45, 2.75, "turn q, k by\nposition\n(rotary only)", "operation",
                 width=1.2, height=0.7, fontsize=8)
    scores = box(axes, 4.85, 2.75, "$q k^\\top / \\sqrt{D_h}$", "operation",
                 shape="(B, H, L, L)", width=1.2, height=0.5, fontsize=9)
    bias = box(axes, 6.3, 2.75, "+ bias per head\nand offset:\nALiBi fixed,\nrelative learned",
               "operation", width=1.35, height=0.9, fontsize=8)
    arrow(axes, (sinusoids.x, sinusoids.bottom[1]), (sinusoids.x, 3.3), head=False)
    arrow(axes, (sinusoids.x, 3.3), (norm.x, 3.3), head=False)
    arrow(axes, (norm.x, 3.3), norm.top)
    for start, end in ((norm, project), (project, rotate), (rotate, scores), (scores, bias)):
        arrow(axes, start.right, end.left)
    softmax = box(axes, 6.3, 1.5, "causal mask,\npadding masked,\nsoftmax", "operation",
                  width=1.35, height=0.7, fontsize=8)
    context = box(axes, 4.45, 1.5, "weights $\\times$ v,\n$W_o$, + x", "learned",
                  width=1.4, height=0.6, fontsize=8)
    rest = box(axes, 2.05, 1.5, "LayerNorm,\nfeed-forward, + x", "learned", width=1.6,
               height=0.6, fontsize=8)
    arrow(axes, bias.bottom, softmax.top)
    arrow(axes, softmax.left, context.right)
    arrow(axes, context.left, rest.right)
    out = box(axes, 2.05, 0.45, "LayerNorm, Linear", "learned", width=1.6, height=0.4,
              fontsize=8)
    logits = box(axes, 4.45, 0.45, "logits", shape="(B, L, C)", width=1.2, height=0.5,
                 fontsize=9)
    arrow(axes, rest.bottom, out.top, text="after the last block", where=0.75, dx=0.08,
          fontsize=8)
    arrow(axes, out.right, logits.left)
    label(axes, 6.1, 0.45, "NoPE: none of the three\nposition boxes", fontsize=8)
    return figure


@recipe("scheme_diagram", "the decoder-only model and where each position scheme acts",
        chapter="length-generalisation")
def scheme_diagram() -> Figure:
    return plot_scheme_decoder()
