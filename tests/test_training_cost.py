"""The bench's training-step cost: one model of each kind, and what batching seeds can gain.

Timings are printed by ``nox -s bench``, never asserted here.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.bench import training_step_cost as training_cost
from attnprimer.site.bench.training_step_cost import StepCost, architectures, step_seconds
from attnprimer.site.catalogue import SITE_MODELS, site_model


def test_every_task_the_site_trains_is_measured_once_per_kind():
    models = architectures()
    assert len(set(models)) == len(models) == len(training_cost.ARCHITECTURES)
    assert all(model in SITE_MODELS for model in models)
    assert {model.task.name for model in models} == {model.task.name for model in SITE_MODELS}


def test_the_best_speed_up_is_three_steps_over_the_tripled_batchs_cost():
    overhead_only = StepCost("x", 10, seconds=0.002, seconds_tripled=0.002)
    arithmetic_only = StepCost("x", 10, seconds=0.002, seconds_tripled=0.006)
    between = StepCost("x", 10, seconds=0.002, seconds_tripled=0.004)
    assert (overhead_only.ratio, overhead_only.best_speed_up) == (1.0, 3.0)
    assert (arithmetic_only.ratio, arithmetic_only.best_speed_up) == (3.0, 1.0)
    assert (between.ratio, between.best_speed_up) == (2.0, 1.5)


def test_a_step_runs_the_tasks_loss_in_training_mode_on_one_thread(monkeypatch):
    seen = []
    model = site_model("counting")
    original = type(model.task).loss

    def loss(task, network, batch):
        seen.append((batch.inputs.shape[0], network.training, torch.get_num_threads()))
        return original(task, network, batch)

    monkeypatch.setattr(type(model.task), "loss", loss)
    assert step_seconds(model, batch_size=6, steps=2, warmup=1) > 0
    assert seen == [(6, True, 1)] * 3  # the warm-up step too, in training mode, one thread


@pytest.mark.parametrize("steps, warmup", [(0, 1), (1, -1)])
def test_a_step_count_that_measures_nothing_is_refused(steps, warmup):
    with pytest.raises(ValueError, match="steps must be positive"):
        step_seconds(site_model("counting"), batch_size=4, steps=steps, warmup=warmup)


def test_main_prints_one_row_per_model_with_its_ratio(monkeypatch, capsys):
    monkeypatch.setattr(training_cost, "step_cost",
                        lambda model: StepCost(model.label, model.config.batch_size,
                                               0.010, 0.025))
    training_cost.main()
    rows = capsys.readouterr().out.splitlines()[3:]
    assert [row.split("  ")[0] for row in rows] == [model.label for model in architectures()]
    assert all(row.split()[-4:] == ["10.00", "25.00", "2.50", "1.20x"] for row in rows)
