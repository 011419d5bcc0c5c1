"""MkDocs hook: remember the search plugin's reading of each page between builds.

mkdocs-material's search plugin parses the HTML of every page on every build to cut it into
the sections of the search index; on a rebuild where nothing changed that is nearly two of
its eight seconds, most of it on the API reference. This hook keeps the entries it made for
each page in ``.cache/attnprimer/search.json``, keyed on everything they are made from (the
page's HTML, address, title, table of contents and search settings, and the plugin's
version), and hands them back when the same page comes round again. The index it writes is
the same, entry for entry (``tests/test_search_cache.py`` checks this).

Should a future mkdocs-material rename what this hook wraps, the hook says so once and
leaves the plugin alone: the build is then only slower.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from importlib.metadata import version
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig

from attnprimer.training.files import write_atomically

CACHE = Path(".cache") / "attnprimer" / "search.json"  # relative to mkdocs.yml

log = logging.getLogger("mkdocs.hooks.search_cache")

try:
    from material.plugins.search.plugin import SearchIndex
except ImportError:  # no mkdocs-material, or it moved: nothing to wrap
    SearchIndex = None

_kept: dict[str, list[dict]] = {}  # key -> entries, from the last build
_used: dict[str, list[dict]] = {}  # key -> entries, this build
_path: Path | None = None


MATERIAL = version("mkdocs-material")


def page_key(page) -> str:
    """Everything a page's search entries are made from, hashed."""
    def contents(items):
        return [[item.id, item.url, contents(item.children)] for item in items]

    meta = {name: page.meta.get(name) for name in ("title", "tags", "search")}
    made_from = [MATERIAL, page.url, page.title, page.content, contents(page.toc), meta]
    return hashlib.sha256(json.dumps(made_from, default=str).encode()).hexdigest()


def _add_entry_from_context(self, page) -> None:
    key = page_key(page)
    if key in _kept:
        self.entries.extend(_kept[key])  # entries are never changed once made: shared, not copied
    else:
        first = len(self.entries)
        _original(self, page)
        _kept[key] = self.entries[first:]
    _used[key] = _kept[key]


if SearchIndex is not None and hasattr(SearchIndex, "add_entry_from_context"):
    # `mkdocs serve` loads the hooks again on every rebuild: wrap the plugin's own method,
    # never an earlier wrapper
    if not hasattr(SearchIndex, "attnprimer_unwrapped"):
        SearchIndex.attnprimer_unwrapped = SearchIndex.add_entry_from_context
    _original = SearchIndex.attnprimer_unwrapped
    SearchIndex.add_entry_from_context = _add_entry_from_context
else:
    log.warning("search cache: mkdocs-material has no SearchIndex.add_entry_from_context; "
                "every page is parsed afresh")


def on_config(config: MkDocsConfig) -> None:
    global _path
    _path = Path(config.config_file_path).resolve().parent / CACHE
    _used.clear()
    _kept.clear()
    with contextlib.suppress(OSError, ValueError):  # none yet, or unreadable: parse every page
        _kept.update(json.loads(_path.read_text(encoding="utf-8")))


def on_post_build(config: MkDocsConfig) -> None:
    """Keep this build's entries only, so the file does not grow with old pages."""
    _path.parent.mkdir(parents=True, exist_ok=True)
    content = json.dumps(_used).encode()
    write_atomically(_path, lambda file: file.write(content))
