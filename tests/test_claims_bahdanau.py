"""The claims of the Bahdanau chapter about its trained attention encoder-decoders.

They run on the models the docs build uses (the real model cache, via ``site_models``).
"""

from __future__ import annotations

import pytest

from attnprimer.analysis import alignment_offsets, encoder_state_probe
from attnprimer.site_models import REVERSAL_DECODERS, REVERSAL_EXAMPLE, site_model
from attnprimer.train import predict_one

TRAINED = range(1, 11)


@pytest.fixture(scope="module")
def models(site_models):
    return {label: site_models(site_model("reversal", **settings))
            for label, settings in REVERSAL_DECODERS.items()}


def test_the_example_is_reversed_right(models):
    trained = models["attention (additive)"]
    prediction, _ = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    assert trained.task.decode_output(prediction) == REVERSAL_EXAMPLE[::-1] + "."


@pytest.mark.parametrize("label", [label for label in REVERSAL_DECODERS if "attention" in label])
def test_the_alignment_is_the_anti_diagonal_shifted_by_one(models, label):
    offsets = alignment_offsets(models[label], TRAINED)
    assert offsets.get(0, 0) + offsets.get(1, 0) >= 0.95  # on the letter, or one to its right
    assert offsets.get(1, 0) >= 0.7  # and mostly one to its right


@pytest.mark.parametrize("label", [label for label in REVERSAL_DECODERS if "attention" in label])
def test_the_encoder_state_also_holds_the_letter_before(models, label):
    probe = encoder_state_probe(models[label])
    assert probe["letter j"] >= 0.99
    assert probe["letter j - 1"] >= 0.95


def test_the_first_output_step_reads_the_last_letter(models):
    trained = models["attention (additive)"]
    _, attention = predict_one(trained.model, trained.task.encode(REVERSAL_EXAMPLE))
    assert int(attention["encoder-decoder"][0].argmax()) == len(REVERSAL_EXAMPLE) - 1
