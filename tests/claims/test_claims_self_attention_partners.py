"""The claims of the self-attention chapter about its partners models: tokens that must find
their partner token, with and without learned W_q, W_k, W_v.

Run on the models the docs build uses (the ``site_models`` fixture), through the same cached
reading the page's table shows. Each test names the sentence it checks.
"""

from __future__ import annotations

import pytest

from attnprimer.site.catalogue import PARTNERS_VARIANTS, SEEDS, site_seeds
from attnprimer.site.experiments.partners import cached_reading

WITH, WITHOUT = PARTNERS_VARIANTS  # the page's order: with W_q, W_k, W_v; without projections


@pytest.fixture(scope="module")
def readings(site_models):
    return {variant: [cached_reading(site_models(model))
                      for model in site_seeds("partners", **settings)]
            for variant, settings in PARTNERS_VARIANTS.items()}


def test_the_variants_differ_only_in_the_projections_and_have_three_seeds():
    with_, without = (site_seeds("partners", **settings) for settings in PARTNERS_VARIANTS.values())
    assert [model.config.seed for model in with_] == list(SEEDS)
    for a, b in zip(with_, without, strict=True):
        assert a.config == b.config
        assert a.task.projections and not b.task.projections
        assert {**vars(a.task), "projections": None} == {**vars(b.task), "projections": None}


def test_with_projections_every_token_finds_its_partner_in_every_seed(readings):
    """"With the projections every token finds its partner, in all three seeds: nearly all of
    its weight goes there, and every answer is right." """
    for reading in readings[WITH]:
        assert reading.accuracy == 1.0
        assert reading.weight_on_partner >= 0.95


def test_the_answer_follows_a_changed_partner_and_ignores_the_others(readings):
    """"Change the partner's digit and the answer changes with it, every time"; another token's
    digit leaves at least 99 % of answers as they were, in every model."""
    for reading in readings[WITH]:
        assert reading.follows_partner == 1.0
    for reading in readings[WITH] + readings[WITHOUT]:
        assert reading.ignores_others >= 0.99


def test_without_projections_tokens_split_their_weight_and_end_near_chance(readings):
    """"Its tokens settle on splitting their weight between themselves and their partner, about
    half each ... The models end close to chance, one digit in ten; the three runs differ, one of
    them at chance." The claims box: no seed above 35 %, at least 0.45 on itself and 0.4 on the
    partner."""
    for reading in readings[WITHOUT]:
        assert reading.accuracy <= 0.35
        assert reading.weight_on_self >= 0.45 and reading.weight_on_partner >= 0.4
    accuracies = [reading.accuracy for reading in readings[WITHOUT]]
    assert 0.08 <= min(accuracies) <= 0.12  # chance is one digit in ten
    assert max(accuracies) - min(accuracies) >= 0.1  # the runs differ


def test_no_pair_prefers_each_other_without_projections_and_every_pair_does_with_them(readings):
    """The Cauchy-Schwarz argument, on the trained models: "two tokens can never both prefer
    each other to themselves" without projections."""
    assert all(reading.both_prefer_partner == 0.0 for reading in readings[WITHOUT])
    assert all(reading.both_prefer_partner == 1.0 for reading in readings[WITH])
