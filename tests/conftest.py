"""Shared fixtures for the tests of the attention mechanisms.

The tests come in three sessions, by folder: ``nox -s tests`` runs everything here that needs
no site model (``pytest`` alone runs the same); ``nox -s claims`` runs ``tests/claims/``, the
claims of the pages checked on the site's trained models (``pytest tests/claims``); ``nox -s
site_tests`` runs ``tests/site/`` on the built site. The ``site_models`` fixture exists only
in ``tests/claims/conftest.py``, so a test elsewhere that asks for a site model fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

CLAIMS = Path(__file__).parent / "claims"
"""The claims tests' folder: collected only when it (or a file in it) is named."""

# The browser tests of the built site run in their own session (nox -s site_tests).
if not os.environ.get("ATTNPRIMER_SITE_TESTS"):
    collect_ignore = ["site"]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out ``tests/claims`` unless the command line names it or something in it."""
    if collection_path != CLAIMS:
        return None
    named = (Path(arg.split("::")[0]).resolve() for arg in config.args)
    return not any(path.is_relative_to(CLAIMS) for path in named) or None

# The acceptance tolerances: float64 to 1e-10, float32 to 1e-5 (both atol and rtol).
ATTENTION_TOLERANCES = {torch.float64: 1e-10, torch.float32: 1e-5}


@pytest.fixture(params=[torch.float64, torch.float32], ids=["float64", "float32"])
def float_dtype(request: pytest.FixtureRequest) -> torch.dtype:
    """Each floating dtype the attention mechanisms are checked in."""
    return request.param


@pytest.fixture
def float_tol(float_dtype: torch.dtype) -> dict[str, float]:
    """``atol``/``rtol`` keyword arguments for ``torch.testing.assert_close`` at ``float_dtype``."""
    tolerance = ATTENTION_TOLERANCES[float_dtype]
    return {"atol": tolerance, "rtol": tolerance}


@pytest.fixture
def generator() -> torch.Generator:
    """A freshly seeded CPU generator, so each test draws the same tensors every run."""
    return torch.Generator().manual_seed(20240521)


@pytest.fixture
def temporary_cache(tmp_path, monkeypatch):
    """A test that trains caches into its own folder, never into the real cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="session")
def tiny():
    """A tiny counting model, trained once for the training, checkpoint and cache tests."""
    from attnprimer.training.train import train
    from tiny_models import TINY_CONFIG, TINY_TASK

    return train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of the package's source that the code fingerprints read instead of the real one:
    a test edits the copy to see what an edit would retrain or re-render."""
    import shutil

    import attnprimer.training.fingerprints as fingerprints

    copy = tmp_path / "attnprimer"
    shutil.copytree(fingerprints.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprints, "ROOT", copy)
    return copy


if os.environ.get("PYTEST_XDIST_WORKER"):  # one worker per core: two threads each would thrash
    torch.set_num_threads(1)
