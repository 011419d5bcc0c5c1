"""MkDocs hook: export the trained models the attention explorer runs in the browser.

On each build, :func:`attnprimer.site.explorer.export.export_site` writes the weights of the
site models the explorer runs (seed 0 of the counting, signal, difference, reversal and
Transformer models: ``attnprimer.site.explorer.export.explorer_models``) into
``.cache/attnprimer/generated/explorer/models.json``; a file that would not change is left as
it is (and if neither the package's code nor those models changed, a stamp says so without
importing torch). The export runs in a fresh process, so that under ``mkdocs serve`` a rebuild
uses the code as edited, not the modules an earlier build imported. It joins the site as
``assets/explorer/models.json``, which ``docs/javascripts/explorer.js`` fetches on the
explorer page (``docs/explorer.md``).

Listed after ``docs/hooks/figures.py`` in ``mkdocs.yml``: that hook trains every missing site
model first, several at a time, so this one only loads them from the cache.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from attnprimer.training.fingerprints import current_outputs, record_outputs

GENERATED = Path(".cache") / "attnprimer" / "generated" / "explorer"  # relative to mkdocs.yml
SITE_PATH = "assets/explorer/models.json"  # explorer.js fetches it from here
STAMP = "models.stamp.json"  # beside models.json: the package and the models it was made from

log = logging.getLogger("mkdocs.hooks.explorer")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    path = Path(config.config_file_path).resolve().parent / GENERATED / "models.json"
    started = time.perf_counter()
    stamp = path.with_name(STAMP)
    if current_outputs(stamp) is None:  # else nothing changed: no torch
        from attnprimer.site.explorer.export import export_site
        from attnprimer.training.workers import run_in_processes

        # A fresh process: under mkdocs serve this one keeps the modules of an earlier build,
        # and the models the stamp records come from it too.
        [(written, models)] = run_in_processes(export_site, [path], workers=1)
        record_outputs(stamp, inputs=models, outputs=[path])
    else:
        written = False
    log.info("explorer: %s %s (%.0f kB) in %.1f s", "wrote" if written else "kept", path,
             path.stat().st_size / 1000, time.perf_counter() - started)
    files.append(File.generated(config, SITE_PATH, abs_src_path=str(path)))
    return files
