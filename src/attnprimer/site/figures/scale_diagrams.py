"""The diagram of the chapter "Attention at scale": tiled attention's forward pass, with shapes.

Drawn from the code the chapter shows,
[`tiled_forward`][attnprimer.tiled.tiled_forward] with
[`online_step`][attnprimer.online_softmax.online_step] and
[`finish`][attnprimer.online_softmax.finish]: for one block of queries, a loop over the blocks
of keys and values that carries three running statistics and holds one block of scores at a
time. No trained model is needed.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from attnprimer.site.figures.diagrams import arrow, box, canvas, frame, label, legend
from attnprimer.site.figures.recipes import recipe

__all__ = ["plot_tiled_attention"]


def plot_tiled_attention() -> Figure:
    """One query block's pass over the key blocks, left to right, with every tensor's shape."""
    figure, axes = canvas(7.3, 4.1)
    query = box(axes, 0.55, 2.75, "$Q_i$", shape="($B_q$, $D_h$)", width=0.8, height=0.5)
    key = box(axes, 0.55, 1.75, "$K_j$", shape="($B_k$, $D_h$)", width=0.8, height=0.5)
    value = box(axes, 0.55, 0.85, "$V_j$", shape="($B_k$, $D_v$)", width=0.8, height=0.5)
    label(axes, 0.55, 3.45, "query block i\nof L / $B_q$", fontsize=8)
    frame(axes, 1.2, 0.45, 5.2, 3.75, "for each key block j (skipped if the mask removes it)")
    scores = box(axes, 1.9, 2.25, "$Q_i K_j^\\top \\times$ scale", "operation",
                 shape="($B_q$, $B_k$)", width=1.05, height=0.55, fontsize=9)
    masked = box(axes, 3.0, 2.25, "mask inside", "operation", shape="the block",
                 width=0.85, height=0.55, fontsize=9)
    step = box(axes, 4.35, 2.25, "online step:\nnew max m,\nrescale s and t,\nadd this block",
               "operation", width=1.25, height=1.0, fontsize=8)
    running = box(axes, 4.35, 0.95, "m, s, t", shape="($B_q$, 1), ($B_q$, 1), ($B_q$, $D_v$)",
                  width=1.6, height=0.5)
    finish = box(axes, 6.4, 2.25, "finish:\n$O_i = t / s$\nlse$_i = m + \\log s$",
                 "operation", width=1.2, height=0.8, fontsize=8)
    output = box(axes, 6.4, 3.45, "$O_i$, lse$_i$", shape="($B_q$, $D_v$), ($B_q$)",
                 width=1.2, height=0.5)
    arrow(axes, query.right, scores.at("left", 0.12))
    arrow(axes, key.right, scores.at("left", -0.12))
    arrow(axes, scores.right, masked.left)
    arrow(axes, masked.right, step.left)
    arrow(axes, value.right, step.at("bottom", -0.45), bend=0.25)
    arrow(axes, step.at("bottom", 0.2), running.at("top", 0.2))
    arrow(axes, running.at("top", -0.2), step.at("bottom", -0.2))
    label(axes, 4.6, 1.5, "carried to the\nnext block", fontsize=8, ha="left")
    arrow(axes, step.right, finish.left)
    label(axes, 5.4, 2.85, "after the\nlast block", fontsize=8)
    arrow(axes, finish.top, output.bottom)
    label(axes, 6.4, 1.3, "lse$_i$ is saved:\nthe backward pass\nrecomputes each\n"
          "block's weights\nfrom it", fontsize=8)
    label(axes, 3.2, 3.15, "held at once: one ($B_q$, $B_k$) block of scores, never (L, S)",
          fontsize=8)
    legend(axes, 0.3, 0.2, kinds=("tensor", "operation"), step=1.6)
    return figure


@recipe("tiled_diagram", "tiled attention's forward pass for one query block, as the code does it",
        chapter="attention-at-scale")
def tiled_diagram() -> Figure:
    return plot_tiled_attention()
