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


# Each image of the article: its address, the text of its figure's own caption (None when it is
# not in a <figure> with a <figcaption>), whether the image is shown (a figure may hold a light
# and a dark rendering, one of them hidden), and whether the caption is shown.
IMAGE_CAPTIONS = """images => images.map(image => {
    const figure = image.closest("figure");
    const caption = figure && figure.querySelector(":scope > figcaption");
    return [image.getAttribute("src"), caption && caption.textContent.trim(),
            image.checkVisibility(), !!caption && caption.checkVisibility()];
})"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_chapter_figure_has_a_visible_caption(visit, path):
    images = visit(path).page.eval_on_selector_all("article img", IMAGE_CAPTIONS)
    assert images, f"{path}: no figure found"
    uncaptioned = [source for source, caption, _, _ in images if not caption]
    assert uncaptioned == [], f"{path}: figures without a caption: {uncaptioned}"
    hidden = [source for source, _, shown, caption_shown in images if shown and not caption_shown]
    assert hidden == [], f"{path}: figures shown with their caption hidden: {hidden}"


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


DIAGRAM = re.compile(r"(_diagram|/alignment_model)(\.dark)?\.svg(#only-(light|dark))?$")


@pytest.mark.parametrize("path", ["chapters/rnn-recap/", "chapters/bahdanau/"])
def test_the_rnn_chapters_show_three_figures_or_more(visit, path):
    page = visit(path).page
    # Each figure holds a light and a dark image, one of them hidden: count the figures.
    assert page.eval_on_selector_all("article figure", "figures => figures.length") >= 3


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_diagram_is_shown_at_its_own_size_at_1280_px(visit, path):
    # A diagram's 10-point labels stay 10 points only if the column does not shrink it.
    page = visit(path).page
    sizes = page.eval_on_selector_all(  # the image of the scheme shown (the other is hidden)
        "article img", "images => images.filter(i => getComputedStyle(i).display !== 'none')"
        ".map(i => [i.currentSrc, i.naturalWidth, i.width])")
    diagrams = [(source, natural, shown) for source, natural, shown in sizes
                if DIAGRAM.search(source)]
    assert diagrams, "every chapter draws the architecture it teaches"
    for source, natural, shown in diagrams:
        assert shown >= 0.95 * natural, f"{source} shrunk from {natural} to {shown} px"


# --- figures follow the colour scheme; the home page -------------------------------------------

SCHEMES = {"light": ("default", ".svg#only-light"), "dark": ("slate", ".dark.svg#only-dark")}
"""The reader's preference -> Material's scheme, and how the address of a figure shown in it
ends."""

SHOWN_FIGURES = """images => images.map(image => [
    image.getAttribute('src'), getComputedStyle(image).display !== 'none',
    image.complete && image.naturalWidth > 0, image.alt,
    [...image.parentElement.children].indexOf(image), image.closest('figure') !== null])"""


def figure_images(page) -> list[list]:
    """Every figure image of the page's article: src, shown, loaded, alt, place, in <figure>."""
    return page.eval_on_selector_all("article img[src*='figures/']", SHOWN_FIGURES)


def assert_figures_shown_in(page, scheme: str) -> None:
    images = figure_images(page)
    assert images, "no figures"
    shown = [image for image in images if image[1]]
    assert len(shown) * 2 == len(images), "each figure shows exactly one of its two images"
    for source, _, loaded, alt, _, _ in shown:
        assert source.endswith(SCHEMES[scheme][1]), (scheme, source)
        assert loaded, f"{source} did not load"
        assert alt.strip(), f"{source} has no alt text"


