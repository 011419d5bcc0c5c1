"""The architecture diagrams: the drawing primitives and every diagram, without a trained model.

A diagram is checked by what it says (the texts it draws) and, for the alignment model, by
the widths of its arrows; never by its pixels.
"""

from __future__ import annotations

import re

import pytest
import torch
from matplotlib.colors import to_hex, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from attnprimer.site.figures import FIGURES
from attnprimer.site.figures.attention_diagrams import (
    plot_counting_model,
    plot_multihead,
    plot_scaled_dot_product,
    plot_signal_model,
)
from attnprimer.site.figures.diagrams import KINDS, arrow, box, canvas, texts
from attnprimer.site.figures.plotting import BLUE, GREEN, INK, ORANGE, PURPLE
from attnprimer.site.figures.rnn_diagrams import plot_alignment_model, plot_encoder_decoder

DIAGRAMS = {
    "rnn-recap/vanilla_diagram": ["encoder", "decoder", "GRU", "Linear\n+ tanh", "$h_2$",
                                  "$s_{-1}$", "$s_{0}$", "start", "end"],  # counted from 0
    "rnn-recap/peeky_diagram": ["$h_2$: one vector (B, H)", "GRU", "$s_{2}$"],
    "bahdanau/attention_diagram": ["attend", "memory: every $h_j$ (B, S, H)", "$s_{t-1}$ asks"],
    "qkv/sdpa_diagram": ["Q", "K", "V", "(L, $D_k$)", "(S, $D_v$)", "$QK^\\top$",
                         "$\\div\\sqrt{D_k}$", "softmax\nover keys", "(L, S)", "context",
                         "(L, $D_v$)"],
    "qkv/counting_diagram": ["tokens", "(B, S)", "one-hot", "keys = values", "(B, S, D)",
                             "queries", "(T, D), from 0", "LayerNorm", "(B, T, C)",
                             "weights (B, T, S)"],
    "self-attention/multihead_diagram": ["$W_q$", "$W_k$", "$W_v$", "$W_o$", "head 1:\nattention",
                                         "head 4:\nattention", "split_heads:\n(B, H, L, $D_h$)",
                                         "merge_heads:\n(B, L, D)", "(B, L, D)"],
    "positional-encoding/signal_diagram": ["EncoderLayer", "readout", "+ position",
                                           "feed-forward", "LayerNorm", "encoded", "(B, S, D)",
                                           "query", "logits (B, 1, C)"],
    "transformer/transformer_diagram": ["EncoderBlock, x 2", "DecoderBlock, x 2", "memory",
                                        "causal self-attention", "cross-attention", "K, V",
                                        "feed-forward", "LayerNorm", "(B, T, C)"],
    "length-generalisation/scheme_diagram": ["pad  pad  ^  A B C  |  C B A", "(B, L)",
                                             "+ sinusoids\n(sinusoidal only)",
                                             "turn q, k by\nposition\n(rotary only)",
                                             "$q k^\\top / \\sqrt{D_h}$", "(B, L, C)"],
    "attention-at-scale/tiled_diagram": ["$Q_i$", "$K_j$", "$V_j$", "($B_q$, $B_k$)", "m, s, t",
                                         "mask inside", "$O_i$, lse$_i$"],
}
MODULES = {"attnprimer.site.figures.rnn_diagrams", "attnprimer.site.figures.attention_diagrams",
           "attnprimer.site.figures.scale_diagrams", "attnprimer.site.figures.position_diagrams"}
LEGEND = {"attention-at-scale/tiled_diagram": "tensor (shape)"}
"""The legend entry a diagram must show, when not the learned layers (it draws none)."""


PALETTE = {to_hex(colour) for colour in (*KINDS.values(), BLUE, GREEN, ORANGE, PURPLE)}


@pytest.fixture(scope="module")
def drawn() -> dict[str, Figure]:
    return {key: FIGURES[key].build() for key in DIAGRAMS}


def test_every_model_free_diagram_is_registered_for_its_chapter():
    assert {key for key, entry in FIGURES.items() if entry.module in MODULES} == set(DIAGRAMS)


@pytest.mark.parametrize("key", DIAGRAMS)
def test_every_diagram_renders_with_its_labels(drawn, key):
    figure = drawn[key]
    assert isinstance(figure, Figure)
    drawn_texts = texts(figure)
    missing = [text for text in DIAGRAMS[key] if text not in drawn_texts]
    assert not missing, missing
    assert LEGEND.get(key, "layer with learned weights") in drawn_texts  # the box kinds' legend


