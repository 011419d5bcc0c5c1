"""The site's MkDocs hooks (``docs/hooks/*.py``), loaded as modules for the tests to call.

MkDocs loads a hook from its file, not as part of a package; the tests do the same.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

HOOKS = Path(__file__).parents[1] / "docs" / "hooks"


def load_hook(name: str) -> ModuleType:
    """``docs/hooks/<name>.py``, executed as a module of its own (named ``<name>_hook``)."""
    spec = importlib.util.spec_from_file_location(f"{name}_hook", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
