"""Shared fixtures for the tests of the attention mechanisms."""

from __future__ import annotations

import os

import pytest
import torch

# The browser tests of the built site run in their own session (nox -s site_tests).
if not os.environ.get("ATTNPRIMER_SITE_TESTS"):
    collect_ignore = ["site"]

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


@pytest.fixture(scope="session")
def site_models():
    """The site's trained models: ``site_models(model)`` for a ``SiteModel`` of the catalogue,
    from the real cache, training what it lacks first.

    Missing models train in parallel (one per CPU), exactly as the docs build trains them, so
    the claims tests check the very models the pages show.
    """
    from attnprimer.cache import train_missing
    from attnprimer.site_models import SITE_MODELS, SiteModel
    from attnprimer.train import TrainedModel

    train_missing((model.task, model.config) for model in SITE_MODELS)
    loaded: dict[SiteModel, TrainedModel] = {}

    def get(model: SiteModel) -> TrainedModel:
        if model not in SITE_MODELS:
            raise LookupError(f"{model.label} is not a site model")
        if model not in loaded:
            loaded[model] = model.trained()
        return loaded[model]

    return get


@pytest.fixture
def temporary_cache(tmp_path, monkeypatch):
    """A test that trains caches into its own folder, never into the real cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="session")
def tiny():
    """A tiny counting model, trained once for the training, checkpoint and cache tests."""
    from attnprimer.train import train
    from tiny_models import TINY_CONFIG, TINY_TASK

    return train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of the package's source that the code fingerprints read instead of the real one:
    a test edits the copy to see what an edit would retrain or re-render."""
    import shutil

    import attnprimer.fingerprints as fingerprints

    copy = tmp_path / "attnprimer"
    shutil.copytree(fingerprints.ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fingerprints, "ROOT", copy)
    return copy


if os.environ.get("PYTEST_XDIST_WORKER"):  # one worker per core: two threads each would thrash
    torch.set_num_threads(1)