@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("path", ["", *CHAPTERS])
def test_figures_follow_the_readers_colour_scheme(browser, base_url, path, scheme):
    # The palette's first option is "automatic": the scheme follows prefers-color-scheme.
    page = browser.new_page(color_scheme=scheme)
    try:
        page.goto(base_url + path, wait_until="networkidle")
        assert page.get_attribute("body", "data-md-color-scheme") == SCHEMES[scheme][0]
        assert_figures_shown_in(page, scheme)
        # The two images of a figure are siblings: a caption after them stays the figure's.
        pairs = {}
        for source, _, _, _, place, in_figure in figure_images(page):
            base = source.split("#")[0].removesuffix(".svg").removesuffix(".dark")
            pairs.setdefault(base, []).append((place, in_figure))
        for base, places in pairs.items():
            assert len(places) == 2 and abs(places[0][0] - places[1][0]) == 1, base
            assert places[0][1] == places[1][1], base
    finally:
        page.close()


def test_switching_the_scheme_switches_the_figures(browser, base_url):
    page = browser.new_page(color_scheme="light")
    try:
        page.goto(base_url + "chapters/qkv/", wait_until="networkidle")
        assert_figures_shown_in(page, "light")
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
        assert_figures_shown_in(page, "dark")
    finally:
        page.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_home_page_shows_a_model_and_a_map_of_the_chapters(browser, base_url, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(base_url, wait_until="networkidle")
        hero = page.eval_on_selector_all(
            "article > figure",
            "figures => figures.map(f => f.querySelector('figcaption')?.innerText)")
        assert hero and hero[0].strip(), "the first figure has no caption"
        cards = page.eval_on_selector_all(".chapter-map figure", """figures => figures.map(f => {
            const image =
            [...f.querySelectorAll('img')].find(i => getComputedStyle(i).display !== 'none');
            const caption = f.querySelector('figcaption').getBoundingClientRect();
            const box = image.getBoundingClientRect();
            return [f.querySelector('figcaption a').getAttribute('href'), image.naturalWidth > 0,
                    box.right <= caption.left + 1, box.bottom <= caption.top + 1];
        })""")
        assert [href for href, *_ in cards] == [f"{chapter}" for chapter in CHAPTERS_IN_ORDER]
        for href, loaded, beside, above in cards:
            assert loaded, href
            assert beside if width >= 1000 else above, (href, width)  # a row, or stacked
        overflow = page.evaluate("document.documentElement.scrollWidth - innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    finally:
        page.close()


CHAPTERS_IN_ORDER = ["chapters/rnn-recap/", "chapters/bahdanau/", "chapters/qkv/",
                     "chapters/self-attention/", "chapters/positional-encoding/",
                     "chapters/transformer/", "chapters/length-generalisation/",
                     "chapters/attention-at-scale/", "chapters/attention-over-images/",
                     "chapters/induction-heads/"]


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


_DISPLAY_MATH = """blocks => blocks.map(block => {
    const box = block.getBoundingClientRect();
    const formula = block.querySelector('.katex-html').getBoundingClientRect();
    return {text: block.innerText.slice(0, 40).replace(/\\s+/g, ' '),
            cutLeft: formula.left < box.left - 1,
            overflows: formula.right > box.right + 1,
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(block).overflowX)
                     && block.scrollWidth >= formula.right - box.left - 1};
})"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_display_math_fits_or_scrolls_inside_its_block_at_390_px(visit, path):
    """On a phone a formula wider than the column scrolls inside its own block, from its first
    symbol: none is cut on the left, and none runs off the screen unreachable."""
    page = visit(path).page
    page.set_viewport_size({"width": 390, "height": 900})
    page.wait_for_function("document.querySelectorAll('div.arithmatex .katex-html').length"
                           " == document.querySelectorAll('div.arithmatex').length")
    blocks = page.eval_on_selector_all("article div.arithmatex", _DISPLAY_MATH)
    for block in blocks:
        assert not block["cutLeft"], f"{path}: formula cut on the left: {block['text']!r}"
        assert block["scrolls"] or not block["overflows"], (
            f"{path}: formula wider than the screen and not scrollable: {block['text']!r}")


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
