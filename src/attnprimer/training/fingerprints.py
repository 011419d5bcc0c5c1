"""Fingerprints of code: what every cache of the package keys on.

A fingerprint covers the syntax tree Python runs, without docstrings, attribute docstrings included
([`code_fingerprint`][attnprimer.training.fingerprints.code_fingerprint]), of a module and of every
package module it imports, followed import by import
([`dependencies`][attnprimer.training.fingerprints.dependencies]): the set is derived from the
``import`` statements, never kept by hand.
[`fingerprint`][attnprimer.training.fingerprints.fingerprint] keys the trained models
([`attnprimer.training.model_cache`][attnprimer.training.model_cache]), the rendered figures (one
chapter's figure module and what it imports) and the executed labs (the whole package,
[`package_fingerprint`][attnprimer.training.fingerprints.package_fingerprint]).

Nothing here imports torch: the docs build reads these on a rebuild where nothing changed.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from attnprimer.training.files import cache_dir, write_atomically

__all__ = ["PACKAGE", "PARSES_FILE", "ROOT", "code_fingerprint", "current_outputs", "dependencies",
           "fingerprint", "module_path", "package_fingerprint", "record_outputs"]

PACKAGE = "attnprimer"
ROOT = Path(__file__).parent.parent  # the package: attnprimer/, one above training/


def code_fingerprint(source: str) -> str:
    r"""What Python runs of ``source``: its syntax tree without docstrings (comments never get in).

    Every statement that is a string and nothing else goes: the docstrings of modules,
    classes and functions, and the attribute docstrings after an assignment, which the API
    reference publishes. Python evaluates such a statement to nothing.

    Examples:
        >>> code_fingerprint('def f():\n    "Doc."\n    return 1  # one') == code_fingerprint(
        ...     "def f():\n    return 1")
        True
        >>> code_fingerprint('x = 1\n"What x is."') == code_fingerprint("x = 1")
        True
        >>> code_fingerprint("x = 1") == code_fingerprint("x = 2")
        False
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements:
                kept = [statement for statement in statements if not _is_string(statement)]
                setattr(node, field, kept or [ast.Pass()])
    return ast.dump(tree)


def _is_string(statement: ast.AST) -> bool:
    """A statement that is a string constant and nothing else (a docstring, wherever it is)."""
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def module_path(name: str) -> Path | None:
    """The source file of package module ``name`` (``attnprimer.x.y``), or None if there is none.

    Examples:
        >>> module_path("attnprimer.tasks.counting").relative_to(ROOT).as_posix()
        'tasks/counting.py'
        >>> module_path("attnprimer.tasks").name, module_path("attnprimer.nothing") is None
        ('__init__.py', True)
    """
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = [part for part in relative.parts if part != "__init__"]
    return ".".join([PACKAGE, *parts])


@functools.cache
def _parsed(path: Path, stamp: tuple[int, int]) -> tuple[str, frozenset[str]]:
    """A module file's fingerprint and the package modules it imports, anywhere in its code.

    ``stamp`` (modification time, size) makes an edited file parse again. Parsing the whole
    package takes most of a second, which every process (a docs build, each test worker, each
    ``attnprimer`` command) would pay: results are also kept on disk, keyed by the file's bytes
    and by this module's own source, so that a change in how a fingerprint is taken parses
    every file again instead of mixing old fingerprints with new.
    """
    source = path.read_text(encoding="utf-8")
    name = _module_name(path)
    key = hashlib.sha256(_PARSER + source.encode()).hexdigest()
    kept = _kept_parses().get(name)
    if kept is not None and kept[0] == key:
        return kept[1], frozenset(kept[2])
    result = _parse(source, name, path)
    _keep_parse(name, key, result)
    return result


def _parse(source: str, name: str, path: Path) -> tuple[str, frozenset[str]]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from ..x import y
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            imported.add(base)
            imported.update(f"{base}.{alias.name}" for alias in node.names)  # submodules
    found = frozenset(name for name in imported if module_path(name) is not None)
    return code_fingerprint(source), found


_PARSER = Path(__file__).read_bytes()  # this module: how a parse is made

PARSES_FILE = "parsed-modules.json"
"""The file in [`cache_dir`][attnprimer.training.files.cache_dir] that keeps each module's parse."""


