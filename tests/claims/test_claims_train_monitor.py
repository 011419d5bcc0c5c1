"""The exact match that training records: one teacher-forced pass gives greedy decoding's number.

``train`` records held-out exact match every ``eval_every`` steps. For a teacher-forced task it
runs the model once, fed the right outputs, instead of decoding greedily step by step; the two
must agree on every batch. Checked on the site's own sequence models (from the real cache), on
held-out inputs of their longest training length and, for the decoder-only models, beyond it,
where they make mistakes: a batch that is all right or all wrong would prove little.
"""

from __future__ import annotations

import pytest

from attnprimer.site.catalogue import site_model
from attnprimer.training.train import _correct, _exact_match, held_out_generator

SEQUENCE_MODELS = [
    ("reversal", {}),
    ("reversal", {"decoder": "vanilla"}),
    ("reversal", {"decoder": "peeky"}),
    ("reversal", {"score": "dot"}),
    ("reversal-transformer", {}),
    ("reversal-transformer", {"architecture": "decoder-only", "pre_norm": True, "steps": 800}),
    ("reversal-transformer", {"pre_norm": True, "residual": False}),
    ("copy-reverse", {}),
    ("copy-reverse", {"pos_enc": "rotary"}),
    ("copy-reverse", {"operation": "copy", "pos_enc": "alibi"}),
    ("copy-reverse", {"operation": "copy", "pos_enc": "relative"}),
    ("copy-reverse", {"operation": "copy", "pos_enc": "sinusoidal"}),
]


def _greedy_exact_match(task, model, batch) -> float:
    return _correct(task, model, batch).all(dim=1).float().mean().item()


@pytest.fixture(scope="module")
def matches(site_models):
    """(label, length, teacher-forced exact match, greedy exact match) per model and length."""
    rows = []
    for name, settings in SEQUENCE_MODELS:
        trained = site_models(site_model(name, **settings))
        task, model = trained.task, trained.model
        lengths = [task.max_len] + ([task.max_len + 4] if name == "copy-reverse" else [])
        for length in lengths:
            batch = task.at_length(length).sample(300, held_out_generator(7))
            rows.append((f"{name} {settings}", length, _exact_match(task, model, batch),
                         _greedy_exact_match(task, model, batch)))
    return rows


def test_teacher_forced_exact_match_is_greedy_decodings(matches):
    for label, length, teacher_forced, greedy in matches:
        assert teacher_forced == greedy, (label, length)


def test_the_comparison_covers_right_and_wrong_sequences(matches):
    mixed = [row for row in matches if 0.05 < row[3] < 0.95]
    assert len(mixed) >= 5, matches
    assert any(row[3] == 0.0 for row in matches)  # the model without residuals fails outright

