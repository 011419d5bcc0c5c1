"""The tests come in sessions by folder: a test that asks for a site model is a claims test.

``nox -s tests`` must finish in a minute from a fresh clone, so nothing it runs may train one of
the site's models; ``nox -s claims`` runs ``tests/claims``, where the ``site_models`` fixture
lives. These tests check the split itself.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import SimpleNamespace

TESTS = Path(__file__).parent
CLAIMS = TESTS / "claims"


def _askers(paths) -> list[str]:
    """The functions (tests and fixtures) of ``paths`` with a ``site_models`` parameter."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = {arg.arg for arg in node.args.args + node.args.kwonlyargs}
                if "site_models" in names:
                    found.append(f"{path.relative_to(TESTS)}::{node.name}")
    return found


def test_every_test_that_asks_for_site_models_is_a_claims_test():
    outside = [path for path in TESTS.rglob("*.py") if CLAIMS not in path.parents]
    assert _askers(outside) == []
    assert len(_askers(CLAIMS.glob("test_*.py"))) > 20  # the scan finds them where they are


def test_the_claims_folder_holds_claims_tests_and_their_fixture_only():
    names = sorted(path.name for path in CLAIMS.glob("*.py"))
    assert "conftest.py" in names
    assert [name for name in names if name != "conftest.py"
            and not name.startswith("test_claims_")] == []
    assert "def site_models(" in (CLAIMS / "conftest.py").read_text(encoding="utf-8")
    assert "def site_models(" not in (TESTS / "conftest.py").read_text(encoding="utf-8")


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plain_pytest_leaves_the_claims_out_and_naming_them_runs_them():
    ignore = _root_conftest().pytest_ignore_collect

    def ignored(*args: str) -> bool | None:
        return ignore(CLAIMS, SimpleNamespace(args=list(args)))

    repository = TESTS.parent
    assert ignored(str(repository / "src" / "attnprimer"), str(TESTS)) is True  # the testpaths
    assert ignored(str(CLAIMS)) is None
    assert ignored(str(CLAIMS / "test_claims_qkv.py") + "::test_something") is None
    assert ignore(TESTS / "test_cache.py", SimpleNamespace(args=[str(TESTS)])) is None
