"""MkDocs hook: count each chapter's main line and fill in its reading time.

A chapter's *main line* is what a reader who opens no fold reads: the prose of the page, without
its folded boxes (``??? note``, rendered as ``<details>``), code blocks, tables, figures and
formulas. ``CONTRIBUTING.md`` sets its limits (2,500 words, five mentions of "seed"); the site
tests count it again in the browser and fail a chapter over them.

A chapter's opening box says how long its main line takes to read, from the count made here:

```markdown
!!! abstract "After this chapter you can"
    ...

    <span class="reading-time"></span>
```

The empty span becomes "About 11 minutes to read: 2,204 words on the main line; the folds
hold the evidence." The figure is computed on every build, so it stays true as the page changes.
"""

from __future__ import annotations

import logging
import math
import re
from html.parser import HTMLParser

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

WORDS_PER_MINUTE = 200  # a careful reader of technical prose; figures and folds not included
SKIPPED_TAGS = frozenset({"details", "pre", "table", "figure", "script", "style", "svg"})
SKIPPED_CLASSES = frozenset({"arithmatex", "highlight", "headerlink"})
VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                       "meta", "source", "track", "wbr"})
WORD = re.compile(r"\w+(?:[-'’]\w+)*")
SEED = re.compile(r"\bseed", re.IGNORECASE)
PLACEHOLDER = '<span class="reading-time"></span>'

log = logging.getLogger("mkdocs.hooks.main_line")


class _MainLine(HTMLParser):
    """The text of an HTML fragment outside the skipped elements, one chunk per text node."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._open: list[bool] = []  # one entry per open element: is it skipped?
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID_TAGS:
            return
        classes = set((dict(attrs).get("class") or "").split())
        skipped = tag in SKIPPED_TAGS or bool(classes & SKIPPED_CLASSES)
        self._open.append(skipped)
        self._skipping += skipped

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID_TAGS or not self._open:
            return
        self._skipping -= self._open.pop()

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.chunks.append(data)


def main_line_text(html: str) -> str:
    """The main line of a rendered page: its text outside folds, code, tables, figures, math."""
    parser = _MainLine()
    parser.feed(html)
    parser.close()
    return " ".join(parser.chunks)


def count(html: str) -> tuple[int, int]:
    """(words, mentions of "seed") on the main line of a rendered page."""
    text = main_line_text(html)
    return len(WORD.findall(text)), len(SEED.findall(text))


def reading_time(words: int) -> str:
    minutes = max(1, math.ceil(words / WORDS_PER_MINUTE))
    return (f"About {minutes} minutes to read: {words:,} words on the main line; "
            "the folded boxes hold the evidence.")


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if not page.file.src_uri.startswith("chapters/"):
        return html
    words, seeds = count(html)
    log.debug("main line of %s: %d words, %d mentions of seed", page.file.src_uri, words, seeds)
    return html.replace(PLACEHOLDER, f'<span class="reading-time" data-words="{words}">'
                                     f"{reading_time(words)}</span>")
