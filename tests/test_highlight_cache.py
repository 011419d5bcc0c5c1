"""docs/hooks/highlight_cache.py: what a warm build hands back is what a cold build computes.

The hook wraps Pygments' ``highlight`` as pymdownx calls it and mkdocstrings-python's
``_format_signature``; these tests call the wrappers and the originals on the same input and
compare, and check that a second call computes nothing, even when mkdocstrings has stood the
signature's cross-references in for other random names.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from docs_hooks import load_hook

hook = load_hook("highlight_cache")

CODE = "def attend(query, key, value):\n    return softmax(query @ key.T) @ value\n"


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    """An empty cache file in a folder of its own, and no cross-references stashed."""
    (tmp_path / "mkdocs.yml").write_text("site_name: test\n")
    hook.on_config(SimpleNamespace(config_file_path=str(tmp_path / "mkdocs.yml")))
    monkeypatch.setattr(hook._rendering.do_stash_crossref, "stash", {})
    return tmp_path


def _counting(monkeypatch, name):
    calls = []
    original = getattr(hook, name)
    monkeypatch.setattr(hook, name, lambda *args: calls.append(args) or original(*args))
    return calls


def test_the_wrapper_is_in_place_of_what_pymdownx_calls():
    from pymdownx import highlight as pymdownx_highlight

    assert pymdownx_highlight.highlight is hook._highlight


@pytest.mark.parametrize("options", [{}, {"linenos": "table", "cssclass": "source"}])
def test_highlighting_is_pygments_own_and_computed_once(monkeypatch, options):
    calls = _counting(monkeypatch, "_original_highlight")
    expected = highlight(CODE, PythonLexer(), HtmlFormatter(**options))
    assert hook._highlight(CODE, PythonLexer(), HtmlFormatter(**options)) == expected
    assert hook._highlight(CODE, PythonLexer(), HtmlFormatter(**options)) == expected
    assert len(calls) == 1


def test_other_formatter_options_are_another_entry(monkeypatch):
    calls = _counting(monkeypatch, "_original_highlight")
    plain = hook._highlight(CODE, PythonLexer(), HtmlFormatter())
    numbered = hook._highlight(CODE, PythonLexer(), HtmlFormatter(linenos="table"))
    assert plain != numbered and len(calls) == 2


def _signature(stash: dict[str, str]) -> str:
    """A signature as mkdocstrings lays it out: cross-references stood in for by stash keys."""
    query, tensor = list(stash)
    return f"(query: {tensor}, key: {tensor}, mask: {query} = None) -> {tensor}"


def test_a_signature_with_other_random_names_is_found_and_given_its_own(monkeypatch):
    calls = _counting(monkeypatch, "_original_signature")
    first = {"_a8Zq": "Mask", "_Kp01Rz": "Tensor"}
    second = {"_Q1x9": "Mask", "_Q0abcd": "Tensor"}  # random names can look like fixed ones
    for stash in (first, second):
        monkeypatch.setattr(hook._rendering.do_stash_crossref, "stash", stash)
        expected = hook._original_signature("attnprimer.attend", _signature(stash), 40)
        assert hook._format_signature("attnprimer.attend", _signature(stash), 40) == expected
    assert len(calls) == 3  # the two expectations, and the first build's miss


def test_renaming_is_in_order_of_appearance_and_goes_back():
    text = "(a: _xY3, b: _k9, c: _xY3) -> _k9"
    renamed, back = hook.renamed(text, ["_k9", "_xY3"])
    assert renamed == "(a: _Q00, b: _Q1, c: _Q00) -> _Q1"
    assert hook._swap(renamed, back) == text


def test_a_fixed_name_that_the_code_uses_itself_is_not_renamed_to():
    assert hook.renamed("(a: _Q0, b: _k9)", ["_k9"]) is None


def test_the_file_holds_the_last_builds_entries_only(fresh):
    hook._highlight(CODE, PythonLexer(), HtmlFormatter())
    config = SimpleNamespace(config_file_path=str(fresh / "mkdocs.yml"))
    hook.on_post_build(config)
    hook.on_config(config)  # the next build: nothing highlighted yet
    hook.on_post_build(config)
    assert (fresh / hook.CACHE).read_text() == "{}"


def test_an_unreadable_file_means_computing_afresh(fresh, monkeypatch):
    (fresh / hook.CACHE).parent.mkdir(parents=True, exist_ok=True)
    (fresh / hook.CACHE).write_text("not json")
    hook.on_config(SimpleNamespace(config_file_path=str(fresh / "mkdocs.yml")))
    calls = _counting(monkeypatch, "_original_highlight")
    hook._highlight(CODE, PythonLexer(), HtmlFormatter())
    assert len(calls) == 1
