"""MkDocs hook: remember highlighted code and formatted signatures between builds.

Every build highlights every code block again with Pygments (the chapters' code and, with
``show_source``, the source of every function in the API reference: about a thousand blocks)
and has Black lay out every long signature of the API reference: together about a second and
a half of a rebuild in which nothing changed. Both are pure functions of what they are given,
so this hook keeps their results in ``.cache/attnprimer/highlight.json``, keyed on everything
they are made from (the code, the lexer's and the formatter's class and options, or the
signature and line length; and the versions of Pygments, Black and Ruff), and hands them back
when the same input comes round again. The pages are the same, byte for byte
(``tests/test_highlight_cache.py`` checks the two functions, the docs build the rest).

One wrinkle: mkdocstrings stands each cross-reference in a signature in for a random name of
the same length while the signature is laid out and highlighted, and puts the link back
after. Those names differ on every build, so the hook renames them, in the order they appear,
to fixed ones of the same length for the key and the computation, and back in the result.

It wraps two things: ``pymdownx.highlight``'s call of Pygments' ``highlight`` (which
mkdocstrings' highlighter goes through as well) and mkdocstrings-python's
``_format_signature``. Should a future version move either, the hook says so once and leaves
it alone: the build is then only slower.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig

from attnprimer.training.files import write_atomically

CACHE = Path(".cache") / "attnprimer" / "highlight.json"  # relative to mkdocs.yml

log = logging.getLogger("mkdocs.hooks.highlight_cache")

_kept: dict[str, str] = {}  # key -> output, from the last build
_used: dict[str, str] = {}  # key -> output, this build
_path: Path | None = None


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


VERSIONS = {package: _version(package) for package in ("pygments", "black", "ruff",
                                                       "pymdown-extensions")}


def key(*made_from) -> str:
    """Everything one output is made from, hashed (objects without JSON are named by repr)."""
    text = json.dumps([VERSIONS, *made_from], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _kind_of(thing) -> str:
    return f"{type(thing).__module__}.{type(thing).__qualname__}"


def _stashed() -> list[str]:
    """The random names mkdocstrings stands the current signature's cross-references in for."""
    stash = getattr(getattr(_rendering, "do_stash_crossref", None), "stash", None)
    return list(stash) if stash else []


def renamed(text: str, stashed: list[str]) -> tuple[str, dict[str, str]] | None:
    """``text`` with the ``stashed`` names it holds renamed to fixed ones, in order of
    appearance (all at once, so a random name may be one of the fixed ones), and the way back;
    None if a fixed name would not fit or is a name of ``text`` that is not stashed."""
    names = re.findall(r"\b_[A-Za-z0-9]{2,}\b", text)
    found = dict.fromkeys(name for name in names if name in stashed)
    others = set(names) - set(found)
    fixed = {name: _fixed(index, len(name)) for index, name in enumerate(found)}
    if any(len(new) != len(old) or new in others for old, new in fixed.items()):
        return None
    return _swap(text, fixed), {new: old for old, new in fixed.items()}


DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _fixed(index: int, length: int) -> str:
    """The fixed name of the ``index``-th stashed name: ``_Q`` and ``index`` in base 62,
    padded to ``length`` (longer, if ``index`` does not fit)."""
    digits = ""
    while True:
        index, digit = divmod(index, len(DIGITS))
        digits = DIGITS[digit] + digits
        if not index:
            return "_Q" + digits.rjust(length - 2, "0")


def _swap(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    pattern = r"\b(?:" + "|".join(map(re.escape, names)) + r")\b"
    return re.sub(pattern, lambda match: names[match[0]], text)


def _remembered(text: str, compute, *made_from):
    """``compute(text)``, from the last build if it computed it (stashed names aside)."""
    stashed = _stashed()
    renaming = renamed(text, stashed) if stashed else (text, {})
    if renaming is None:
        return compute(text)
    text, back = renaming
    made = key(text, *made_from)
    if made not in _kept:
        _kept[made] = compute(text)
    _used[made] = _kept[made]
    return _swap(_kept[made], back)


def _highlight(code, lexer, formatter, outfile=None):
    if outfile is not None:  # written to a file, not returned: nothing to keep
        return _original_highlight(code, lexer, formatter, outfile)
    return _remembered(code, lambda text: _original_highlight(text, lexer, formatter),
                       "pygments", _kind_of(lexer), lexer.options, _kind_of(formatter),
                       formatter.options)


def _format_signature(name, signature: str, line_length: int) -> str:
    return _remembered(signature, lambda text: _original_signature(name, text, line_length),
                       "signature", str(name), line_length)


def _wrap(module_name: str, name: str, wrapper):
    """Put ``wrapper`` in place of ``name`` in the module ``module_name``; return the module
    and the original (None, None if either is missing: then the build is only slower).

    ``mkdocs serve`` loads the hooks again on every rebuild: the original is kept on the
    module, so a reload wraps it, never an earlier wrapper.
    """
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        module = None
    if module is None or not callable(getattr(module, name, None)):
        log.warning("highlight cache: no %s.%s to wrap; computing everything afresh",
                    module_name, name)
        return None, None
    kept_as = f"attnprimer_unwrapped_{name}"
    if not hasattr(module, kept_as):
        setattr(module, kept_as, getattr(module, name))
    setattr(module, name, wrapper)
    return module, getattr(module, kept_as)


_, _original_highlight = _wrap("pymdownx.highlight", "highlight", _highlight)
_rendering, _original_signature = _wrap("mkdocstrings_handlers.python._internal.rendering",
                                        "_format_signature", _format_signature)


def on_config(config: MkDocsConfig) -> None:
    global _path
    _path = Path(config.config_file_path).resolve().parent / CACHE
    _used.clear()
    _kept.clear()
    try:
        kept = json.loads(_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: compute everything
        return
    if isinstance(kept, dict):
        _kept.update(kept)


def on_post_build(config: MkDocsConfig) -> None:
    """Keep this build's outputs only, so the file does not grow with old code."""
    _path.parent.mkdir(parents=True, exist_ok=True)
    content = json.dumps(_used).encode()
    write_atomically(_path, lambda file: file.write(content))
