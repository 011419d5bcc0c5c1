"""The dark twin of a figure: neutral colours turned over, data colours kept and readable."""

from __future__ import annotations

import pytest
import torch
from matplotlib.colors import to_hex, to_rgb, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from attnprimer.site.figures import plot_attention, save_figure
from attnprimer.site.figures.plotting import BLUE, GREEN, GREY, ORANGE
from attnprimer.site.figures.theme import (
    DARK_BACKGROUND,
    DARK_INK,
    DARK_TWINS,
    dark_colour,
    to_dark,
)

SERIES = (BLUE, ORANGE, GREEN, GREY, "#CC79A7", "#56B4E9")
"""Every colour the plots give a series (plotting.py's palette and the two extra ones)."""


def contrast(one, two) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""

    def luminance(colour) -> float:
        channels = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
                    for c in to_rgb(colour)]
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    high, low = sorted([luminance(one), luminance(two)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def hex_of(colour) -> str:
    return to_hex(colour, keep_alpha=False)


# --- dark_colour -----------------------------------------------------------------------------


def test_white_becomes_the_dark_background_and_black_the_dark_ink():
    assert hex_of(dark_colour("white")) == DARK_BACKGROUND
    assert hex_of(dark_colour("black")) == DARK_INK
    assert contrast(dark_colour("#fefefe"), DARK_BACKGROUND) < 1.05  # near-white too


def test_greys_turn_over_in_order():
    greys = ["#000000", "#444444", "#777777", "#b0b0b0", "#eeeeee", "#ffffff"]
    lightness = [sum(to_rgb(dark_colour(grey))) for grey in greys]
    assert lightness == sorted(lightness, reverse=True)  # darker in, lighter out


@pytest.mark.parametrize("colour", [ORANGE, GREEN, "#CC79A7", "#440154", "#ff0000"])
def test_data_colours_are_kept(colour):
    assert hex_of(dark_colour(colour)) == hex_of(colour)


def test_a_colour_with_a_twin_becomes_the_twin_and_alpha_is_kept():
    assert DARK_TWINS  # else this test proves nothing
    for colour, twin in DARK_TWINS.items():
        assert hex_of(dark_colour(colour)) == twin
        assert dark_colour(to_rgba(colour, 0.3))[3] == 0.3
    assert dark_colour((0.5, 0.5, 0.5, 0.2))[3] == 0.2


def test_the_ink_and_every_series_colour_read_on_the_dark_page():
    # WCAG 2: 4.5 for text, 3 for the parts of a graphic one must see (1.4.11).
    assert contrast(DARK_INK, DARK_BACKGROUND) >= 4.5
    assert contrast(dark_colour(GREY), DARK_BACKGROUND) >= 4.5  # notes are written in GREY
    for colour in SERIES:
        assert contrast(dark_colour(colour), DARK_BACKGROUND) >= 3, colour


def test_twins_read_better_than_the_colour_they_replace():
    for colour, twin in DARK_TWINS.items():
        assert contrast(twin, DARK_BACKGROUND) > contrast(colour, DARK_BACKGROUND) + 1


# --- to_dark ---------------------------------------------------------------------------------


def _heatmap() -> Figure:
    weights = torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    return plot_attention(weights, ["q0", "q1"], ["k0", "k1"], title="t")


def test_to_dark_turns_labels_ticks_and_background_over():
    figure = to_dark(_heatmap())
    axes = figure.axes[0]
    assert hex_of(figure.patch.get_facecolor()) == DARK_BACKGROUND
    for text in [axes.xaxis.label, axes.yaxis.label, axes.title,
                 *axes.get_xticklabels(), *axes.get_yticklabels()]:
        assert hex_of(text.get_color()) == DARK_INK, text.get_text()
    assert all(hex_of(line.get_color()) == DARK_INK for line in axes.xaxis.get_ticklines())
    colorbar = figure.axes[1]
    assert hex_of(colorbar.yaxis.label.get_color()) == DARK_INK


def test_to_dark_leaves_the_heatmap_and_the_weights_printed_on_it():
    light = _heatmap()
    before = [(text.get_text(), hex_of(text.get_color())) for text in light.axes[0].texts]
    cmap = light.axes[0].images[0].get_cmap().name
    dark = to_dark(light)
    after = [(text.get_text(), hex_of(text.get_color())) for text in dark.axes[0].texts]
    assert after == before
    assert {colour for _, colour in before} == {"#000000", "#ffffff"}  # both kinds were there
    assert dark.axes[0].images[0].get_cmap().name == cmap


def test_to_dark_recolours_series_legends_and_fills():
    figure = Figure()
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color=BLUE, label="blue")
    axes.plot([0, 1], [1, 0], color=ORANGE, label="orange")
    axes.fill_between([0, 1], [0, 0], [1, 1], color=GREY, alpha=0.2)
    axes.legend()
    axes.grid()
    to_dark(figure)
    blue, orange = axes.get_lines()
    assert hex_of(blue.get_color()) == DARK_TWINS[BLUE.lower()]
    assert hex_of(orange.get_color()) == hex_of(ORANGE)
    assert [hex_of(text.get_color()) for text in axes.get_legend().get_texts()] == [DARK_INK] * 2
    assert hex_of(axes.get_legend().get_frame().get_facecolor()) == DARK_BACKGROUND
    fill = axes.collections[0]
    assert hex_of(fill.get_facecolors()[0]) == hex_of(dark_colour(GREY))
    assert fill.get_facecolors()[0][3] == pytest.approx(0.2)
    assert hex_of(axes.spines["left"].get_edgecolor()) == DARK_INK


def test_to_dark_keeps_colormapped_points_and_text_on_a_coloured_box():
    figure = Figure()
    axes = figure.add_subplot()
    points = axes.scatter([0, 1, 2], [0, 1, 2], c=[0.0, 0.5, 1.0], cmap="viridis")
    axes.add_patch(Rectangle((0.2, 0.2), 0.6, 0.6, facecolor=ORANGE))
    inside = axes.text(0.5, 0.5, "on the box", color="black", ha="center")
    outside = axes.text(1.5, 0.2, "beside it", color="black")
    axes.set_xlim(0, 2)
    axes.set_ylim(0, 2)
    figure.draw_without_rendering()  # the colormap colours the points when drawn
    colours = points.get_facecolors().copy()
    to_dark(figure)
    assert (points.get_facecolors() == colours).all()
    assert hex_of(inside.get_color()) == "#000000"
    assert hex_of(outside.get_color()) == DARK_INK


def test_a_dark_twin_saves_byte_identically(tmp_path):
    first = save_figure(to_dark(_heatmap()), tmp_path / "a.svg", background=DARK_BACKGROUND)
    second = save_figure(to_dark(_heatmap()), tmp_path / "b.svg", background=DARK_BACKGROUND)
    assert first.read_bytes() == second.read_bytes()
    light = save_figure(_heatmap(), tmp_path / "light.svg")
    assert light.read_bytes() != first.read_bytes()
    assert DARK_BACKGROUND in first.read_text() and DARK_BACKGROUND not in light.read_text()
