"""The main-line count of ``docs/hooks/main_line.py``: what a reader who opens no fold reads."""

from __future__ import annotations

from docs_hooks import load_hook

main_line = load_hook("main_line")

PAGE = """
<h1 id="t">Self-attention<a class="headerlink" href="#t">¶</a></h1>
<p>Every token reads every other, in three seeds.</p>
<details class="note"><summary>How we know</summary><p>seed 0 seed 1 seed 2 and more</p>
<details><summary>nested</summary><p>deeper words</p></details><p>still folded</p></details>
<div class="highlight"><pre><code>x = softmax(q @ k.T)</code></pre></div>
<table><tr><td>seed</td><td>0.99</td></tr></table>
<figure><img src="a.svg"><figcaption>A seed's map</figcaption></figure>
<p>The score <span class="arithmatex">\\(q \\cdot k\\)</span> is a dot product.<br>Seeds differ.</p>
"""


def test_the_main_line_leaves_out_folds_code_tables_figures_and_math():
    text = main_line.main_line_text(PAGE)
    assert "Every token reads every other" in text
    assert "The score" in text and "is a dot product" in text and "Seeds differ" in text
    for hidden in ("How we know", "deeper", "still folded", "softmax", "0.99", "map", "cdot", "¶"):
        assert hidden not in text, hidden


def test_words_and_seed_mentions_are_counted_on_the_main_line_only():
    words, seeds = main_line.count(PAGE)
    # Self-attention / Every token reads every other in three seeds / The score is a dot
    # product / Seeds differ
    assert (words, seeds) == (1 + 8 + 6 + 2, 2)


def test_the_placeholder_becomes_the_reading_time_on_chapters_only():
    class File:
        def __init__(self, src_uri):
            self.src_uri = src_uri

    class Page:
        def __init__(self, src_uri):
            self.file = File(src_uri)

    html = "<p>" + "word " * 401 + "</p>" + main_line.PLACEHOLDER
    built = main_line.on_page_content(html, Page("chapters/qkv.md"), None, None)
    assert 'data-words="401"' in built and "About 3 minutes to read" in built
    assert main_line.on_page_content(html, Page("index.md"), None, None) == html
