"""Every page of the built site, in a real browser, offline."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

SITE = Path(os.environ.get("ATTNPRIMER_SITE_DIR", Path(__file__).parents[2] / "site"))
PAGES = sorted(
    ("" if path.parent == SITE else path.parent.relative_to(SITE).as_posix() + "/")
    for path in SITE.rglob("index.html")
) if SITE.is_dir() else []
CHAPTERS = sorted(page for page in PAGES if page.startswith("chapters/"))


def test_the_site_has_the_chapters_and_the_reference():
    assert len(CHAPTERS) >= 5, CHAPTERS
    assert any(page.startswith("reference/") for page in PAGES)


@pytest.mark.parametrize("path", PAGES)
def test_the_page_loads_cleanly_offline_with_its_images_and_math(visit, path):
    visited = visit(path)
    assert visited.console_errors == [], visited.console_errors
    assert visited.failed == [], visited.failed
    assert visited.blocked == [], f"requests to other hosts: {visited.blocked}"
    page = visited.page
    sizes = page.eval_on_selector_all(
        "article img", "images => images.map(i => [i.currentSrc, i.naturalWidth, i.naturalHeight])")
    for source, width, height in sizes:
        assert width > 0 and height > 0, f"empty image {source}"
    formulas = page.eval_on_selector_all(".arithmatex", "nodes => nodes.length")
    typeset = page.eval_on_selector_all(".arithmatex .katex", "nodes => nodes.length")
    assert typeset == formulas, f"{typeset} of {formulas} formulas typeset"
    assert not re.search(r"\\\(|\\\[|\$\$", page.inner_text("article")), "raw TeX on the page"


def test_search_finds_softmax(visit):
    page = visit("").page
    page.click("input[data-md-component=search-query]")
    page.keyboard.type("softmax", delay=30)  # the search listens to key presses
    page.wait_for_selector(".md-search-result__item", timeout=10_000)
    assert "softmax" in page.inner_text(".md-search-result").lower()


def test_the_navigation_reaches_every_chapter(visit):
    page = visit("").page
    links = page.eval_on_selector_all("nav.md-nav--primary a[href]",
                                      "links => links.map(a => a.href)")
    reached = {link.split("/chapters/")[1] for link in links if "/chapters/" in link}
    assert {chapter.removeprefix("chapters/") for chapter in CHAPTERS} <= reached


LABS = sorted(page for page in PAGES if page.startswith("labs/") and page != "labs/")


def test_there_is_a_lab_per_chapter():
    assert [lab.removeprefix("labs/") for lab in LABS] == [
        chapter.removeprefix("chapters/") for chapter in CHAPTERS]


@pytest.mark.parametrize("path", LABS)
def test_a_lab_has_its_math_typeset_its_solutions_folded_and_its_notebook(visit, path):
    page = visit(path).page
    markdown = page.eval_on_selector_all(
        ".jupyter-wrapper .jp-RenderedMarkdown", "cells => cells.map(c => c.innerText)")
    assert markdown, "no Markdown cells rendered"
    assert not any("$" in text for text in markdown), "raw $...$ math left in a lab"
    assert page.eval_on_selector_all(".jp-RenderedMarkdown .katex", "nodes => nodes.length") > 0
    # Solutions: folded until opened, and each one ran (the cell after it has output).
    folded = page.eval_on_selector_all("details.lab-solution", "blocks => blocks.map(b => b.open)")
    assert all(is_open is False for is_open in folded)
    # The download: a notebook with no outputs, its solutions in Markdown.
    link = page.get_attribute("a.md-button[download]", "href")
    response = page.request.get(page.url + link)
    assert response.ok, link
    notebook = response.json()
    assert notebook["nbformat"] == 4
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["outputs"] == [] for cell in code)
    how = page.get_attribute(".lab-download a[href*='#']", "href")  # how to run it
    address, anchor = how.split("#")
    assert f'id="{anchor}"' in page.request.get(page.url + address).text()
    assert len(folded) == sum("".join(cell["source"]).startswith("<details>")
                              for cell in notebook["cells"] if cell["cell_type"] == "markdown")


# --- chapter code: the teaching lines, within the column ---------------------------------------

_WIDE_LINES = """blocks => blocks.flatMap(code => {
    if (code.scrollWidth <= code.clientWidth) return [];
    const style = getComputedStyle(code);
    const room = code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const probe = document.createElement('span');  // the width of one monospace character
    probe.textContent = 'x'.repeat(100);
    code.appendChild(probe);
    const char = probe.getBoundingClientRect().width / 100;
    probe.remove();
    const lines = code.innerText.split('\\n');
    const wide = lines.find(line => line.length * char > room + 0.5);
    return [wide === undefined ? lines[0] : wide];
})"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_no_chapter_code_block_scrolls_sideways_at_1280_px(visit, path):
    page = visit(path).page
    page.set_viewport_size({"width": 1280, "height": 900})
    assert page.eval_on_selector_all("article pre > code", "blocks => blocks.length") > 0
    wide = page.eval_on_selector_all("article pre > code", _WIDE_LINES)
    assert wide == [], f"{path}: {len(wide)} code blocks scroll sideways; the first: {wide[0]!r}"


@pytest.mark.parametrize("path", CHAPTERS)
def test_chapter_code_shows_no_docstring_and_links_to_the_reference(visit, path):
    page = visit(path).page
    code = page.eval_on_selector_all("article pre > code", "blocks => blocks.map(b => b.innerText)")
    for text in code:
        assert "][attnprimer." not in text, f"raw cross-reference syntax in code on {path}"
        assert '"""' not in text and ">>>" not in text, f"a docstring in code on {path}"
    # Every block from the package is followed by the link to its API reference.
    links = page.eval_on_selector_all(
        "article .highlight:has(> .filename)",
        """blocks => blocks.filter(b => b.querySelector('.filename').innerText.startsWith('src/'))
            .map(b => { const next = b.nextElementSibling;
                        return next && next.matches('p.code-reference')
                            ? [...next.querySelectorAll('a[href*="reference/"]')].length : 0; })""")
    assert links and all(count > 0 for count in links), f"{path}: {links}"
