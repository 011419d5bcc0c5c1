"""docs/hooks/search_cache.py: the search index a warm build writes is the one a cold build does.

The hook wraps mkdocs-material's ``SearchIndex.add_entry_from_context``; these tests feed the
wrapper and the plugin's own method the same pages and compare what each adds to the index.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from material.plugins.search import plugin as search_plugin

from docs_hooks import load_hook

hook = load_hook("search_cache")

HTML = """<h1 id="attention">Attention</h1><p>Every query reads a weighted average.</p>
<h2 id="masks">Masks</h2><p>A mask says who may look at whom.</p>"""


def _page(content=HTML, url="chapters/qkv/", meta=None):
    toc = [SimpleNamespace(id="attention", url="#attention", children=[
        SimpleNamespace(id="masks", url="#masks", children=[])])]
    return SimpleNamespace(content=content, url=url, title="QKV", toc=toc, meta=meta or {})


def _entries(add, *pages):
    index = search_plugin.SearchIndex()
    for page in pages:
        add(index, page)
    return index.entries


@pytest.fixture
def cache(tmp_path):
    config = SimpleNamespace(config_file_path=str(tmp_path / "mkdocs.yml"))
    hook.on_config(config)
    return config


def test_the_hook_wraps_the_plugins_method_once():
    assert search_plugin.SearchIndex.add_entry_from_context is hook._add_entry_from_context
    assert hook._original is search_plugin.SearchIndex.attnprimer_unwrapped
    reloaded = load_hook("search_cache")  # mkdocs serve loads the hooks again on every rebuild
    assert reloaded._original is hook._original


def test_cached_entries_are_the_plugins_entries(cache, monkeypatch):
    pages = [_page(), _page(url="chapters/other/", meta={"search": {"boost": 2}})]
    expected = _entries(hook._original, *pages)
    assert len(expected) == 4 and expected[2]["boost"] == 2
    assert _entries(hook._add_entry_from_context, *pages) == expected  # parsed, then kept
    hook.on_post_build(cache)
    hook.on_config(cache)  # the next build reads them back

    def no_parsing(*args, **kwargs):
        raise AssertionError("a kept page was parsed again")

    monkeypatch.setattr(search_plugin, "Parser", no_parsing)
    assert _entries(hook._add_entry_from_context, *pages) == expected


def test_a_changed_page_is_parsed_again(cache):
    _entries(hook._add_entry_from_context, _page())
    changed = _page(content=HTML.replace("weighted average", "weighted sum"))
    entries = _entries(hook._add_entry_from_context, changed)
    assert entries == _entries(hook._original, changed)
    assert "weighted sum" in entries[0]["text"]


def test_the_file_keeps_only_the_last_builds_pages(cache):
    _entries(hook._add_entry_from_context, _page(url="a/"), _page(url="b/"))
    hook.on_post_build(cache)
    hook.on_config(cache)
    _entries(hook._add_entry_from_context, _page(url="a/"))
    hook.on_post_build(cache)
    hook.on_config(cache)
    assert list(hook._kept) == [hook.page_key(_page(url="a/"))]


def test_an_unreadable_file_means_parsing_every_page(cache):
    Path(hook._path).parent.mkdir(parents=True, exist_ok=True)
    Path(hook._path).write_text("{not json", encoding="utf-8")
    hook.on_config(cache)
    assert hook._kept == {}
    assert _entries(hook._add_entry_from_context, _page()) == _entries(hook._original, _page())
