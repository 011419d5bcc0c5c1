"""The dark twin of a figure: the same drawing, in the colours of the site's dark page.

The site has a light and a dark scheme (Material's ``default`` and ``slate``). Every figure
is saved twice from the one ``Figure`` a recipe built, so nothing is computed again:
first as drawn, then after [`to_dark`][attnprimer.site.figures.theme.to_dark] recoloured it in
place. The pages show the rendering that matches the reader's scheme.

What changes is the *ink*, the neutral colours (white, black and greys: background, text,
axes, ticks, grids, legend frames), by [`dark_colour`][attnprimer.site.figures.theme.dark_colour]:
lightness is turned over, so black text becomes the page's light text and a white
background the page's dark one, and a mid grey stays a mid grey. The *data* keeps its
colours: heatmap images, anything coloured through a colormap (and its colorbar), and the
series colours, except for the one too dark to read on the dark page, which gets a lighter
twin ([`DARK_TWINS`][attnprimer.site.figures.theme.DARK_TWINS]). Text or an arrow drawn *on* the
data (a weight printed in a heatmap cell, a label inside a coloured box) keeps its colour
too: it was chosen against the data under it, which does not change.
"""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.collections import Collection
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch
from matplotlib.text import Text

__all__ = ["DARK_BACKGROUND", "DARK_INK", "DARK_TWINS", "dark_colour", "to_dark"]

DARK_BACKGROUND = "#1e2129"
"""The dark page's background: Material's slate, ``hsl(225deg 15% 14%)``."""

DARK_INK = "#bfc1c7"
"""The dark page's text colour: ``hsla(225deg, 15%, 90%, 0.82)`` over that background."""

DARK_TWINS = {"#0072b2": "#3a9ce0"}
"""Series colours too dark for the dark page, and the lighter twin drawn there instead.

Okabe-Ito's blue has a contrast of 3.1 with the dark background; its twin, 5.4, and stays
apart from the palette's sky blue (``#56b4e9``).
"""

_GREY_GAMMA = 0.6
"""Below 1, the greys between black and white turn over to lighter greys than a straight line."""

_WHITE = 0.96
"""A grey at least this light is a white (a background): it becomes the dark background."""

_NEUTRAL = 0.06
"""A colour whose channels differ by at most this much is a grey (ink, not data)."""


def dark_colour(colour) -> tuple[float, float, float, float]:
    """The colour to draw ``colour`` with on the dark page, as RGBA.

    A grey of lightness ``v`` (0 black, 1 white) becomes a mix of
    [`DARK_BACKGROUND`][attnprimer.site.figures.theme.DARK_BACKGROUND] and
    [`DARK_INK`][attnprimer.site.figures.theme.DARK_INK], ``(1 - v) ** 0.6`` of the way to the
    ink: black is the ink, white (and near-white) the background, and the greys in between
    come out a little lighter than a straight turn-over would make them, so that the mid grey
    the plots write notes in (``#777777``) reads as text on the dark page as it does on the
    light one. A series colour becomes its twin if it has one; any other colour, and the alpha,
    are kept.

    Examples:
        >>> to_hex(dark_colour("white")), to_hex(dark_colour("black"))
        ('#1e2129', '#bfc1c7')
        >>> to_hex(dark_colour("#e69f00"))  # a data colour that reads on both pages
        '#e69f00'
        >>> dark_colour((0.0, 0.0, 0.0, 0.25))[3]  # the alpha is kept
        0.25
    """
    red, green, blue, alpha = to_rgba(colour)
    if max(red, green, blue) - min(red, green, blue) <= _NEUTRAL:
        lightness = (red + green + blue) / 3
        darkness = 0.0 if lightness >= _WHITE else (1 - lightness) ** _GREY_GAMMA
        ink = np.asarray(to_rgba(DARK_INK)[:3])
        background = np.asarray(to_rgba(DARK_BACKGROUND)[:3])
        mixed = background + darkness * (ink - background)
        return (*(float(channel) for channel in mixed), alpha)
    twin = DARK_TWINS.get(to_hex((red, green, blue)))
    if twin is not None:
        return (*to_rgba(twin)[:3], alpha)
    return (red, green, blue, alpha)


def to_dark(figure: Figure) -> Figure:
    """Recolour ``figure`` in place for the dark page (see the module's description); returns it.

    What lies on the data is found from where a drawing puts everything (the figure is laid
    out once more, at its own resolution, without rendering anything).

    Examples:
        >>> from attnprimer.site.figures.plotting import plot_attention
        >>> import torch
        >>> figure = plot_attention(torch.eye(2), ["a", "b"], ["c", "d"])
        >>> axes = to_dark(figure).axes[0]
        >>> to_hex(axes.xaxis.label.get_color()), to_hex(axes.texts[0].get_color())
        ('#bfc1c7', '#ffffff')
    """
    figure.draw_without_rendering()  # a save at another dpi leaves pixel positions stale
    backgrounds = _data_areas(figure)
    seen: set[int] = set()
    for artist in figure.findobj(include_self=False):
        if id(artist) in seen or _on_data(artist, backgrounds):
            continue
        seen.add(id(artist))
        if isinstance(artist, Text):
            artist.set_color(dark_colour(artist.get_color()))
        elif isinstance(artist, Line2D):
            artist.set_color(dark_colour(artist.get_color()))
            artist.set_markerfacecolor(dark_colour(artist.get_markerfacecolor()))
            artist.set_markeredgecolor(dark_colour(artist.get_markeredgecolor()))
        elif isinstance(artist, Patch):
            artist.set_facecolor(dark_colour(artist.get_facecolor()))
            artist.set_edgecolor(dark_colour(artist.get_edgecolor()))
        elif isinstance(artist, Collection) and artist.get_array() is None:  # no colormap
            if len(artist.get_facecolors()):
                artist.set_facecolors([dark_colour(colour) for colour in artist.get_facecolors()])
            if len(artist.get_edgecolors()):
                artist.set_edgecolors([dark_colour(colour) for colour in artist.get_edgecolors()])
    figure.patch.set_facecolor(DARK_BACKGROUND)  # however the figure was filled
    return figure


def _data_areas(figure: Figure) -> list[Artist]:
    """What text and arrows may be drawn on: images, and patches filled with a data colour."""
    areas: list[Artist] = []
    for artist in figure.findobj(include_self=False):
        if isinstance(artist, AxesImage):
            areas.append(artist)
        elif isinstance(artist, Patch) and artist.get_visible():
            red, green, blue, alpha = artist.get_facecolor()
            if alpha > 0.5 and max(red, green, blue) - min(red, green, blue) > _NEUTRAL:
                areas.append(artist)
    return areas


def _on_data(artist: Artist, areas: list[Artist]) -> bool:
    """Whether ``artist`` is text or an arrow whose anchor lies inside one of the data ``areas``.

    Inside by more than a pixel: a tick label anchored on an image's edge is not on it.
    """
    if isinstance(artist, Text):
        x, y = artist.get_transform().transform(artist.get_position())
    elif isinstance(artist, FancyArrowPatch):
        extent = artist.get_window_extent()
        x, y = (extent.x0 + extent.x1) / 2, (extent.y0 + extent.y1) / 2
    else:
        return False
    for area in areas:
        if area is artist:
            continue
        extent = area.get_window_extent()
        inside = extent.x0 + 1 < x < extent.x1 - 1 and extent.y0 + 1 < y < extent.y1 - 1
        if inside and (isinstance(area, AxesImage) or area.contains_point((x, y))):
            return True
    return False
