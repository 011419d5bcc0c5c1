"""Each chapter's shape, counted in the built page as a reader sees it.

The main line is what a reader who opens no fold reads: the article's text without its folded
boxes (``<details>``), code, tables, figures and formulas. It stays within 2,500 words and five
mentions of "seed" (``CONTRIBUTING.md``, "Writing a chapter"); the page opens with a box that
says what the reader will be able to do and how long the main line takes, holds one "Open
questions" box, and ends with "What you can now do". The count here is made in the browser, apart
from the build's own count (``docs/hooks/main_line.py``), which the opening box shows: the two
must agree.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SITE = Path(os.environ.get("ATTNPRIMER_SITE_DIR", Path(__file__).parents[2] / "site"))
MAIN_LINE_CHAPTERS = sorted(f"chapters/{page.parent.name}/"
                            for page in (SITE / "chapters").glob("*/index.html"))
"""Every chapter of the built site (``test_site.py`` checks that there are chapters)."""

MAX_WORDS = 2500
MAX_SEED_MENTIONS = 5

_MAIN_LINE = r"""article => {
    const copy = article.cloneNode(true);
    // The reading time is left out: the build counts the words before it writes that sentence
    // (18 words, which on a short page exceed the 1 % the two counts may differ by).
    copy.querySelectorAll('details, pre, table, figure, script, style, svg, .arithmatex, '
                          + '.highlight, .headerlink, .reading-time')
        .forEach(node => node.remove());
    const walker = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
    const chunks = [];
    while (walker.nextNode()) chunks.push(walker.currentNode.nodeValue);
    const text = chunks.join(' ');
    const words = text.match(/[\p{L}\p{N}_]+(?:[-'’][\p{L}\p{N}_]+)*/gu) || [];
    const seeds = text.match(/\bseed/gi) || [];
    return {words: words.length, seeds: seeds.length};
}"""


@pytest.mark.parametrize("path", MAIN_LINE_CHAPTERS)
def test_the_main_line_is_within_the_limits(visit, path):
    page = visit(path).page
    counted = page.eval_on_selector("article", _MAIN_LINE)
    assert counted["words"] <= MAX_WORDS, f"{path}: {counted['words']} words on the main line"
    assert counted["seeds"] <= MAX_SEED_MENTIONS, (
        f"{path}: 'seed' {counted['seeds']} times on the main line")
    # The opening box's reading time is the build's own count of the same main line.
    stated = int(page.get_attribute("article .reading-time", "data-words"))
    assert abs(stated - counted["words"]) <= 0.01 * counted["words"], (stated, counted)


@pytest.mark.parametrize("path", MAIN_LINE_CHAPTERS)
def test_a_chapter_opens_with_its_aims_and_ends_with_what_the_reader_can_do(visit, path):
    page = visit(path).page
    first = page.eval_on_selector(
        "article", "a => { const box = a.querySelector('h1 ~ .admonition');"
                   " return box && [box.className, box.innerText,"
                   " box.previousElementSibling.tagName]; }")
    assert first is not None, f"{path}: no opening box"
    classes, text, before = first
    assert "abstract" in classes and before == "H1", (path, classes, before)
    assert "minutes to read" in text, f"{path}: the opening box gives no reading time"
    headings = page.eval_on_selector_all("article h2", "hs => hs.map(h => h.innerText.trim())")
    closing = [h for h in headings if h.startswith("What you can now do")]
    assert closing, f"{path}: no 'What you can now do' section in {headings}"
    points = page.eval_on_selector(
        "article", "a => { const h = [...a.querySelectorAll('h2')].find("
                   "h => h.innerText.startsWith('What you can now do'));"
                   " let n = h.nextElementSibling; while (n && !['OL', 'UL'].includes(n.tagName))"
                   " n = n.nextElementSibling; return n ? n.children.length : 0; }")
    assert points >= 3, f"{path}: 'What you can now do' lists {points} points"
    open_questions = page.eval_on_selector_all(
        "article details > summary, article .admonition > .admonition-title",
        "titles => titles.filter(t => t.innerText.trim().startsWith('Open questions')).length")
    assert open_questions == 1, f"{path}: {open_questions} 'Open questions' boxes"
