"""The claims of the chapter "Induction heads", checked on its trained models in all three seeds.

The two-layer attention-only models and the one-layer control (``InductionTask``), through the
same cached results the page's figures and tables show. Each test names the sentence it checks.
"""

from __future__ import annotations

import pytest

from attnprimer.site.catalogue import INDUCTION_LAYERS, SEEDS, site_seeds
from attnprimer.site.experiments.induction_heads import cached_curves, drop_step, heads_of
from attnprimer.site.experiments.induction_interventions import (
    cached_control,
    cached_interventions,
)


@pytest.fixture(scope="module")
def two_layers(site_models):
    return [site_models(model) for model in site_seeds("induction", layers=2)]


@pytest.fixture(scope="module")
def curves(two_layers):
    return [cached_curves(trained) for trained in two_layers]


@pytest.fixture(scope="module")
def measured(two_layers):
    return [cached_interventions(trained) for trained in two_layers]


@pytest.fixture(scope="module")
def controls(site_models):
    return [cached_control(site_models(model)) for model in site_seeds("induction", layers=1)]


def _around(result, offset: int) -> int:
    """The index of the snapshot ``offset`` steps from the drop."""
    return result.steps.index(drop_step(result) + offset)


def test_the_models_differ_only_in_their_layers_and_train_within_the_budget(site_models):
    """"The one-layer control has the same width and heads"; the chapter's training, all six
    models, stays within 300 CPU-seconds (the recorded ``train_seconds``)."""
    two, one = (site_seeds("induction", layers=layers) for layers in INDUCTION_LAYERS)
    assert [model.config.seed for model in two] == list(SEEDS)
    for a, b in zip(two, one, strict=True):
        assert a.config == b.config
        assert {**vars(a.task), "layers": 0} == {**vars(b.task), "layers": 0}
    assert sum(site_models(model).train_seconds for model in two + one) <= 300


def test_the_repeat_falls_far_below_chance_and_the_first_occurrence_stays_at_chance(curves):
    """"By the end the loss on the repeat is about a third of chance ... the first occurrence
    stays at chance the whole time", in every seed."""
    for result in curves:
        assert result.repeat_loss[-1] < 0.4 * result.chance
        assert all(abs(loss - result.chance) < 0.06 for loss in result.first_loss[2:])


def test_the_drop_is_sudden_and_comes_at_about_the_same_step_in_every_seed(curves):
    """"Then, within about 200 steps, the loss on the repeat drops by more than a nat ...
    between steps 500 and 1,000 in every seed"; before it the curve is within 0.5 of chance."""
    for result in curves:
        assert 500 <= drop_step(result) <= 1000
        before, after = _around(result, -100), _around(result, 100)
        assert result.repeat_loss[before] > result.chance - 0.5
        assert result.repeat_loss[before] - result.repeat_loss[after] > 1.0


def test_the_two_heads_form_at_the_drop(curves):
    """"The previous-token head and the induction head appear together, at the drop": 100 steps
    before it neither score is above 0.25; 100 steps after, the induction head's is above 0.5;
    at the end the previous-token head's is above 0.6."""
    for result in curves:
        previous, induction = heads_of(result)
        before, after = _around(result, -100), _around(result, 100)
        assert result.previous_token[previous][before] < 0.25
        assert result.induction[induction][before] < 0.25
        assert result.induction[induction][after] > 0.5
        assert result.previous_token[previous][-1] > 0.6


def test_both_layer_two_heads_are_induction_heads_and_no_layer_one_head_is(curves):
    """"In every seed both heads of layer 2 end as induction heads (scores above 0.4), and one
    head of layer 1 as a previous-token head" (the other's previous-token score stays under
    0.3); no layer-1 head scores above 0.1 as an induction head."""
    for result in curves:
        previous, _ = heads_of(result)
        other = next(head for head in result.previous_token if head.startswith("layer 1.")
                     and head != previous)
        assert result.previous_token[other][-1] < 0.3
        second = [head for head in result.induction if head.startswith("layer 2.")]
        assert all(result.induction[head][-1] > 0.4 for head in second)
        first = [head for head in result.induction if head.startswith("layer 1.")]
        assert all(result.induction[head][-1] < 0.1 for head in first)


def test_switching_off_the_previous_token_head_undoes_the_copy_both_ablations(measured):
    """"Switch off the previous-token head and the loss on the repeat climbs back to within
    0.35 of chance, by zero or by mean ablation; the other layer-1 head changes it by less
    than 0.05." """
    for r in measured:
        other = next(head for head in r.zero if head.startswith("layer 1.")
                     and head != r.previous_head)
        for ablation in (r.zero, r.mean):
            assert ablation[r.previous_head] > r.chance - 0.35
            assert abs(ablation[other] - r.intact) < 0.05


def test_one_induction_head_is_not_enough_to_break_it_and_both_are(measured):
    """"Off goes one induction head: the loss rises but stays well below chance, because the
    other still copies; off go both, and it is back at chance (within 0.1)", both ablations."""
    for r in measured:
        for ablation in (r.zero, r.mean):
            for head in (h for h in r.zero if h.startswith("layer 2.")):
                assert r.intact + 0.4 < ablation[head] < r.chance - 0.8
            assert ablation["layer 2"] > r.chance - 0.1


def test_the_induction_heads_keys_are_built_from_the_previous_token_head(measured):
    """"Take the previous-token head's output from another sequence, for layer 2's keys only,
    and the copy is gone: the loss goes back to chance (within 0.1) and the induction score
    falls below 0.1. The same swap of the other layer-1 head changes the loss by less than
    0.05." """
    for r in measured:
        assert r.patched[r.previous_head] > r.chance - 0.1
        assert r.patched_score[r.previous_head] < 0.1 < 0.5 < r.intact_score
        other = next(head for head in r.patched if head != r.previous_head)
        assert abs(r.patched[other] - r.intact) < 0.05


def test_it_copies_letter_pairs_it_never_saw_and_longer_repeats(measured):
    """"On segments made only of held-out letter pairs the loss on the repeat stays far below
    chance (under 1.8), though the first occurrence is above chance; on repeats of 13-16
    letters it is as low as on training's (within 0.1)." """
    for r in measured:
        assert r.held_out < 1.8
        assert r.held_out_first > r.chance + 0.2
        assert abs(r.longer - r.intact) < 0.1


def test_the_one_layer_model_prefers_letters_already_seen_and_cannot_copy(controls, measured):
    """"The one-layer model gets part of the way, from 3.00 to about 2.5, by giving a letter
    already in the context about twice the probability of one not yet there; switch its
    attention off and the preference and the gain are gone. Its loss stays more than twice
    the two-layer model's, and on held-out pairs it is above chance." """
    best_two = max(r.intact for r in measured)
    for c in controls:
        chance = measured[0].chance
        assert chance - 0.8 < c.repeat < chance - 0.3
        assert c.repeat > 2 * best_two
        assert 1.7 < c.boost < 2.3  # "about twice"
        assert c.boost_ablated < 1.05
        assert c.repeat_ablated > chance - 0.1
        assert c.held_out > chance
        assert abs(c.first - chance) < 0.06