@pytest.mark.parametrize("key", DIAGRAMS)
def test_every_diagram_is_drawn_in_ink_on_tinted_fills(drawn, key):
    # What a dark rendering maps: text and box edges in the neutral ink, fills palette tints.
    ink = to_hex(INK)
    axes = drawn[key].axes[0]
    assert {to_hex(text.get_color()) for text in axes.texts} == {ink}
    for patch in axes.patches:
        if isinstance(patch, FancyArrowPatch):
            assert to_hex(patch.get_edgecolor()) in PALETTE | {ink}
        elif isinstance(patch, FancyBboxPatch) and patch.get_facecolor()[3] == 0:
            assert to_hex(patch.get_edgecolor()) == ink  # a box's outline
        elif isinstance(patch, FancyBboxPatch):
            assert to_hex(patch.get_facecolor()) in PALETTE  # a box's tint
            assert patch.get_facecolor()[3] < 0.5


@pytest.mark.parametrize("key", DIAGRAMS)
def test_every_diagram_fits_the_page_column(drawn, key):
    width, _ = drawn[key].get_size_inches()
    assert width <= 7.3  # inches at 96 px each: the 700-pixel column at 1280 px, unscaled


def test_the_three_decoders_differ_only_in_what_they_read():
    vanilla, peeky, attention = (set(texts(plot_encoder_decoder(kind)))
                                 for kind in ("vanilla", "peeky", "attention"))
    assert vanilla <= peeky | {text for text in vanilla if text.startswith("vanilla")}
    assert "attend" in attention and "attend" not in peeky | vanilla
    assert not any("one vector" in text for text in vanilla | attention)


def test_an_unknown_decoder_is_refused():
    with pytest.raises(ValueError, match="vanilla, peeky, attention"):
        plot_encoder_decoder("transformer")


def _widths(figure: Figure) -> dict[tuple[int, int], float]:
    widths = {}
    for patch in figure.axes[0].patches:
        match = re.fullmatch(r"step (\d+) state (\d+)", patch.get_label())
        if match:
            key = (int(match[1]), int(match[2]))
            widths[key] = max(widths.get(key, 0.0), patch.get_linewidth())
    return widths


def test_the_alignment_arrows_are_as_wide_as_the_weights():
    weights = torch.softmax(torch.randn(5, 4, generator=torch.Generator().manual_seed(0)) * 3, -1)
    figure = plot_alignment_model(weights, "ABCD", ["D", "C", "B", "A", "end"], step=2)
    widths = _widths(figure)
    for step in range(5):
        row = {j: widths[step, j] for j in range(4) if (step, j) in widths}
        assert max(row, key=row.get) == int(weights[step].argmax())
        order = sorted(row, key=row.get)  # wider arrow, larger weight, everywhere
        assert [float(weights[step, j]) for j in order] == sorted(float(weights[step, j])
                                                                  for j in order)
    assert "read by step 2,\nwhich writes B" in texts(figure)


def test_the_alignment_diagram_refuses_weights_that_do_not_match_the_letters():
    with pytest.raises(ValueError, match=r"\(T, S\) = \(2, 3\)"):
        plot_alignment_model(torch.ones(3, 3) / 3, "ABC", ["x", "y"])


def test_box_refuses_an_unknown_kind_and_anchors_its_sides():
    _, axes = canvas(2, 1)
    drawn = box(axes, 1.0, 0.5, "x", width=0.6, height=0.4)
    assert drawn.left == (0.7, 0.5) and drawn.top == (1.0, 0.7)
    assert drawn.at("bottom", 0.1) == (1.1, 0.3)
    with pytest.raises(ValueError, match="tensor, learned, operation"):
        box(axes, 1.0, 0.5, "x", "layer")


def test_arrow_labels_sit_beside_it_in_ink():
    figure, axes = canvas(2, 1)
    patch = arrow(axes, (0.2, 0.5), (1.8, 0.5), text="h", lw=2.0)
    assert patch.get_linewidth() == 2.0
    assert texts(figure) == ["h"]
    assert to_rgba(axes.texts[0].get_color()) == to_rgba(INK)


@pytest.mark.parametrize("plot", [plot_scaled_dot_product, plot_counting_model, plot_multihead,
                                  plot_signal_model])
def test_the_attention_diagrams_name_their_shapes(plot):
    assert any(re.search(r"\([BLST1][^)]*\)", text) for text in texts(plot()))
