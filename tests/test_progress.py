"""Progress lines while models train: one as each finishes, with an estimate of what is left,
and a run started again after an interruption trains only what is still missing."""

from __future__ import annotations

import json

import pytest

from attnprimer.training.model_cache import cached_path, train_missing
from attnprimer.training.progress import (
    TrainingProgress,
    describe,
    estimated_seconds,
    recorded_times,
    reference_times,
)
from attnprimer.training.train import TrainConfig
from tiny_models import TINY_CONFIG, TINY_TASK

pytestmark = pytest.mark.usefixtures("temporary_cache")

OTHER = TrainConfig(steps=30, seed=1)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_describe_names_the_task_and_what_differs_from_its_defaults():
    assert describe(TINY_TASK, TINY_CONFIG) == "counting hidden=8 steps=30 lr=0.01 seed=0"
    defaults = TrainConfig(**{**type(TINY_TASK).train_defaults, "seed": 2})
    assert describe(type(TINY_TASK)(), defaults) == "counting seed=2"


def test_each_line_counts_and_estimates_from_the_recorded_times(temporary_cache):
    temporary_cache.mkdir()
    records = TrainingProgress([], workers=1)  # only to learn the record's keys
    records.done((TINY_TASK, TINY_CONFIG), 20.0)
    records.done((TINY_TASK, OTHER), 40.0)
    assert sorted(recorded_times().values()) == [20.0, 40.0]

    lines, clock = [], Clock()
    progress = TrainingProgress([(TINY_TASK, TINY_CONFIG), (TINY_TASK, OTHER)], workers=1,
                                report=lines.append, clock=clock)
    progress.started()
    assert lines == [("training 2 models the cache lacks, 1 at a time (about 1 min); "
                      "a line as each finishes")]
    clock.now += 10
    progress.done((TINY_TASK, TINY_CONFIG), 10.0)  # half its recorded 20 s: so will the next be
    assert lines[-1] == ("trained 1/2 (counting hidden=8 steps=30 lr=0.01 seed=0, 10.0 s) 0:10 "
                         "elapsed, about 20 s left")
    clock.now += 395
    progress.done((TINY_TASK, OTHER), 30.0)
    assert lines[-1] == ("trained 2/2 (counting hidden=8 steps=30 lr=0.01 seed=1, 30.0 s) 6:45 "
                         "elapsed")
    assert sorted(recorded_times().values()) == [10.0, 30.0]  # the newest times are kept


def test_without_a_record_the_estimate_comes_from_the_cost_per_step():
    progress = TrainingProgress([(TINY_TASK, TINY_CONFIG), (TINY_TASK, OTHER)], workers=2)
    assert progress.expected[(TINY_TASK, OTHER)] == estimated_seconds(TINY_TASK, OTHER) > 0
    assert progress.seconds_left() == pytest.approx(estimated_seconds(TINY_TASK, OTHER))


def test_a_damaged_record_is_an_empty_one(temporary_cache):
    temporary_cache.mkdir()
    (temporary_cache / "training-times.json").write_text("{half")
    assert recorded_times() == {}
    (temporary_cache / "training-times.json").write_text(json.dumps([1, 2]))
    assert recorded_times() == {}


def test_train_missing_reports_a_line_per_model():
    lines = []
    train_missing([(TINY_TASK, TINY_CONFIG), (TINY_TASK, OTHER)], workers=1, report=lines.append)
    assert lines[0].startswith("training 2 models the cache lacks, 1 at a time")
    assert [line.split(" (")[0] for line in lines[1:]] == ["trained 1/2", "trained 2/2"]
    assert lines[1].endswith(" left") and "left" not in lines[2]


def test_an_interrupted_run_started_again_trains_only_what_is_missing():
    specs = [(TINY_TASK, TINY_CONFIG), (TINY_TASK, OTHER)]

    def interrupt_after_the_first(line: str) -> None:
        if line.startswith("trained 1/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_missing(specs, workers=1, report=interrupt_after_the_first)
    done = [spec for spec in specs if cached_path(*spec).is_file()]
    assert len(done) == 1  # the first model finished and stays cached

    lines = []
    assert train_missing(specs, workers=1, report=lines.append) == [
        spec for spec in specs if spec not in done]
    assert lines[0].startswith("training 1 model the cache lacks")
    assert lines[-1].startswith("trained 1/1 (")
    assert train_missing(specs, workers=1, report=lines.append) == []  # all cached: silent
    assert len(lines) == 2


def test_each_task_is_scaled_by_how_its_own_finished_models_compared():
    from attnprimer.tasks import DifferenceTask

    other_task = DifferenceTask(hidden=8)
    counting = [(TINY_TASK, TINY_CONFIG), (TINY_TASK, OTHER)]
    difference = [(other_task, TINY_CONFIG), (other_task, OTHER)]
    progress = TrainingProgress([*counting, *difference], workers=1, report=lambda line: None)
    progress.expected = dict.fromkeys(progress.specs, 10.0)  # every model expected to take 10 s
    progress.done(counting[0], 30.0)  # three times its estimate: so, for now, is every task
    assert progress.seconds_left() == pytest.approx(3 * 30.0)
    progress.done(difference[0], 5.0)  # difference models take half theirs
    assert progress.seconds_left() == pytest.approx(30.0 + 5.0)


def test_a_model_never_trained_here_is_estimated_from_the_reference_build():
    from attnprimer.site.catalogue import site_model

    model = site_model("counting", seed=0)
    spec = (model.task, model.config)
    progress = TrainingProgress([spec], workers=1)
    assert model.label in reference_times()
    assert progress.expected[spec] == reference_times()[model.label] != estimated_seconds(*spec)
