"""MkDocs hook: build every figure and table of the site from the attnprimer registry.

On each build, :func:`attnprimer.site.figures.render_all` writes the registry's
artifacts into ``.cache/attnprimer/generated`` (training any model the cache
lacks; an artifact already built from the same package source is kept, so a
warm rebuild takes seconds). Then:

* figures (``<chapter>/<name>.svg``) join the site as ``figures/<chapter>/<name>.svg``; a
  chapter embeds one with ``![alt](../figures/<chapter>/<name>.svg)``, and strict link
  validation catches a wrong name;
* each figure's dark twin (``<name>.dark.svg``, the same drawing recoloured for the dark page)
  joins it, and every page's ``<img>`` of a figure becomes two: the figure, shown in the light
  scheme only, and its twin, shown in the dark scheme only (Material hides an image whose
  address ends in ``#only-light`` on the dark page, ``#only-dark`` on the light one). Pages
  write one image; the alt text, the attributes and the ``<figure>`` around it stay;
* tables and text samples (``<chapter>/<name>.md``) are included by a chapter with
  ``--8<-- "<chapter>/<name>.md"`` (that folder is a snippets base path, with
  ``check_paths: true``).

Before rendering, every model of the catalogue (``attnprimer.site.catalogue``) the cache lacks
is trained, several at a time. Both run in a fresh process
([`render_site`][attnprimer.site.figures.registry.render_site]): under ``mkdocs serve`` this
process keeps the package modules an earlier build imported, and would otherwise render an
edit with the code from before it. A stamp (``figures.stamp.json``) records the package's
fingerprint and every model and artifact file; on a rebuild where none of them changed, the
hook reads the stamp and imports neither torch nor matplotlib.

Pages never type a number a model produced: they include what this hook made.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from attnprimer.training.fingerprints import current_outputs, record_outputs

GENERATED = Path(".cache") / "attnprimer" / "generated"  # relative to mkdocs.yml
SITE_FOLDER = "figures"
STAMP = "figures.stamp.json"  # in GENERATED: the package and the files the last rendering saw

log = logging.getLogger("mkdocs.hooks.figures")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    out_dir = Path(config.config_file_path).resolve().parent / GENERATED
    started = time.perf_counter()
    paths = current_outputs(out_dir / STAMP)  # nothing changed: no torch, no matplotlib
    if paths is None:
        paths = _train_and_render(out_dir)
    for path in paths:
        if path.suffix == ".svg":
            site_path = f"{SITE_FOLDER}/{path.relative_to(out_dir).as_posix()}"
            files.append(File.generated(config, site_path, abs_src_path=str(path)))
    log.info("figures: %d artifacts ready in %.1f s (%s)", len(paths),
             time.perf_counter() - started, out_dir)
    return files


def _train_and_render(out_dir: Path) -> list[Path]:
    from attnprimer.site.figures.registry import render_site
    from attnprimer.training.workers import run_in_processes

    # A fresh process, whatever this one imported before (mkdocs serve rebuilds in it).
    [build] = run_in_processes(render_site, [out_dir], workers=1)
    if build.trained:
        log.info("figures: trained %d models in %.1f s: %s", len(build.trained),
                 build.train_seconds, ", ".join(build.trained))
    record_outputs(out_dir / STAMP, inputs=build.models, outputs=build.artifacts)
    return build.artifacts


FIGURE_IMAGE = re.compile(
    r'<img\b(?P<before>[^>]*?)\bsrc="(?P<src>(?:\.\./)*' + SITE_FOLDER +
    r'/[a-z0-9-]+/[a-z0-9_]+\.svg)"(?P<after>[^>]*)>')
"""An ``<img>`` of a figure of the registry, as Markdown renders ``![alt](figures/...svg)``."""


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return FIGURE_IMAGE.sub(_light_and_dark, html)


def _light_and_dark(match: re.Match) -> str:
    """One figure's ``<img>`` as two, each shown in one colour scheme only."""
    before, source, after = match["before"], match["src"], match["after"]
    dark = source.removesuffix(".svg") + ".dark.svg"  # attnprimer.site.figures.recipes.dark_twin
    return (f'<img{before}src="{source}#only-light"{after}>'
            f'<img{before}src="{dark}#only-dark"{after}>')
