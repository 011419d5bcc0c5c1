"""MkDocs hook: export the trained models the attention explorer's pages run in the browser.

Each explorer page fetches one JSON file of weights. ``EXPORTS`` names, for each file, the
function that writes it: it takes the file's path and returns whether it (re)wrote the file and
the checkpoint files of the models it exported. The sequence page's is
:func:`attnprimer.site.explorer.export.export_site` (seed 0 of the counting, signal,
difference, reversal and Transformer models); the digit-reading page's is
:func:`attnprimer.site.explorer.images.export_site`, and the induction-heads page's
:func:`attnprimer.site.explorer.induction.export_site` (the two-layer induction model at a set
of its training snapshots). Each file is written under
``.cache/attnprimer/generated/explorer/`` and left as it is when it would not change; a stamp
beside it records the package and the models it was made from, so that if neither changed, the
build keeps it without importing torch. An export runs in a fresh process, so that under
``mkdocs serve`` a rebuild uses the code as edited, not the modules an earlier build imported.
Each file joins the site under ``assets/explorer/``.

Listed after ``docs/hooks/figures.py`` in ``mkdocs.yml``: that hook trains every missing site
model first, several at a time, so this one only loads them from the cache.
"""

from __future__ import annotations

import importlib
import logging
import time
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from attnprimer.training.fingerprints import current_outputs, record_outputs

GENERATED = Path(".cache") / "attnprimer" / "generated" / "explorer"  # relative to mkdocs.yml
SITE_FOLDER = "assets/explorer"  # the pages' scripts fetch the files from here
EXPORTS = {  # each file, and the function (module:name) that writes it
    "models.json": "attnprimer.site.explorer.export:export_site",
    "attention-over-images.json": "attnprimer.site.explorer.images:export_site",
    "induction-heads.json": "attnprimer.site.explorer.induction:export_site",
}

log = logging.getLogger("mkdocs.hooks.explorer")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    folder = Path(config.config_file_path).resolve().parent / GENERATED
    for name, function in EXPORTS.items():
        path = folder / name
        started = time.perf_counter()
        stamp = path.with_name(f"{path.stem}.stamp.json")
        if current_outputs(stamp) is None:  # else nothing changed: no torch
            from attnprimer.training.workers import run_in_processes

            module, _, attribute = function.partition(":")
            export = getattr(importlib.import_module(module), attribute)
            # A fresh process: under mkdocs serve this one keeps the modules of an earlier
            # build, and the models the stamp records come from it too.
            [(written, models)] = run_in_processes(export, [path], workers=1)
            record_outputs(stamp, inputs=models, outputs=[path])
        else:
            written = False
        log.info("explorer: %s %s (%.0f kB) in %.1f s", "wrote" if written else "kept", path,
                 path.stat().st_size / 1000, time.perf_counter() - started)
        files.append(File.generated(config, f"{SITE_FOLDER}/{name}", abs_src_path=str(path)))
    return files
