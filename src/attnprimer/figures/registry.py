"""The registry of the site's artifacts (figures and tables), and how they are rendered.

A chapter's figure module (``figures/<slug>.py``, underscores for dashes) registers each of
its artifacts with [`recipe`][attnprimer.figures.registry.recipe]:

    @recipe("heatmap", "the trained counting model's attention on the primer's example")
    def counting_heatmap() -> Figure: ...

The recipe's chapter is its module's slug (unless ``chapter=`` names another), so the
artifact above, registered in ``figures/qkv.py``, is ``qkv/heatmap``: a page embeds
``figures/qkv/heatmap.svg`` or includes ``--8<-- "qkv/heatmap.md"`` for Markdown. A recipe
returns a ``Figure`` (saved as SVG) or Markdown text (saved as ``.md``). The architecture
diagrams, drawn without a trained model, are registered from modules of their own
(``figures/rnn_diagrams.py``, ``attention_diagrams.py``, ``position_diagrams.py``,
``scale_diagrams.py``), each for the chapter that shows it.

[`render_all`][attnprimer.figures.registry.render_all] keeps an artifact that was built by
the same code: each one is stamped with the fingerprint of its chapter's module and every
package module that module imports
([`attnprimer.fingerprints.fingerprint`][attnprimer.fingerprints.fingerprint]), so editing a
figure module re-renders its own artifacts and those of every figure module that imports it.
[`render_site`][attnprimer.figures.registry.render_site] is the docs build's step: the
catalogue's missing models trained, then every artifact rendered.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from attnprimer.figures.plotting import save_figure
from attnprimer.figures.theme import DARK_BACKGROUND, to_dark
from attnprimer.files import write_atomically
from attnprimer.fingerprints import fingerprint
from attnprimer.train import single_thread
from attnprimer.workers import run_in_processes

__all__ = ["FIGURES", "Recipe", "SiteBuild", "dark_twin", "recipe", "render", "render_all",
           "render_site"]


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


FIGURES: dict[str, Recipe] = {}
"""Every recipe, by ``<chapter>/<name>``."""


def chapter_of(module: str) -> str:
    """The chapter slug of a figure module: ``attnprimer.figures.rnn_recap`` -> ``rnn-recap``.

    Examples:
        >>> chapter_of("attnprimer.figures.positional_encoding")
        'positional-encoding'
    """
    return module.rpartition(".")[2].replace("_", "-")


def recipe(name: str, description: str, *, alone: bool = False, chapter: str | None = None
           ) -> Callable[[Callable[[], Figure | str]], Callable[[], Figure | str]]:
    """Register the decorated function as the artifact ``name`` of its module's chapter.

    ``chapter`` files it under another chapter's slug instead: a module that is not a
    chapter's own (the architecture diagrams) serves several chapters that way.
    """
    if chapter is not None and not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", chapter):
        raise ValueError(f"chapter must be a slug like 'rnn-recap', got {chapter!r}")

    def register(build: Callable[[], Figure | str]) -> Callable[[], Figure | str]:
        entry = Recipe(chapter or chapter_of(build.__module__), name, build, description,
                       build.__module__, alone)
        if entry.key in FIGURES:
            raise ValueError(f"recipe {entry.key!r} is registered twice")
        FIGURES[entry.key] = entry
        return build

    return register


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
    ([`to_dark`][attnprimer.figures.theme.to_dark]) beside it, as
    [`dark_twin`][attnprimer.figures.registry.dark_twin] names it.
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


def render_all(
    out_dir: str | os.PathLike, keys: Iterable[str] | None = None, *, force: bool = False,
    workers: int = 1,
) -> list[Path]:
    """Render recipes (all by default) into ``out_dir``; returns the files written or kept
    (a figure's two: ``<name>.svg`` and its dark twin).

    Unless ``force``, an artifact built by the same code (its chapter module and what that
    imports, docstrings and comments aside) is kept as it is: a warm docs build is fast.
    With ``workers`` > 1, the chapters render in that many processes, after the recipes that
    measure the machine (``alone``), which render first, by themselves.

    Examples:
        >>> import tempfile
        >>> import attnprimer.figures
        >>> folder = Path(tempfile.mkdtemp())
        >>> [path.relative_to(folder).as_posix()
        ...  for path in render_all(folder, keys=["qkv/score_functions"])]
        ['qkv/score_functions.svg', 'qkv/score_functions.dark.svg']
    """
    out_dir = Path(out_dir)
    keys = list(FIGURES) if keys is None else list(keys)
    unknown = sorted(set(keys) - set(FIGURES))
    if unknown:
        raise KeyError(f"unknown artifact {', '.join(unknown)}")
    codes = {module: fingerprint(module) for module in {FIGURES[key].module for key in keys}}
    done: dict[str, list[Path]] = {}
    stale = []
    for key in keys:
        built = [path for path in (out_dir / f"{key}.svg", dark_twin(out_dir / f"{key}.svg"),
                                   out_dir / f"{key}.md") if path.is_file()]
        if built and built[0].suffix == ".svg" and len(built) < 2:
            built = []  # a figure without its dark twin is not built
        stamp = _stamp(out_dir, FIGURES[key])
        current = codes[FIGURES[key].module]
        if not force and built and stamp.is_file() and stamp.read_text() == current:
            done[key] = built
        else:
            stale.append(key)
    alone = [key for key in stale if FIGURES[key].alone]
    chapters: dict[str, list[str]] = {}
    for key in stale:
        if not FIGURES[key].alone:
            chapters.setdefault(FIGURES[key].chapter, []).append(key)
    jobs = sorted(chapters.values(), key=len, reverse=True)  # the most recipes first
    rendered = [_render_keys((out_dir, alone))]
    if workers > 1 and len(jobs) > 1:
        rendered += run_in_processes(_render_keys, [(out_dir, job) for job in jobs],
                                     workers=min(workers, len(jobs)))
    else:
        rendered += [_render_keys((out_dir, job)) for job in jobs]
    for job, paths in zip([alone, *jobs], rendered, strict=True):
        for key, path in zip(job, paths, strict=True):
            done[key] = [path, dark_twin(path)] if path.suffix == ".svg" else [path]
            stamp = _stamp(out_dir, FIGURES[key])
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(codes[FIGURES[key].module])
    return [path for key in keys for path in done[key]]


def _stamp(out_dir: Path, entry: Recipe) -> Path:
    """Where the fingerprint of the code an artifact was built from is kept."""
    return out_dir / ".stamps" / entry.chapter / entry.name


@dataclass(frozen=True)
class SiteBuild:
    """What [`render_site`][attnprimer.figures.registry.render_site] did.

    Attributes:
        trained: the labels of the models it trained (the cache lacked them).
        train_seconds: the wall time of that training.
        models: the checkpoint file of every model of the catalogue.
        artifacts: every artifact's files.
    """

    trained: list[str]
    train_seconds: float
    models: list[Path]
    artifacts: list[Path]


def render_site(out_dir: Path) -> SiteBuild:
    """Train every model of the catalogue the cache lacks, then render every artifact.

    What the docs build runs, in a fresh process of its own
    ([`run_in_processes`][attnprimer.workers.run_in_processes]): under ``mkdocs serve`` the
    hook's process keeps the package modules an earlier build imported, and a rebuild after
    an edit must train and render with the edited code.
    """
    from attnprimer.cache import cached_path, train_missing
    from attnprimer.site_models import SITE_MODELS, SiteModel

    _load_recipes()
    started = time.perf_counter()
    trained = train_missing((model.task, model.config) for model in SITE_MODELS)
    seconds = time.perf_counter() - started
    artifacts = render_all(out_dir, workers=os.cpu_count() or 1)  # a chapter per process
    return SiteBuild([SiteModel(task, config).label for task, config in trained], seconds,
                     [cached_path(model.task, model.config) for model in SITE_MODELS], artifacts)


def _load_recipes() -> None:
    """Select matplotlib's Agg backend and register every chapter's recipes (a fresh process)."""
    import matplotlib

    matplotlib.use("Agg")  # in code, whatever the environment says
    # Not an import statement: a recipe's stamp covers its own chapter's module and what
    # that imports, and the registry must not make every chapter import every other.
    importlib.import_module("attnprimer.figures")


def _render_keys(job: tuple[Path, list[str]]) -> list[Path]:
    """Render some recipes into a folder; what a worker process runs, one chapter at a time.

    Recipes other than ``alone`` ones run on one thread, in a worker or not: two workers with
    two threads each on two cores thrash, and one thread count for all keeps every number
    the same whether the chapters rendered side by side or one after another.
    """
    out_dir, keys = job
    if keys and keys[0] not in FIGURES:  # a fresh worker
        _load_recipes()
    if any(FIGURES[key].alone for key in keys):
        return [render(FIGURES[key], out_dir) for key in keys]
    with single_thread():
        return [render(FIGURES[key], out_dir) for key in keys]
