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
    """The site's trained models, by label: from the real cache, training what it lacks first.

    Missing models train in parallel (one per CPU), exactly as the docs build trains them, so
    the claims tests check the very models the pages show.
    """
    from attnprimer.figures import SITE_MODELS
    from attnprimer.train import TrainedModel, get_trained, train_missing

    train_missing(SITE_MODELS.values())
    loaded: dict[str, TrainedModel] = {}

    def get(label: str) -> TrainedModel:
        if label not in loaded:
            loaded[label] = get_trained(*SITE_MODELS[label])
        return loaded[label]

    return get
