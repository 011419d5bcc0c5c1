"""The registry of the site's artifacts (figures and tables), and how they are rendered.

[`FIGURES`][attnprimer.site.figures.registry.FIGURES] collects the recipes (marked with
[`recipe`][attnprimer.site.figures.recipes.recipe]) of the chapters' figure modules, listed
here in reading order, then of the architecture diagrams' modules and of the home page's.

[`render_all`][attnprimer.site.figures.registry.render_all] keeps an artifact that was built by
the same code: each one is stamped with the fingerprint of its chapter's module and every
package module that module imports
([`fingerprint`][attnprimer.training.fingerprints.fingerprint]), so editing a figure module
re-renders its own artifacts and those of every figure module that imports it.
[`render_site`][attnprimer.site.figures.registry.render_site] is the docs build's step: the
catalogue's missing models trained, then every artifact rendered.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import attnprimer.site.figures.attention_at_scale as attention_at_scale
import attnprimer.site.figures.attention_diagrams as attention_diagrams
import attnprimer.site.figures.attention_over_images as attention_over_images
import attnprimer.site.figures.bahdanau as bahdanau
import attnprimer.site.figures.home as home
import attnprimer.site.figures.induction_heads as induction_heads
import attnprimer.site.figures.kv_cache as kv_cache
import attnprimer.site.figures.length_generalisation as length_generalisation
import attnprimer.site.figures.patch_tokens as patch_tokens
import attnprimer.site.figures.position_diagrams as position_diagrams
import attnprimer.site.figures.positional_encoding as positional_encoding
import attnprimer.site.figures.qkv as qkv
import attnprimer.site.figures.rnn_diagrams as rnn_diagrams
import attnprimer.site.figures.rnn_recap as rnn_recap
import attnprimer.site.figures.scale_diagrams as scale_diagrams
import attnprimer.site.figures.scale_measured as scale_measured
import attnprimer.site.figures.self_attention as self_attention
import attnprimer.site.figures.self_attention_tokens as self_attention_tokens
import attnprimer.site.figures.training_transformers as training_transformers
import attnprimer.site.figures.transformer as transformer
import attnprimer.site.figures.transformer_lengths as transformer_lengths
from attnprimer.site.figures.recipes import Recipe, collect, dark_twin, render
from attnprimer.training.fingerprints import fingerprint
from attnprimer.training.train import single_thread
from attnprimer.training.workers import run_in_processes

__all__ = ["FIGURES", "MODULES", "SiteBuild", "render_all", "render_site"]

MODULES = (rnn_recap, rnn_diagrams, bahdanau, qkv, self_attention, self_attention_tokens,
           positional_encoding,
           transformer, transformer_lengths, training_transformers, length_generalisation,
           attention_at_scale, scale_measured, kv_cache, attention_over_images,
           patch_tokens, induction_heads, attention_diagrams, scale_diagrams, position_diagrams,
           home)
"""The modules whose recipes make the site: the chapters' in reading order (a diagram module
beside the chapter that first shows it), then the other diagrams and the home page."""

FIGURES: dict[str, Recipe] = collect(MODULES)
"""Every recipe, by ``<chapter>/<name>``."""


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
    """What [`render_site`][attnprimer.site.figures.registry.render_site] did.

    Attributes:
        trained: the labels of the models it trained (the cache lacked them).
        train_seconds: the CPU time of that training.
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
    ([`run_in_processes`][attnprimer.training.workers.run_in_processes]): under ``mkdocs serve`` the
    hook's process keeps the package modules an earlier build imported, and a rebuild after
    an edit must train and render with the edited code.
    """
    from attnprimer.site.catalogue import SITE_MODELS, SiteModel
    from attnprimer.training.model_cache import cached_path, train_missing

    _agg_backend()
    started = time.perf_counter()
    trained = train_missing((model.task, model.config) for model in SITE_MODELS)
    seconds = time.perf_counter() - started
    artifacts = render_all(out_dir, workers=os.cpu_count() or 1)  # a chapter per process
    return SiteBuild([SiteModel(task, config).label for task, config in trained], seconds,
                     [cached_path(model.task, model.config) for model in SITE_MODELS], artifacts)


def _agg_backend() -> None:
    """Select matplotlib's Agg backend, in code, whatever the environment says (a fresh
    process renders no window)."""
    import matplotlib

    matplotlib.use("Agg")


def _render_keys(job: tuple[Path, list[str]]) -> list[Path]:
    """Render some recipes into a folder; what a worker process runs, one chapter at a time.

    Recipes other than ``alone`` ones run on one thread, in a worker or not: two workers with
    two threads each on two cores thrash, and one thread count for all keeps every number
    the same whether the chapters rendered side by side or one after another.
    """
    out_dir, keys = job
    _agg_backend()
    if any(FIGURES[key].alone for key in keys):
        return [render(FIGURES[key], out_dir) for key in keys]
    with single_thread():
        return [render(FIGURES[key], out_dir) for key in keys]
