"""The exact match that training records: one teacher-forced pass gives greedy decoding's number.

``train`` records held-out exact match every ``eval_every`` steps. For a teacher-forced task it
runs the model once, fed the right outputs, instead of decoding greedily step by step; the two
must agree on every batch. Here on a model of its own; on the site's own sequence models, where
they make mistakes, in ``tests/claims/test_claims_train_monitor.py``.
"""

from __future__ import annotations

import torch

from attnprimer.site.catalogue import site_model
from attnprimer.tasks import CountingTask
from attnprimer.training.train import _correct, _exact_match, held_out_generator


def _greedy_exact_match(task, model, batch) -> float:
    return _correct(task, model, batch).all(dim=1).float().mean().item()


def test_the_model_is_left_as_it_was_found():
    # a model of its own: the site's models are shared by every test of the session
    task = site_model("reversal").task
    model = task.build_model()
    model.train()
    _exact_match(task, model, task.sample(5, held_out_generator()))
    assert model.training


def test_a_task_without_teacher_forcing_decodes_as_predict_does():
    task = CountingTask(hidden=8)
    torch.manual_seed(0)
    model = task.build_model()
    batch = task.sample(200, held_out_generator())
    assert not task.teacher_forced
    assert _exact_match(task, model, batch) == _greedy_exact_match(task, model, batch)
