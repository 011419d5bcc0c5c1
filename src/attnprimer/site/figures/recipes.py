"""How a figure module marks its artifacts: [`recipe`][attnprimer.site.figures.recipes.recipe].

A chapter's figure module (``figures/<slug>.py``, underscores for dashes) marks each of its
artifacts:

    @recipe("heatmap", "the trained counting model's attention on the primer's example")
    def counting_heatmap() -> Figure: ...

The recipe's chapter is its module's slug (unless ``chapter=`` names another), so the
artifact above, marked in ``figures/qkv.py``, is ``qkv/heatmap``: a page embeds
``figures/qkv/heatmap.svg`` or includes ``--8<-- "qkv/heatmap.md"`` for Markdown. A recipe
returns a ``Figure`` (saved as SVG) or Markdown text (saved as ``.md``). Marking registers
nothing: the registry ([`attnprimer.site.figures.registry`][attnprimer.site.figures.registry])
collects the recipes of the modules it lists. [`render`][attnprimer.site.figures.recipes.render]
turns one recipe into its files. A figure module imports this module, never the registry: an
artifact's stamp (the fingerprint of its module and what that imports) then covers its own
code and the code that renders it, not every chapter's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from matplotlib.figure import Figure

from attnprimer.site.figures.plotting import save_figure
from attnprimer.site.figures.theme import DARK_BACKGROUND, to_dark
from attnprimer.training.files import write_atomically

__all__ = ["Recipe", "chapter_of", "collect", "dark_twin", "recipe", "render"]


@dataclass(frozen=True)
class Recipe:
    """How to build one artifact of the site.

    Attributes:
        chapter: the slug of the chapter it belongs to (``docs/chapters/<chapter>.md``).
        name: its name within the chapter; the file is ``<chapter>/<name>.svg`` or ``.md``.
        build: returns a Figure (saved as SVG) or Markdown text (saved as .md).
        description: what it shows, for ``attnprimer figures --list`` and the reference.
        module: the figure module it is registered in (what its stamp is keyed on).
        alone: it measures this machine (time, memory): rendered first, with nothing else
            running, never beside another recipe.
    """

    chapter: str
    name: str
    build: Callable[[], Figure | str]
    description: str
    module: str
    alone: bool = False

    @property
    def key(self) -> str:
        """``<chapter>/<name>``: how the registry, the CLI and the pages name it."""
        return f"{self.chapter}/{self.name}"


def chapter_of(module: str) -> str:
    """The chapter slug of a figure module: ``attnprimer.site.figures.rnn_recap`` -> ``rnn-recap``.

    Examples:
        >>> chapter_of("attnprimer.site.figures.positional_encoding")
        'positional-encoding'
    """
    return module.rpartition(".")[2].replace("_", "-")


def recipe(name: str, description: str, *, alone: bool = False, chapter: str | None = None
           ) -> Callable[[Callable[[], Figure | str]], Callable[[], Figure | str]]:
    """Mark the decorated function as the artifact ``name`` of its module's chapter.

    The function is returned as it is, with its [`Recipe`][attnprimer.site.figures.recipes.Recipe]
    attached (``build.recipe``); nothing is registered anywhere: the registry
    ([`FIGURES`][attnprimer.site.figures.registry.FIGURES]) collects the marked functions of
    the modules it names ([`collect`][attnprimer.site.figures.recipes.collect]). ``chapter``
    files the artifact under another chapter's slug: a module that is not a chapter's own (the
    architecture diagrams) serves several chapters that way.
    """
    if chapter is not None and not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", chapter):
        raise ValueError(f"chapter must be a slug like 'rnn-recap', got {chapter!r}")

    def mark(build: Callable[[], Figure | str]) -> Callable[[], Figure | str]:
        build.recipe = Recipe(chapter or chapter_of(build.__module__), name, build, description,
                              build.__module__, alone)
        return build

    return mark


def collect(modules: Iterable[ModuleType]) -> dict[str, Recipe]:
    """The recipes marked in ``modules``, by ``<chapter>/<name>``, in the modules' order and
    then each module's own (a function a module imports is not collected there).

    Raises:
        ValueError: two recipes of the same ``<chapter>/<name>``.
    """
    found: dict[str, Recipe] = {}
    for module in modules:
        for value in vars(module).values():
            entry = getattr(value, "recipe", None)
            if isinstance(entry, Recipe) and entry.module == module.__name__:
                if entry.key in found:
                    raise ValueError(f"recipe {entry.key!r} is registered twice")
                found[entry.key] = entry
    return found


def dark_twin(path: str | os.PathLike) -> Path:
    """Where the dark page's rendering of the figure at ``path`` is: ``<name>.dark.svg``.

    Examples:
        >>> dark_twin("qkv/heatmap.svg").as_posix()
        'qkv/heatmap.dark.svg'
    """
    path = Path(path)
    return path.with_name(f"{path.stem}.dark{path.suffix}")


def render(entry: Recipe, out_dir: str | os.PathLike) -> Path:
    """Build one recipe and write it to ``out_dir/<chapter>/<name>.svg`` (or ``.md``).

    A figure is built once and saved twice: as drawn, and recoloured for the dark page
    ([`to_dark`][attnprimer.site.figures.theme.to_dark]) beside it, as
    [`dark_twin`][attnprimer.site.figures.recipes.dark_twin] names it.
    """
    folder = Path(out_dir) / entry.chapter
    result = entry.build()
    if isinstance(result, Figure):
        light = save_figure(result, folder / f"{entry.name}.svg")
        save_figure(to_dark(result), dark_twin(light), background=DARK_BACKGROUND)
        return light
    path = folder / f"{entry.name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda file: file.write(result.encode("utf-8")), mode=0o644)
    return path
