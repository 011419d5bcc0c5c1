"""The catalogue of the site's trained models: its entries and its lookup by settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.site.catalogue import (
    DIFFERENCE_VARIANTS,
    ORIGINAL_COUNTING_RECIPE,
    REVERSAL_DECODERS,
    SEEDS,
    SITE_MODELS,
    SiteModel,
    site_model,
    site_seeds,
)
from attnprimer.tasks import CountingTask, SignalTask
from attnprimer.training.train import TrainConfig


def test_the_catalogue_has_no_duplicates_and_distinct_labels():
    assert len(set(SITE_MODELS)) == len(SITE_MODELS)
    assert len({model.label for model in SITE_MODELS}) == len(SITE_MODELS)


def test_every_entry_is_found_by_its_own_settings():
    for model in SITE_MODELS:
        settings = {**vars(model.task), **vars(model.config)}
        seed = settings.pop("seed")
        assert site_model(model.task.name, seed=seed, **settings) == model


def test_a_lookup_fills_in_the_task_defaults():
    model = site_model("signal", pos_enc="rotary", seed=1)
    assert model.task == SignalTask(pos_enc="rotary")
    assert model.config == TrainConfig(**{**SignalTask.train_defaults, "seed": 1})


def test_the_original_counting_recipe_is_its_own_entry():
    original = site_model("counting", **ORIGINAL_COUNTING_RECIPE)
    assert original != site_model("counting", seed=0)
    assert original.config == TrainConfig(**ORIGINAL_COUNTING_RECIPE, seed=0)


@pytest.mark.parametrize("task, settings, message", [
    ("signal", {"pos_enc": "learned", "seed": 7}, "no model signal pos_enc=learned seed=7"),
    ("counting", {"hidden": 32}, "no model counting hidden=32"),
    ("counting", {"steps": 10}, "no model counting steps=10"),
    ("sorting", {}, "unknown task 'sorting'"),
    ("signal", {"encoding": "learned"}, "signal has no setting encoding"),
])
def test_a_model_the_site_does_not_train_is_refused(task, settings, message):
    with pytest.raises(LookupError, match=message):
        site_model(task, **settings)


def test_the_refusal_lists_the_models_the_site_has():
    with pytest.raises(LookupError) as raised:
        site_model("reversal", decoder="peeky", seed=7)
    assert "reversal decoder=peeky seed=0" in str(raised.value)


def test_site_seeds_gives_every_seed_in_order():
    for settings in DIFFERENCE_VARIANTS.values():
        models = site_seeds("difference", **settings)
        assert [model.config.seed for model in models] == list(SEEDS)
        assert all(model.task == models[0].task for model in models)
    assert [model.config.seed for model in site_seeds("reversal", decoder="vanilla")] == [0, 1, 2]


def test_site_seeds_of_an_unknown_recipe_is_refused():
    with pytest.raises(LookupError, match="any seed"):
        site_seeds("counting", hidden=32)


def test_the_chapters_comparisons_have_three_seeds_each():
    assert len(SEEDS) >= 3
    assert len(site_seeds("counting")) == len(SEEDS)
    for encoding in POSITIONAL_ENCODINGS:
        assert len(site_seeds("signal", pos_enc=encoding)) == len(SEEDS)
    for settings in REVERSAL_DECODERS.values():
        assert len(site_seeds("reversal", **settings)) == len(SEEDS)


def test_a_label_names_what_differs_from_the_defaults():
    assert SiteModel.default(CountingTask(), 2).label == "counting seed=2"
    assert site_model("counting", **ORIGINAL_COUNTING_RECIPE).label == (
        "counting steps=2000 lr=0.01 schedule=constant seed=0")


def test_the_catalogue_imports_no_plotting_library():
    # The explorer export, the CLI and the labs' lookups read it; none of them should pay for
    # (or depend on) matplotlib.
    code = ("import sys, attnprimer.site.catalogue, attnprimer.site.explorer.export, "
            "attnprimer.cli; "
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_the_readme_counts_the_catalogue():
    # The README tells a new reader how long the first build trains, from this count.
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"trains {len(SITE_MODELS)} of them" in readme
