"""The pure plot functions, reproducible saving, and the registry of the site's figures.

No test here needs a trained model: recipes that do are exercised by the claims tests
(tests/claims).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import types
from pathlib import Path

import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import attnprimer.site.figures.registry as registry_module
from attnprimer.site.experiments.qkv import kernel_regression_toy, own_letter_mass, score_saturation
from attnprimer.site.figures import (
    FIGURES,
    Recipe,
    plot_attention,
    plot_cosine_vs_dot,
    plot_kernel_regression,
    plot_own_letter_mass,
    plot_score_functions,
    plot_score_scaling,
    plot_task_attention,
    plot_training,
    render_all,
    save_figure,
)
from attnprimer.site.figures.recipes import chapter_of, collect, recipe, render
from attnprimer.tasks import CountingTask
from attnprimer.training.fingerprints import fingerprint
from attnprimer.training.train import TrainConfig, TrainedModel, held_out_generator


def softmax_rows(rows: int, cols: int, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    scores = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * scale
    return scores.softmax(dim=-1)


def colorbar_axes(figure: Figure) -> list[Axes]:
    found = []
    for axes in figure.axes:
        for mappable in [*axes.images, *axes.collections]:
            colorbar = getattr(mappable, "colorbar", None)
            if colorbar is not None and colorbar.ax not in found:
                found.append(colorbar.ax)
    return found


def main_axes(figure: Figure) -> list[Axes]:
    bars = colorbar_axes(figure)
    return [axes for axes in figure.axes if axes not in bars]


def assert_labelled(figure: Figure) -> None:
    """Every plotting area names both of its axes; every colorbar says what it measures.

    Panels that share their y axis with a labelled neighbour (``sharey=True``) count as
    labelled: the label is printed once, on the left.
    """
    assert isinstance(figure, Figure)
    panels = [axes for axes in main_axes(figure) if axes.get_visible()]
    assert panels
    for axes in panels:
        assert axes.get_xlabel().strip(), f"no x label on {axes.get_title()!r}"
        siblings = axes.get_shared_y_axes().get_siblings(axes)
        assert any(other.get_ylabel().strip() for other in siblings), (
            f"no y label on {axes.get_title()!r}"
        )
    for bar in colorbar_axes(figure):
        assert (bar.get_ylabel() or bar.get_xlabel()).strip(), "colorbar without a label"


def images(figure: Figure):
    return [image for axes in main_axes(figure) for image in axes.images]


# --- plot_attention ----------------------------------------------------------------------------


def test_plot_attention_is_a_labelled_figure():
    figure = plot_attention(softmax_rows(2, 3), ["q0", "q1"], ["a", "b", "c"], title="t")
    assert_labelled(figure)
    (axes,) = main_axes(figure)
    assert [label.get_text() for label in axes.get_xticklabels()] == ["a", "b", "c"]
    assert [label.get_text() for label in axes.get_yticklabels()] == ["q0", "q1"]
    assert axes.get_title() == "t"


@pytest.mark.parametrize("scale", [0.01, 1.0, 50.0])
def test_plot_attention_uses_a_fixed_unit_colour_scale(scale):
    # Nearly uniform (max ~ 0.2) or nearly one-hot weights: the scale never adapts.
    weights = softmax_rows(3, 5, scale=scale)
    figure = plot_attention(weights, ["a", "b", "c"], list("vwxyz"))
    (image,) = images(figure)
    assert image.get_clim() == (0.0, 1.0)
    assert image.get_array().shape == (3, 5)
    torch.testing.assert_close(torch.as_tensor(image.get_array().data), weights)


def test_plot_attention_has_a_colorbar():
    figure = plot_attention(softmax_rows(2, 4), ["a", "b"], list("wxyz"))
    (image,) = images(figure)
    assert image.colorbar is not None
    assert len(figure.axes) == 2  # the heatmap and its colorbar
    assert image.colorbar.ax.get_ylabel() == "attention weight"


def test_plot_attention_annotates_each_cell_unless_told_not_to():
    weights = softmax_rows(2, 3)
    annotated = main_axes(plot_attention(weights, ["a", "b"], list("xyz")))[0]
    plain = main_axes(plot_attention(weights, ["a", "b"], list("xyz"), annotate=False))[0]
    assert len(annotated.texts) == 6
    assert len(plain.texts) == 0


def test_plot_attention_accepts_custom_axis_labels():
    axes = main_axes(plot_attention(softmax_rows(1, 2), ["q"], ["k0", "k1"],
                                    xlabel="source", ylabel="target"))[0]
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("source", "target")


@pytest.mark.parametrize(
    "weights, queries, keys",
    [
        (torch.full((2, 3), 1 / 3), ["q0"], ["a", "b", "c"]),  # too few query labels
        (torch.full((2, 3), 1 / 3), ["q0", "q1"], ["a", "b"]),  # too few key labels
        (torch.full((2, 3), 1 / 3), ["q0", "q1", "q2"], ["a", "b", "c"]),  # too many
        (torch.full((3,), 1 / 3), ["q0"], ["a", "b", "c"]),  # not a matrix
        (torch.full((1, 2, 3), 1 / 3), ["q0", "q1"], ["a", "b", "c"]),
    ],
)
def test_plot_attention_rejects_mismatched_labels(weights, queries, keys):
    with pytest.raises(ValueError):
        plot_attention(weights, queries, keys)


# --- plot_task_attention -----------------------------------------------------------------------


def test_plot_task_attention_labels_tokens_and_predictions():
    task = CountingTask(max_len=5, vocab_size=3)
    tokens = task.encode("AC B")
    figure = plot_task_attention(task, tokens, torch.tensor([1, 1, 1]), softmax_rows(3, 5))
    assert_labelled(figure)
    (axes,) = main_axes(figure)
    keys = [label.get_text() for label in axes.get_xticklabels()]
    assert [key.split("\n") for key in keys] == [
        ["A", "0"], ["C", "1"], ["_", "2"], ["B", "3"], ["_", "4"]
    ]
    queries = [label.get_text() for label in axes.get_yticklabels()]
    assert queries == ["A = 1", "B = 1", "C = 1"]
    assert images(figure)[0].get_clim() == (0.0, 1.0)


def test_plot_task_attention_rejects_a_prediction_of_the_wrong_length():
    task = CountingTask(max_len=5, vocab_size=3)
    with pytest.raises(ValueError):
        plot_task_attention(task, task.encode("ABC"), torch.tensor([1, 1]), softmax_rows(3, 5))


# --- the other plots ---------------------------------------------------------------------------


def test_plot_cosine_vs_dot_is_labelled():
    figure = plot_cosine_vs_dot(samples=60, dim=16)
    assert_labelled(figure)
    assert len(main_axes(figure)) == 2
    for axes in main_axes(figure):
        (points, *_) = axes.collections
        assert len(points.get_offsets()) == 60
        cosines = points.get_offsets()[:, 0]
        assert cosines.min() >= -1 - 1e-9 and cosines.max() <= 1 + 1e-9


def test_plot_cosine_vs_dot_equal_lengths_panel_is_a_straight_line():
    dim = 16
    left = main_axes(plot_cosine_vs_dot(samples=60, dim=dim))[0]
    cosine, dot = left.collections[0].get_offsets().T
    # Every vector has length sqrt(dim), so the dot product is dim times the cosine.
    torch.testing.assert_close(torch.as_tensor(dot), torch.as_tensor(cosine) * dim)


def test_plot_score_scaling_is_labelled():
    figure = plot_score_scaling(score_saturation(dims=(2, 8, 32), keys=4, trials=40))
    assert_labelled(figure)
    left, _, right = main_axes(figure)
    spread = {line.get_label(): line.get_ydata() for line in left.get_lines()}
    scaled = spread["q · k / √Dk"]
    unscaled = spread["q · k"]
    # Unscaled spread grows with the dimension; scaled stays near 1.
    assert unscaled[-1] > 2 * unscaled[0]
    assert all(0.6 < value < 1.4 for value in scaled)
    assert right.get_yscale() == "log"


def test_plot_kernel_regression_is_labelled():
    toy = kernel_regression_toy(samples=12, points=30)
    figure = plot_kernel_regression(toy)
    assert_labelled(figure)
    curves, *heatmaps = main_axes(figure)
    assert len(heatmaps) == len(toy.widths) == len(images(figure))
    assert len(curves.get_lines()) == 1 + len(toy.widths)  # the function, one estimate each


def test_plot_score_functions_is_labelled_on_a_fixed_scale():
    figure = plot_score_functions()
    assert_labelled(figure)
    assert len(images(figure)) == 3
    for image in images(figure):
        assert image.get_clim() == (0, 1)
        torch.testing.assert_close(torch.as_tensor(image.get_array().data).sum(dim=-1),
                                   torch.ones(3))


def test_plot_score_functions_leaves_the_global_generator_alone():
    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    plot_score_functions()
    assert torch.equal(torch.rand(4), expected)


def _history(steps: int = 50) -> dict[str, list[float]]:
    return {
        "step": list(range(1, steps + 1)),
        "loss": [2.0 / step**0.5 for step in range(1, steps + 1)],
        "held_out_step": list(range(10, steps + 1, 10)),
        "held_out_exact_match": [step / steps for step in range(10, steps + 1, 10)],
    }


def test_plot_training_is_labelled():
    figure = plot_training(_history(), title="seed 0")
    assert_labelled(figure)
    left, right = main_axes(figure)
    assert left.get_yscale() == "log"
    assert list(right.get_lines()[0].get_xdata()) == [10, 20, 30, 40, 50]


def test_plot_training_with_a_very_short_history():
    assert_labelled(plot_training(_history(steps=10)))


def _untrained(task: CountingTask) -> TrainedModel:
    torch.manual_seed(0)
    return TrainedModel(task, TrainConfig(steps=1), task.build_model().eval())


def test_own_letter_mass_counts_letters_and_weighs_them():
    task = CountingTask(max_len=8, vocab_size=3, hidden=8)
    counts, mass = own_letter_mass(_untrained(task), samples=200, seed=4)
    batch = task.sample(200, held_out_generator(4))
    assert torch.equal(counts, batch.targets)  # the counts are the letter counts
    # An untrained model attends uniformly: the weight on a letter is its share of the input.
    torch.testing.assert_close(mass, counts / task.max_len)


def test_plot_own_letter_mass_is_labelled():
    task = CountingTask(max_len=8, vocab_size=3, hidden=8)
    counts, mass = own_letter_mass(_untrained(task), samples=100)
    figure = plot_own_letter_mass(counts, mass, task.max_len)
    assert_labelled(figure)
    (axes,) = main_axes(figure)
    assert len(axes.collections[0].get_offsets()) == counts.numel()


# --- saving ------------------------------------------------------------------------------------


def _attention_figure() -> Figure:
    task = CountingTask()
    tokens = task.encode("AACCB CCCB")
    return plot_task_attention(task, tokens, torch.tensor([2, 2, 5]), softmax_rows(3, 10, seed=1))


@pytest.mark.parametrize("build", [_attention_figure, lambda: plot_cosine_vs_dot(samples=30),
                                   lambda: plot_training(_history())])
def test_save_figure_svg_is_byte_identical_for_identical_inputs(tmp_path, build):
    first = save_figure(build(), tmp_path / "a" / "first.svg")
    second = save_figure(build(), tmp_path / "b" / "second.svg")
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes().lstrip().startswith(b"<?xml")


def test_save_figure_svg_has_no_timestamp(tmp_path):
    svg = save_figure(_attention_figure(), tmp_path / "figure.svg").read_text()
    assert "<dc:date>" not in svg


def test_save_figure_differs_for_different_inputs(tmp_path):
    # The byte-identity above is not because every file is the same.
    task = CountingTask()
    tokens = task.encode("AACCB CCCB")
    one = plot_task_attention(task, tokens, torch.tensor([2, 2, 5]), softmax_rows(3, 10, seed=1))
    two = plot_task_attention(task, tokens, torch.tensor([2, 2, 5]), softmax_rows(3, 10, seed=2))
    assert (save_figure(one, tmp_path / "one.svg").read_bytes()
            != save_figure(two, tmp_path / "two.svg").read_bytes())


def test_save_figure_follows_the_suffix_and_makes_folders(tmp_path):
    path = save_figure(_attention_figure(), tmp_path / "deep" / "er" / "figure.png")
    assert path == tmp_path / "deep" / "er" / "figure.png"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


# --- the registry ------------------------------------------------------------------------------


DOCS = Path(__file__).parents[1] / "docs"
CHAPTERS = sorted(path.stem for path in (DOCS / "chapters").glob("*.md"))
PAGES = {"home": DOCS / "index.md", **{slug: DOCS / "chapters" / f"{slug}.md" for slug in CHAPTERS}}
"""Every page with figures, by the slug its artifacts are filed under (the home page: ``home``)."""


def test_registry_keys_are_chapter_slash_name():
    keys = [entry.key for entry in FIGURES.values()]
    assert list(FIGURES) == keys  # each recipe is filed under its own key
    for entry in FIGURES.values():
        assert entry.key == f"{entry.chapter}/{entry.name}"
        assert re.fullmatch(r"[a-z0-9_]+", entry.name), entry.key


DIAGRAM_MODULES = {f"attnprimer.site.figures.{name}" for name in (
    "rnn_diagrams", "attention_diagrams", "scale_diagrams", "position_diagrams")}
SECTION_MODULES = {"attnprimer.site.figures.transformer_lengths": "transformer",
                   "attnprimer.site.figures.kv_cache": "attention-at-scale",
                   "attnprimer.site.figures.scale_measured": "attention-at-scale",
                   "attnprimer.site.figures.self_attention_tokens": "self-attention",
                   "attnprimer.site.figures.patch_tokens": "attention-over-images"}
"""Figure modules of one section of a chapter, each filed under that chapter."""


def test_every_chapter_has_a_figure_module_named_by_its_slug():
    modules = {entry.module for entry in FIGURES.values()}
    assert {entry.chapter for entry in FIGURES.values()} == set(PAGES)
    assert modules == {f"attnprimer.site.figures.{slug.replace('-', '_')}" for slug in PAGES} | \
        DIAGRAM_MODULES | set(SECTION_MODULES)
    for entry in FIGURES.values():  # a chapter module files its recipes under its own slug
        if entry.module in SECTION_MODULES:
            assert entry.chapter == SECTION_MODULES[entry.module], entry.key
        elif entry.module not in DIAGRAM_MODULES:
            assert entry.chapter == chapter_of(entry.module), entry.key


def test_a_recipe_may_name_its_chapter():
    def build() -> str:
        return "text"

    def other() -> str:
        return "text"

    build.__module__ = other.__module__ = "attnprimer.site.figures.rnn_diagrams"
    assert recipe("by_default", "filed under its module's slug")(build) is build
    assert build.recipe.key == "rnn-diagrams/by_default"
    recipe("named", "filed under the chapter it names", chapter="bahdanau")(other)
    assert other.recipe.key == "bahdanau/named"
    assert other.recipe.module == "attnprimer.site.figures.rnn_diagrams"
    with pytest.raises(ValueError, match="slug"):
        recipe("bad", "not a slug", chapter="Bahdanau attention")


def test_collect_takes_a_modules_own_recipes_in_order_and_refuses_a_name_twice():
    module = types.ModuleType("attnprimer.site.figures.made_up")

    def first() -> str:
        return "1"

    def second() -> str:
        return "2"

    for function, name in ((first, "b"), (second, "a")):
        function.__module__ = module.__name__
        setattr(module, function.__name__, recipe(name, "a text")(function))
    module.borrowed = FIGURES["qkv/score_table"].build  # imported from another module
    assert list(collect([module])) == ["made-up/b", "made-up/a"]
    with pytest.raises(ValueError, match="twice"):
        collect([module, module])


def test_every_artifact_name_is_written_literally_in_its_module():
    for entry in FIGURES.values():
        source = Path(sys.modules[entry.module].__file__).read_text(encoding="utf-8")
        assert f'@recipe("{entry.name}",' in source or f'@recipe(\n        "{entry.name}",' \
            in source, entry.key


def test_every_figure_module_stays_short():
    """At most 300 lines besides the import block (ruff lays long imports out one name a
    line, which says nothing about how much a module does)."""
    for module in {entry.module for entry in FIGURES.values()}:
        source = Path(sys.modules[module].__file__).read_text(encoding="utf-8")
        imports = [node for node in ast.parse(source).body
                   if isinstance(node, ast.Import | ast.ImportFrom)]
        import_lines = sum(node.end_lineno - node.lineno + 1 for node in imports)
        lines = source.count("\n") - import_lines
        assert lines <= 300, (module, lines)


def test_every_chapter_uses_exactly_its_own_artifacts_and_all_of_them():
    used = set()
    for page in PAGES.values():
        text = page.read_text(encoding="utf-8")
        used |= set(re.findall(r"figures/([a-z-]+/[a-z0-9_]+)\.svg", text))
        used |= set(re.findall(r'--8<-- "([a-z-]+/[a-z0-9_]+)\.md"', text))
    assert used == set(FIGURES)
    home = PAGES["home"].read_text(encoding="utf-8")
    assert {key.split("/")[0] for key in re.findall(r"figures/([a-z-]+/[a-z0-9_]+)\.svg", home)} \
        == {"home"}  # the home page shows its own figures (a chapter's would not fit its map)


def test_every_recipe_has_a_description():
    assert FIGURES
    for entry in FIGURES.values():
        assert isinstance(entry, Recipe)
        assert isinstance(entry.description, str) and entry.description.strip(), entry.key
        assert callable(entry.build)


def test_render_writes_svg_for_figures_and_md_for_text(tmp_path):
    figure_recipe = Recipe("qkv", "attention_test", _attention_figure, "a heatmap",
                           "attnprimer.site.figures.qkv")
    text_recipe = Recipe("qkv", "table_test", lambda: "| a |\n|---|\n| 1 |\n", "a table",
                         "attnprimer.site.figures.qkv")
    svg = render(figure_recipe, tmp_path / "out")
    md = render(text_recipe, tmp_path / "out")
    assert svg == tmp_path / "out" / "qkv" / "attention_test.svg"
    assert b"<svg" in svg.read_bytes()
    dark = tmp_path / "out" / "qkv" / "attention_test.dark.svg"  # and its dark twin beside it
    assert b"<svg" in dark.read_bytes() and dark.read_bytes() != svg.read_bytes()
    assert sorted(path.name for path in (tmp_path / "out" / "qkv").iterdir()) == [
        "attention_test.dark.svg", "attention_test.svg", "table_test.md"]
    assert md == tmp_path / "out" / "qkv" / "table_test.md"
    assert md.read_text() == "| a |\n|---|\n| 1 |\n"


def test_render_all_keeps_fresh_artifacts_unless_forced(tmp_path, monkeypatch):
    builds = []

    def build() -> str:
        builds.append(1)
        return f"build {len(builds)}\n"

    registry = {"qkv/table_test": Recipe("qkv", "table_test", build, "a table",
                                         "attnprimer.site.figures.qkv")}
    monkeypatch.setattr(registry_module, "FIGURES", registry)
    out = tmp_path / "out"
    written = out / "qkv" / "table_test.md"
    assert render_all(out) == [written]
    assert render_all(out) == [written]
    assert len(builds) == 1 and written.read_text() == "build 1\n"
    render_all(out, force=True)
    assert len(builds) == 2 and written.read_text() == "build 2\n"
    written.unlink()  # a missing artifact is rebuilt
    render_all(out, keys=["qkv/table_test"])
    assert len(builds) == 3
    monkeypatch.setattr(registry_module, "fingerprint", lambda module: "the code changed")
    render_all(out)  # a stamp from other code is stale
    assert len(builds) == 4


def test_render_all_returns_a_figure_and_its_dark_twin_and_rebuilds_a_missing_twin(
        tmp_path, monkeypatch):
    builds = []

    def build() -> Figure:
        builds.append(1)
        return _attention_figure()

    registry = {"qkv/figure_test": Recipe("qkv", "figure_test", build, "a figure",
                                          "attnprimer.site.figures.qkv")}
    monkeypatch.setattr(registry_module, "FIGURES", registry)
    out = tmp_path / "out"
    light, dark = out / "qkv" / "figure_test.svg", out / "qkv" / "figure_test.dark.svg"
    assert render_all(out) == [light, dark]
    assert render_all(out) == [light, dark] and len(builds) == 1
    dark.unlink()  # a figure without its twin is not built
    assert render_all(out) == [light, dark] and len(builds) == 2
    assert dark.is_file()


def test_render_all_refuses_an_unknown_key(tmp_path):
    with pytest.raises(KeyError, match="qkv/no_such_figure"):
        render_all(tmp_path, keys=["qkv/no_such_figure"])


def _stamps() -> dict[str, str]:
    return {key: fingerprint(entry.module) for key, entry in FIGURES.items()}


@pytest.mark.parametrize("module, chapter", [("qkv.py", "qkv"), ("rnn_recap.py", "rnn-recap"),
                                             ("bahdanau.py", "bahdanau")])
def test_editing_a_chapter_module_rerenders_that_chapter_only(package_copy, module, chapter):
    before = _stamps()
    path = package_copy / "site" / "figures" / module
    path.write_text(path.read_text(encoding="utf-8") + "\n_EDITED = 1\n", encoding="utf-8")
    after = _stamps()
    assert {FIGURES[key].chapter for key in FIGURES if after[key] != before[key]} == {chapter}


# tables.py: every chapter, and the home page, whose map of the length-generalisation chapter
# reads that chapter's figure module
@pytest.mark.parametrize("module, pages", [("tables.py", [*CHAPTERS, "home"]),
                                           ("theme.py", list(PAGES))])
def test_editing_a_shared_helper_rerenders_every_page_that_uses_it(package_copy, module, pages):
    before = _stamps()
    path = package_copy / "site" / "figures" / module
    path.write_text(path.read_text(encoding="utf-8") + "\n_EDITED = 1\n", encoding="utf-8")
    after = _stamps()
    assert {FIGURES[key].chapter for key in FIGURES if after[key] != before[key]} == set(pages)


def test_model_free_recipe_renders(tmp_path):
    # The score table needs no trained model; the counting recipes are tested in tests/claims.
    path = render(FIGURES["qkv/score_table"], tmp_path)
    table = path.read_text().splitlines()
    assert table[0].startswith("| score |")
    assert len([line for line in table if line.startswith("| ")]) == 4  # header + 3 rows


def test_the_label_check_catches_an_unlabelled_panel():
    # The helper above must be able to fail, or the "is labelled" tests prove nothing.
    figure = Figure()
    left, right = figure.subplots(1, 2)  # y axes not shared
    for axes in (left, right):
        axes.set_xlabel("x")
    left.set_ylabel("y")
    with pytest.raises(AssertionError, match="no y label"):
        assert_labelled(figure)
    right.set_ylabel("y")
    assert_labelled(figure)
    image = left.imshow([[0.0, 1.0]])
    figure.colorbar(image, ax=left)
    assert main_axes(figure) == [left, right]
    with pytest.raises(AssertionError, match="colorbar"):
        assert_labelled(figure)


# --- the self-attention chapter's plots ------------------------------------------------------


def test_plot_task_attention_with_self_attention_draws_two_panels_on_one_scale():
    from attnprimer.tasks import DifferenceTask

    task = DifferenceTask()
    tokens = task.encode("BBBA ACABB")
    figure = plot_task_attention(task, tokens, torch.tensor([3, 5, 1, 2]),
                                 softmax_rows(4, 10), self_weights=softmax_rows(4, 4, seed=1))
    assert_labelled(figure)
    left, right = main_axes(figure)
    assert [left.get_title(), right.get_title()] == ["encoder-decoder attention", "self-attention"]
    assert [image.get_clim() for image in images(figure)] == [(0.0, 1.0), (0.0, 1.0)]
    assert [label.get_text() for label in left.get_yticklabels()] == [
        "A = 3", "B = 5", "C = 1", "|A-B| = 2"]
    assert [label.get_text() for label in right.get_xticklabels()] == [
        "A\n0", "B\n1", "C\n2", "|A-B|\n3"]
    assert len(colorbar_axes(figure)) == 1


def test_plot_accuracy_curves_shows_mean_and_range_per_variant():
    from attnprimer.site.figures import plot_accuracy_curves

    runs = [{"held_out_step": [100, 200, 300], "held_out_exact_match": values}
            for values in ([0.2, 0.5, 0.9], [0.4, 0.7, 1.0])]
    figure = plot_accuracy_curves({"variant": runs})
    assert_labelled(figure)
    left, right = main_axes(figure)
    mean = left.get_lines()[0].get_ydata()
    assert list(mean) == pytest.approx([0.3, 0.6, 0.95])
    assert right.get_yscale() == "log"
    assert min(right.get_lines()[0].get_ydata()) > 0  # a perfect run is floored, not log(0)
    assert "variant (2 seeds)" in [text.get_text() for text in left.get_legend().get_texts()]


def test_plot_difference_profile_has_a_line_per_step_and_seed():
    from attnprimer.site.figures import plot_difference_profile

    rows = softmax_rows(3, 4)
    figure = plot_difference_profile([([-1, 0, 1], rows), ([-1, 0, 1], rows)],
                                     ["A", "B", "C", "|A-B|"])
    assert_labelled(figure)
    (axes,) = main_axes(figure)
    assert len(axes.get_lines()) == 4 * 2 + 1  # steps x seeds, plus the zero line
    assert [text.get_text() for text in axes.get_legend().get_texts()] == [
        "step A", "step B", "step C", "itself"]


def test_plot_attention_grid_hides_unused_panels():
    from attnprimer.site.figures import plot_attention_grid

    figure = plot_attention_grid({f"m{i}": torch.eye(3) for i in range(4)}, ["x", "y", "z"],
                                 columns=3)
    visible = [axes for axes in main_axes(figure) if axes.get_visible()]
    assert [axes.get_title() for axes in visible] == ["m0", "m1", "m2", "m3"]
    for axes in visible:
        assert axes.get_xlabel() and axes.get_ylabel()
    assert all(image.get_clim() == (0.0, 1.0) for image in images(figure))


def test_plot_attention_patterns_rows_sum_to_one_and_masks_hold():
    from attnprimer.site.figures import plot_attention_patterns

    figure = plot_attention_patterns(length=8, window=2, padding=3)
    assert_labelled(figure)
    panels = {axes.get_title(): axes.images[0].get_array() for axes in main_axes(figure)
              if axes.get_visible()}
    assert len(panels) == 5
    for title, weights in panels.items():
        assert list(weights.sum(axis=1)) == pytest.approx([1.0] * 8, abs=1e-6), title
    assert (panels["padding (last 3 keys)"][:, 5:] == 0).all()
    causal = panels["causal"]
    assert all(causal[i, j] == 0 for i in range(8) for j in range(i + 1, 8))
    local = panels["local (|i - j| <= 2)"]
    assert all(local[i, j] == 0 for i in range(8) for j in range(8) if abs(i - j) > 2)
    assert set(panels["hard (argmax)"].flatten().tolist()) == {0.0, 1.0}


def test_plot_causal_demo_leaves_the_past_untouched_only_with_the_mask():
    from attnprimer.site.figures import plot_causal_demo

    figure = plot_causal_demo(length=10, changed_from=6)
    assert_labelled(figure)
    (axes,) = main_axes(figure)
    unmasked, causal = (container for container in axes.containers)
    unmasked = [bar.get_height() for bar in unmasked]
    causal = [bar.get_height() for bar in causal]
    assert all(height == 0.0 for height in causal[:6])  # exactly zero, not just small
    assert all(height > 0 for height in causal[6:])
    assert all(height > 0 for height in unmasked)


def test_plot_attention_cost_reports_measured_slopes():
    from attnprimer.site.bench.attention_cost import CostPoint
    from attnprimer.site.figures import plot_attention_cost

    points = [CostPoint("quadratic", length, 1e-6 * length**2, 8 * length**2)
              for length in (64, 128, 256)]
    points += [CostPoint("linear", length, 1e-6 * length**2, 8 * length)
               for length in (64, 128, 256)]
    figure = plot_attention_cost(points)
    assert_labelled(figure)
    time_panel, memory_panel = main_axes(figure)
    memory_labels = [text.get_text() for text in memory_panel.get_legend().get_texts()]
    assert "quadratic (slope 2.0)" in memory_labels
    assert "linear (slope 1.0)" in memory_labels
    assert time_panel.get_xscale() == "log" and memory_panel.get_yscale() == "log"


def test_plot_attention_cost_leaves_out_unmeasured_memory():
    from attnprimer.site.bench.attention_cost import CostPoint
    from attnprimer.site.figures import plot_attention_cost

    points = [CostPoint("a", length, 1e-3 * length, None) for length in (8, 16, 32)]
    figure = plot_attention_cost(points)
    _, memory_panel = main_axes(figure)
    labels = [text.get_text() for text in memory_panel.get_legend().get_texts()]
    assert labels == ["a"]  # no slope, no guides: nothing was measured


MODEL_FREE = ["qkv/score_table", "positional-encoding/sinusoidal"]  # two chapters: a table,
# and a figure with its dark twin


def test_rendering_chapters_in_processes_writes_the_same_files(tmp_path):
    one = render_all(tmp_path / "one", keys=MODEL_FREE)
    two = render_all(tmp_path / "two", keys=MODEL_FREE, workers=2)
    assert [path.relative_to(tmp_path / "one") for path in one] == [
        path.relative_to(tmp_path / "two") for path in two]
    for first, second in zip(one, two, strict=True):
        assert first.read_bytes() == second.read_bytes(), first.name
    # and stamped: nothing renders again
    assert render_all(tmp_path / "two", keys=MODEL_FREE, workers=2) == two


def test_recipes_that_measure_the_machine_render_first_and_in_this_process(monkeypatch, tmp_path):
    order = []

    def entry(chapter, name, alone=False):
        def build() -> str:
            order.append((name, os.getpid()))
            return f"{name}\n"

        return Recipe(chapter, name, build, "a table", f"attnprimer.site.figures.{chapter}", alone)

    registry = {recipe.key: recipe for recipe in (entry("qkv", "first"), entry("qkv", "measured",
                                                  alone=True), entry("qkv", "last"))}
    monkeypatch.setattr(registry_module, "FIGURES", registry)
    render_all(tmp_path, workers=2)  # one chapter: no processes needed
    assert order == [("measured", os.getpid()), ("first", os.getpid()), ("last", os.getpid())]
    assert [key for key, recipe in FIGURES.items() if recipe.alone] == [
        "self-attention/cost", "self-attention/cost_table",
        "attention-at-scale/training_cost", "attention-at-scale/local_cost",
        "attention-at-scale/cost_table", "attention-at-scale/local_table",
        "attention-at-scale/targets", "attention-at-scale/sdpa_table",
        "attention-at-scale/kv_cost", "attention-at-scale/kv_cost_table",
        "attention-at-scale/kv_site_speed"]


def test_positional_encoding_plots_label_their_axes():
    from attnprimer.site.figures.positional_encoding import (
        plot_learned_norms,
        plot_rotary_scores,
        plot_score_biases,
    )

    assert [axes.get_xlabel() for axes in plot_rotary_scores().axes[:2]] == ["key position n"] * 2
    labels = [axes.get_xlabel() for axes in plot_score_biases(4, 6).axes[:3]]
    assert labels == ["key position n"] * 3
    norms = plot_learned_norms({"seed 0": torch.tensor([2.0, 0.5, 0.5])}, length=3)
    assert norms.axes[0].get_ylabel() == "L2 norm of the encoding"
