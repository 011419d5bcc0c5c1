"""The claims tests: what the pages say about the site's trained models, checked on those models.

``nox -s claims`` runs them (``pytest tests/claims``): it trains what the model cache lacks
first, with a line per model, then runs these tests on the very models the docs build shows.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def site_models():
    """The site's trained models: ``site_models(model)`` for a ``SiteModel`` of the catalogue,
    from the real cache, training what it lacks first.

    Missing models train in parallel (one per CPU), exactly as the docs build trains them, so
    the claims tests check the very models the pages show.
    """
    from attnprimer.site.catalogue import SITE_MODELS, SiteModel
    from attnprimer.training.model_cache import train_missing
    from attnprimer.training.train import TrainedModel

    train_missing((model.task, model.config) for model in SITE_MODELS)
    loaded: dict[SiteModel, TrainedModel] = {}

    def get(model: SiteModel) -> TrainedModel:
        if model not in SITE_MODELS:
            raise LookupError(f"{model.label} is not a site model")
        if model not in loaded:
            loaded[model] = model.trained()
        return loaded[model]

    return get
