"""Drawing primitives of the architecture diagrams: boxes, arrows, labels and one palette.

Every diagram on the site is drawn by code when the site is built, from these few pieces and
one visual vocabulary, the same on every page:

* a **tensor** is a rounded box tinted blue, with its shape under its name;
* a **layer with learned weights** is a square box tinted green;
* an **operation without weights** (a product, a softmax, a sum) is a square box tinted orange;
* arrows carry tensors from left to right or from bottom to top.

Text, lines and box edges are drawn in the neutral ``INK`` of
[`plotting`][attnprimer.site.figures.plotting]
and fills are palette colours at a low opacity, so a dark rendering that maps the neutral
colours maps the diagrams too. A canvas is measured in inches: a box 0.5 wide is 0.5 inches
wide on every diagram, and a 10-point label is the same size everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from attnprimer.site.figures.plotting import BLUE, GREEN, INK, ORANGE

__all__ = ["KINDS", "Box", "arrow", "box", "canvas", "frame", "label", "legend", "texts"]

KINDS = {"tensor": BLUE, "learned": GREEN, "operation": ORANGE}
"""The fill colour of each kind of box."""
_KIND_NAMES = {"tensor": "tensor (shape)", "learned": "layer with learned weights",
               "operation": "operation without weights"}
TINT = 0.2  # the opacity of a box's fill: dark enough to see, light enough for ink on top


@dataclass(frozen=True)
class Box:
    """Where a box was drawn: its centre and size, in inches."""

    x: float
    y: float
    width: float
    height: float

    @property
    def top(self) -> tuple[float, float]:
        return self.x, self.y + self.height / 2

    @property
    def bottom(self) -> tuple[float, float]:
        return self.x, self.y - self.height / 2

    @property
    def left(self) -> tuple[float, float]:
        return self.x - self.width / 2, self.y

    @property
    def right(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y

    def at(self, side: str, offset: float = 0.0) -> tuple[float, float]:
        """A point on one side, moved ``offset`` inches along it (right or up)."""
        x, y = getattr(self, side)
        return (x + offset, y) if side in ("top", "bottom") else (x, y + offset)


def canvas(width: float, height: float) -> tuple[Figure, Axes]:
    """A blank figure ``width`` x ``height`` inches whose data coordinates are inches."""
    figure = Figure(figsize=(width, height))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.set_axis_off()
    return figure, axes


def box(axes: Axes, x: float, y: float, text: str, kind: str = "tensor", *,
        shape: str | None = None, width: float = 0.7, height: float = 0.42,
        fontsize: float = 10, fill: str | None = None) -> Box:
    """A box centred on (x, y) holding ``text``, and ``shape`` under it in smaller type.

    ``kind`` picks the fill and the corners (see [`KINDS`][attnprimer.site.figures.diagrams.KINDS]);
    ``fill`` overrides the colour (a head of its own, say).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    style = "round,pad=0,rounding_size=0.08" if kind == "tensor" else "square,pad=0"
    for face, edge, alpha in ((fill or KINDS[kind], "none", TINT), ("none", INK, 1.0)):
        axes.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                      boxstyle=style, facecolor=face, edgecolor=edge,
                                      alpha=alpha if face != "none" else None, lw=1.0))
    if shape is None:
        axes.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=INK)
    else:
        axes.text(x, y + 0.08, text, ha="center", va="center", fontsize=fontsize, color=INK)
        axes.text(x, y - 0.11, shape, ha="center", va="center", fontsize=fontsize - 2,
                  color=INK)
    return Box(x, y, width, height)


def arrow(axes: Axes, start: tuple[float, float], end: tuple[float, float], *,
          lw: float = 1.0, colour: str = INK, bend: float = 0.0, head: bool = True,
          text: str | None = None, where: float = 0.5, dx: float = 0.06, dy: float = 0.0,
          ha: str = "left", fontsize: float = 9, **style) -> FancyArrowPatch:
    """An arrow from ``start`` to ``end`` (curved by ``bend``), labelled ``text`` beside it.

    The label sits at the fraction ``where`` of the way, moved by (dx, dy) inches.
    """
    patch = FancyArrowPatch(start, end, arrowstyle="-|>" if head else "-", lw=lw, color=colour,
                            mutation_scale=7 + lw if head else 1,
                            connectionstyle=f"arc3,rad={bend}", shrinkA=0, shrinkB=0, **style)
    axes.add_patch(patch)
    if text:
        x = start[0] + where * (end[0] - start[0]) + dx
        y = start[1] + where * (end[1] - start[1]) + dy
        axes.text(x, y, text, ha=ha, va="center", fontsize=fontsize, color=INK)
    return patch


def label(axes: Axes, x: float, y: float, text: str, *, fontsize: float = 9,
          ha: str = "center", va: str = "center", **style):
    """Plain text at (x, y) in ink."""
    return axes.text(x, y, text, ha=ha, va=va, fontsize=fontsize, color=INK, **style)


def frame(axes: Axes, left: float, bottom: float, right: float, top: float, title: str, *,
          fontsize: float = 9) -> None:
    """A dashed frame around a group of boxes, titled at its top left."""
    axes.add_patch(Rectangle((left, bottom), right - left, top - bottom, fill=False,
                             edgecolor=INK, lw=0.8, ls=(0, (4, 3))))
    axes.text(left + 0.06, top - 0.06, title, ha="left", va="top", fontsize=fontsize,
              color=INK, style="italic")


def legend(axes: Axes, x: float, y: float, kinds: tuple[str, ...] = tuple(KINDS), *,
           step: float = 2.0) -> None:
    """A row of sample boxes naming each kind, starting at (x, y)."""
    for index, kind in enumerate(kinds):
        left = x + index * step
        box(axes, left + 0.12, y, "", kind, width=0.24, height=0.16)
        label(axes, left + 0.3, y, _KIND_NAMES[kind], fontsize=8, ha="left")


def texts(figure: Figure) -> list[str]:
    """Every string a figure draws, in drawing order: what its tests read."""
    return [text.get_text() for axes in figure.axes for text in axes.texts
            if text.get_text()] + [text.get_text() for text in figure.texts]
