"""MkDocs hook: the code blocks that chapters show, in their teaching view.

Before each build, :func:`attnprimer.site.code_views.write_sections` writes every marked section of
the package (``# --8<-- [start:name]`` ... ``[end:name]``) as a Markdown code block, without
docstrings and argument checks, with a link to the API reference under it, into
``.cache/attnprimer/generated/code`` (under the snippets base path
``.cache/attnprimer/generated``). A chapter includes one with

    --8<-- "code/rnn/decoder.md"

for the section ``decoder`` of ``src/attnprimer/rnn.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig

from attnprimer.site.code_views import write_sections

OUT = Path(".cache") / "attnprimer" / "generated" / "code"  # relative to mkdocs.yml

log = logging.getLogger("mkdocs.hooks.code")


def on_pre_build(config: MkDocsConfig) -> None:
    out_dir = Path(config.config_file_path).resolve().parent / OUT
    written = write_sections(out_dir)
    log.info("code: %d teaching views of the package's sections (%s)", len(written), out_dir)