@functools.cache
def _kept_parses() -> dict[str, list]:
    """The parses kept on disk by earlier processes (empty if none can be read)."""
    try:
        kept = json.loads((cache_dir() / PARSES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _keep_parse(name: str, key: str, result: tuple[str, frozenset[str]]) -> None:
    """Remember one module's parse in this process; `_save_parses` writes them to disk."""
    _kept_parses()[name] = [key, result[0], sorted(result[1])]
    _unsaved.add(name)


_unsaved: set[str] = set()  # modules parsed by this process since the file was last written


def _save_parses() -> None:
    """Write the kept parses, if any are new and the cache folder can be written (else skip)."""
    if not _unsaved:
        return
    content = json.dumps(_kept_parses(), sort_keys=True).encode()
    _unsaved.clear()
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        write_atomically(cache_dir() / PARSES_FILE, lambda file: file.write(content))
    except OSError:
        pass  # a cache that cannot be written only costs the parse next time


def _read(name: str) -> tuple[str, frozenset[str]]:
    path = module_path(name)
    status = path.stat()
    return _parsed(path, (status.st_mtime_ns, status.st_size))


def dependencies(*modules: str, leaves: Iterable[str] = ()) -> tuple[str, ...]:
    """``modules`` and every package module they import, directly or not, sorted.

    A package's ``__init__`` counts when it is imported by name (``from attnprimer.tasks
    import X``), not when one of its submodules is (``from attnprimer.tasks.base import X``):
    what a model is built from is what its code names. A module in ``leaves`` counts, but what
    it imports does not, unless something else imports it too.

    Examples:
        >>> deps = dependencies("attnprimer.tasks.counting")
        >>> "attnprimer.models.counting" in deps, "attnprimer.positional" in deps
        (True, False)
        >>> "attnprimer.positional" in dependencies("attnprimer.tasks.signal")
        True
        >>> cache = "attnprimer.training.model_cache"
        >>> "attnprimer.tasks.signal" in dependencies(cache), dependencies(cache, leaves=[cache])
        (True, ('attnprimer.training.model_cache',))
    """
    leaves = frozenset(leaves)
    seen: set[str] = set()
    waiting = list(modules)
    while waiting:
        name = waiting.pop()
        if name in seen:
            continue
        if module_path(name) is None:
            raise ValueError(f"{name!r} is not a module of the {PACKAGE} package")
        seen.add(name)
        if name not in leaves:
            waiting.extend(_read(name)[1])
    _save_parses()
    return tuple(sorted(seen))


def fingerprint(*modules: str, leaves: Iterable[str] = ()) -> str:
    """A hash of the code of ``modules`` and of everything they import from the package (but
    not of what the modules in ``leaves`` import:
    [`dependencies`][attnprimer.training.fingerprints.dependencies]).

    Examples:
        >>> fingerprint("attnprimer.masks") == fingerprint("attnprimer.masks")
        True
        >>> fingerprint("attnprimer.masks") == fingerprint("attnprimer.positional")
        False
    """
    digest = hashlib.sha256()
    for name in dependencies(*modules, leaves=leaves):
        digest.update(name.encode())
        digest.update(_read(name)[0].encode())
    return digest.hexdigest()


def package_fingerprint() -> str:
    """A hash of the whole package's code: what a lab, which may use anything, is keyed on."""
    modules = sorted(_module_name(path) for path in ROOT.rglob("*.py"))
    return fingerprint(*modules)


# --- a build step's record of what it made ------------------------------------------------------


def record_outputs(stamp: str | os.PathLike, inputs: Iterable[Path],
                   outputs: Iterable[Path]) -> None:
    """Write ``stamp``: the package's fingerprint, and the size and time of every file in
    ``inputs`` and ``outputs``, so that
    [`current_outputs`][attnprimer.training.fingerprints.current_outputs]
    can tell, without importing torch, that nothing has changed since."""
    outputs = list(outputs)
    files = [*inputs, *outputs]
    data = {"package": package_fingerprint(),
            "files": {str(path): _status(path) for path in files},
            "outputs": [str(path) for path in outputs]}
    Path(stamp).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(Path(stamp), lambda file: file.write(json.dumps(data).encode()))


def current_outputs(stamp: str | os.PathLike) -> list[Path] | None:
    """The outputs ``stamp`` records, if the package's code (docstrings aside) and every file
    it records are as they were when it was written; None otherwise, or if there is no stamp.

    Examples:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> made = folder / "figure.svg"
        >>> _ = made.write_text("<svg/>")
        >>> record_outputs(folder / "stamp.json", inputs=[], outputs=[made])
        >>> current_outputs(folder / "stamp.json") == [made]
        True
        >>> _ = made.write_text("<svg></svg>")            # an output changed since
        >>> current_outputs(folder / "stamp.json") is None
        True
    """
    try:
        data = json.loads(Path(stamp).read_text(encoding="utf-8"))
        if data["package"] != package_fingerprint():
            return None
        if any(_status(Path(path)) != status for path, status in data["files"].items()):
            return None
        return [Path(path) for path in data["outputs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _status(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_mtime_ns, status.st_size]
