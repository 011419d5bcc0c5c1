"""The package's three layers: mechanisms at the top, then training, then the site.

A mechanism module (the top of the package, ``tasks/`` and ``models/``) imports nothing from
``attnprimer.training``, ``attnprimer.site`` or the command line; training imports nothing from
the site. No module imports, directly or through others, a module that imports it back. Imports
are read from the source (every ``import`` statement, inside functions too), as the code
fingerprints read them: ``from attnprimer.x import y`` names the package ``attnprimer.x`` and,
if it is one, the module ``attnprimer.x.y``; ``from attnprimer.x.y import z`` names ``x.y`` alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "src" / "attnprimer"


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(part for part in parts if part != "__init__")


MODULES = {_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str) -> set[str]:
    """The package modules ``name`` imports, by name."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _layer(name: str) -> str:
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in ("training", "site", "cli"):
        return parts[1]
    return "cli" if name == "attnprimer.__main__" else "mechanisms"


def test_the_layers_are_where_the_package_docstring_draws_them():
    layers = {_layer(name) for name in MODULES}
    assert layers == {"mechanisms", "training", "site", "cli"}
    assert _layer("attnprimer.masks") == "mechanisms" == _layer("attnprimer.tasks.counting")
    assert _layer("attnprimer.training.model_cache") == "training"
    assert _layer("attnprimer.site.figures.qkv") == "site"


@pytest.mark.parametrize("layer, forbidden", [
    ("mechanisms", {"training", "site", "cli"}),
    ("training", {"site", "cli"}),
    ("site", {"cli"}),
])
def test_no_layer_imports_from_a_layer_built_on_it(layer, forbidden):
    upward = sorted(f"{name} -> {imported}" for name in MODULES if _layer(name) == layer
                    for imported in GRAPH[name] if _layer(imported) in forbidden)
    assert upward == []


def _cycles() -> list[list[str]]:
    """Every import circle, each as the path that closes it (depth-first, each found once)."""
    found, state = [], {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for imported in sorted(GRAPH[name]):
            if state.get(imported) == "open":
                found.append([*path[path.index(imported):], imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[name] = "done"

    for name in sorted(MODULES):
        if name not in state:
            visit(name, [name])
    return found


def test_no_import_circles():
    assert _cycles() == []


def test_the_circle_finder_finds_a_circle(monkeypatch):
    # attnprimer.additive imports attnprimer.attention; the other way round closes a circle
    assert "attnprimer.attention" in GRAPH["attnprimer.additive"]
    monkeypatch.setitem(GRAPH, "attnprimer.attention",
                        GRAPH["attnprimer.attention"] | {"attnprimer.additive"})
    assert ["attnprimer.additive", "attnprimer.attention", "attnprimer.additive"] in _cycles()


def test_every_module_is_at_most_400_lines():
    long = {name: lines for name, path in MODULES.items()
            if (lines := path.read_text(encoding="utf-8").count("\n")) > 400}
    assert long == {}


def test_every_mechanism_module_names_the_chapters_it_serves():
    """A learner opens a mechanism module beside its chapter: its docstring says which."""
    chapters = ('"RNN recap"', '"Bahdanau attention"', '"Queries, keys and values"',
                '"Self-attention"', '"Positional encoding"', '"The Transformer"',
                '"Train short, test long"', '"Attention at scale"', '"Attention over images"',
                '"Induction heads"')
    missing = []
    for name, path in MODULES.items():
        if _layer(name) != "mechanisms" or name in ("attnprimer", "attnprimer.__main__"):
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not any(chapter in docstring for chapter in chapters):
            missing.append(name)
    assert missing == []
