"""The claims of the chapter "Queries, keys and values" about its trained counting models.

These tests use the real model cache (the catalogue ``attnprimer.site.catalogue.SITE_MODELS``,
through the ``site_models`` fixture), so they share trained models with the docs build: on a
warm cache they only load; on a cold one they train what the site would train.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from statistics import fmean

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from attnprimer.site.catalogue import (
    COUNTING_EXAMPLE,
    COUNTING_RECIPES,
    ORIGINAL_COUNTING_RECIPE,
    SEEDS,
    SITE_MODELS,
    SiteModel,
    site_model,
    site_seeds,
)
from attnprimer.site.experiments.qkv import (
    kernel_regression_toy,
    own_letter_mass,
    recipe_ablation,
    score_saturation,
)
from attnprimer.site.report import attended_mainly
from attnprimer.tasks import CountingTask
from attnprimer.training.model_cache import cached_evaluation
from attnprimer.training.train import held_out_generator, predict

TARGET = 0.995
"""The project's target: held-out exact match with the default training settings."""

HELD_OUT_SAMPLES = 10_000


COUNTING = [model for model in SITE_MODELS if type(model.task) is CountingTask]
DEFAULT_COUNTING = [model for model in COUNTING
                    if model == SiteModel.default(CountingTask(), model.config.seed)]
ORIGINAL = site_seeds("counting", **ORIGINAL_COUNTING_RECIPE)
SHOWN = site_model("counting", seed=0)
"""The model the chapter's heatmap, sample and attention-mass figure show."""


@pytest.fixture(scope="module")
def accuracy(site_models):
    scores = {}

    def get(label: str):
        if label not in scores:
            scores[label] = cached_evaluation(site_models(label), samples=HELD_OUT_SAMPLES)
        return scores[label]

    return get


def test_the_site_shows_several_seeds_of_the_default_model():
    assert len(DEFAULT_COUNTING) >= 3
    assert len({model.config.seed for model in DEFAULT_COUNTING}) == len(DEFAULT_COUNTING)
    assert SHOWN in DEFAULT_COUNTING
    assert SHOWN.config.seed == 0


@pytest.mark.parametrize("label", DEFAULT_COUNTING, ids=lambda model: model.label)
def test_every_seed_reaches_the_target(accuracy, label):
    result = accuracy(label)
    assert result.samples == HELD_OUT_SAMPLES
    assert result.exact_match >= TARGET, f"{label}: {result.exact_match:.2%}"


@pytest.mark.parametrize("label", ORIGINAL, ids=lambda model: model.label)
def test_the_original_recipe_does_not_reach_the_target(accuracy, label):
    # The chapter: "every seed reaches at least 99.5 % ... and the original recipe does not".
    assert accuracy(label).exact_match < TARGET


def test_the_loaded_models_are_the_configured_ones(site_models):
    for model in COUNTING:
        trained = site_models(model)
        assert (trained.task, trained.config) == (model.task, model.config)


# --- the primer's example ----------------------------------------------------------------------


@pytest.fixture(scope="module", params=DEFAULT_COUNTING, ids=lambda model: model.label)
def example(site_models, request):
    trained = site_models(request.param)
    tokens = trained.task.encode(COUNTING_EXAMPLE)
    output, prediction = predict(trained.model, tokens[None])
    return trained, prediction[0], output.attention["encoder-decoder"][0]


def test_the_example_is_counted_right(example):
    trained, prediction, _ = example
    counts = Counter(COUNTING_EXAMPLE)
    assert prediction.tolist() == [counts[letter] for letter in trained.task.output_labels()]


def test_each_query_attends_mainly_to_exactly_its_letter(example):
    trained, _, weights = example
    for letter, row in zip(trained.task.output_labels(), weights, strict=True):
        positions = [step for step, char in enumerate(COUNTING_EXAMPLE) if char == letter]
        assert positions, letter  # every letter occurs in the example
        assert attended_mainly(row) == positions, letter


# --- how the model counts ----------------------------------------------------------------------


@pytest.fixture(scope="module", params=DEFAULT_COUNTING, ids=lambda model: model.label)
def letter_mass(site_models, request):
    trained = site_models(request.param)
    counts, mass = own_letter_mass(trained)
    return trained, counts, mass


def test_weight_on_a_letter_grows_with_its_count(letter_mass):
    _, counts, mass = letter_mass
    seen = counts.unique().tolist()
    assert len(seen) >= 5
    means = [mass[counts == n].mean().item() for n in seen]
    assert all(later > earlier for earlier, later in pairwise(means)), means


def test_weight_on_a_letter_stays_below_one(letter_mass):
    _, counts, mass = letter_mass
    assert mass.max().item() < 1.0
    # "the common counts (one to four) get from about a quarter to about seven tenths of the
    # weight, and the mean keeps climbing, to about nine tenths at seven"
    means = {n: mass[counts == n].mean().item() for n in range(1, 8)}
    assert 0.2 <= means[1] <= 0.33 and 0.6 <= means[4] <= 0.75
    assert all(means[n + 1] > means[n] for n in range(4, 7))
    assert 0.85 <= means[7] <= 0.95


def test_weight_on_a_letter_grows_ever_more_slowly(letter_mass):
    # "grows more slowly the larger the count": the second letter adds more than twice the
    # weight the seventh adds
    _, counts, mass = letter_mass
    means = [mass[counts == n].mean().item() for n in range(1, 8)]
    gains = np.diff(means)  # counts 1 -> 2, ..., 6 -> 7
    assert (np.diff(gains[:5]) < 0).all(), gains  # each of 2 to 6 adds less than the one before
    assert gains[0] > 2 * gains[-1]


def test_weight_on_a_letter_is_above_uniform_attention(letter_mass):
    trained, counts, mass = letter_mass
    present = counts > 0
    assert (mass[present] > counts[present] / trained.task.max_len).all()


@pytest.mark.parametrize("label", DEFAULT_COUNTING, ids=lambda model: model.label)
def test_shuffling_the_input_changes_no_output(site_models, label):
    trained = site_models(label)
    inputs = trained.task.sample(500, held_out_generator(7)).inputs
    shuffle = torch.Generator().manual_seed(8)
    shuffled = torch.stack([row[torch.randperm(len(row), generator=shuffle)] for row in inputs])
    assert not torch.equal(shuffled, inputs)
    original, predicted = predict(trained.model, inputs)
    moved, predicted_moved = predict(trained.model, shuffled)
    assert torch.equal(predicted_moved, predicted)
    # Only float32 summation order differs (the weights are summed over positions).
    torch.testing.assert_close(moved.logits, original.logits, atol=1e-3, rtol=1e-4)


@pytest.mark.parametrize("label", DEFAULT_COUNTING, ids=lambda model: model.label)
def test_the_context_sees_proportions_not_counts(site_models, label):
    # The chapter: one A among five tokens and two among ten (the other tokens in the same
    # proportions) give the same context. The model takes any length: it has no positions.
    trained = site_models(label)
    short = trained.task.sample(200, held_out_generator(9)).inputs[:, :5]  # (B, 5)
    doubled = torch.cat([short, short], dim=1)  # (B, 10): every token twice
    with torch.no_grad():
        hidden, weights = trained.model.read(short)  # (B, T, D), (B, T, 5)
        hidden_doubled, weights_doubled = trained.model.read(doubled)
    tokens = trained.model.num_tokens

    def weight_per_token(weights, inputs):  # (B, T, S) x (B, S, V+1) -> (B, T, V+1)
        return weights @ torch.nn.functional.one_hot(inputs, tokens).float()

    # The same total weight on each kind of token, hence the same context, and the same
    # input to the classifier.
    torch.testing.assert_close(weight_per_token(weights_doubled, doubled),
                               weight_per_token(weights, short), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(hidden_doubled, hidden, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("label", ORIGINAL, ids=lambda model: model.label)
def test_the_original_recipe_misses_the_rare_large_counts(site_models, label):
    """The chapter: the original recipe gets almost no count of seven or more right, and its
    error rate there is far above its rate on the common small counts."""
    trained = site_models(label)
    batch = trained.task.sample(HELD_OUT_SAMPLES, held_out_generator())
    _, predictions = predict(trained.model, batch.inputs)
    wrong = predictions != batch.targets  # (B, T)
    large = batch.targets >= 7
    error_rate_large = wrong[large].float().mean().item()
    error_rate_small = wrong[~large].float().mean().item()
    assert large.sum() > 20  # enough large counts in the sample to say anything
    assert error_rate_large > 0.5
    assert error_rate_large > 10 * error_rate_small


def test_the_counting_queries_start_at_zero_so_attention_starts_uniform():
    task = CountingTask()
    for seed in SEEDS:
        torch.manual_seed(seed)
        model = task.build_model()
        assert torch.equal(model.queries, torch.zeros_like(model.queries))
        inputs = task.sample(50, held_out_generator(seed)).inputs
        _, weights = model.read(inputs)
        torch.testing.assert_close(weights, torch.full_like(weights, 1 / task.max_len))


# --- the recipe, one change at a time ----------------------------------------------------------


@pytest.fixture(scope="module")
def recipes(site_models):
    for settings in COUNTING_RECIPES.values():  # through the fixture: trained once, checked
        for model in site_seeds("counting", **settings):
            site_models(model)
    results = {result.name: result for result in recipe_ablation(samples=HELD_OUT_SAMPLES)}
    assert list(results) == list(COUNTING_RECIPES)
    for result in results.values():
        assert result.seeds == SEEDS
    return results


def test_the_recipes_change_one_thing_at_a_time(recipes):
    original, ours = recipes["original"], recipes["ours"]
    settings = ("steps", "lr", "schedule")
    assert all(getattr(original, name) != getattr(ours, name) for name in settings)
    for name, result in recipes.items():
        if name in ("original", "ours"):
            continue
        base = original if name.startswith("original") else ours
        assert sum(getattr(result, key) != getattr(base, key) for key in settings) == 1, name


def test_a_larger_learning_rate_or_more_steps_alone_help_in_every_seed(recipes):
    original = recipes["original"].exact_match
    for name in ("original, lr 0.03", "original, 6,000 steps"):
        changed = recipes[name].exact_match
        assert all(after > before for before, after in zip(original, changed, strict=True)), name


def test_cosine_decay_alone_makes_the_original_worse_in_every_seed(recipes):
    original, cosine = recipes["original"].exact_match, recipes["original, cosine"].exact_match
    assert all(after < before for before, after in zip(original, cosine, strict=True))
    # "In one seed the final margin is half a point ... over the last five evaluations, 1,600
    # to 2,000 steps, the cosine run is behind in every seed by more than a point"
    assert min(before - after for before, after in zip(original, cosine, strict=True)) < 0.01
    for constant, decayed in zip(recipes["original"].curves, recipes["original, cosine"].curves,
                                 strict=True):
        assert constant[0][-5:] == decayed[0][-5:] == [1600, 1700, 1800, 1900, 2000]
        assert np.mean(constant[1][-5:]) - np.mean(decayed[1][-5:]) > 0.01


def test_no_single_change_reaches_the_target_in_every_seed(recipes):
    for name in ("original, lr 0.03", "original, cosine", "original, 6,000 steps"):
        assert min(recipes[name].exact_match) < TARGET, name


def test_ours_needs_the_steps_and_the_learning_rate_but_not_the_cosine(recipes):
    assert min(recipes["ours"].exact_match) >= TARGET
    # without the cosine: every seed at 99 %, the mean within half a point of ours (every seed
    # over the target was one draw: a retraining with other rounding put one at 99.25 %)
    constant = recipes["ours, constant"].exact_match
    assert min(constant) >= 0.99
    assert abs(min(constant) - TARGET) <= 0.005  # "its lowest seed is within half a point"
    assert fmean(recipes["ours"].exact_match) - fmean(constant) <= 0.005
    assert max(recipes["ours, 2,000 steps"].exact_match) < TARGET  # without the steps: never
    # the longer training alone: "misses it by less than half a point in its lowest seed, too
    # close to call"; whether ours needs the larger rate is not claimed
    longer = min(recipes["original, 6,000 steps"].exact_match)
    assert TARGET - 0.005 < longer < TARGET
    # "without them it misses the target in every seed, by more"
    assert max(recipes["ours, 2,000 steps"].exact_match) < longer


def test_the_seeds_of_our_recipe_end_at_nearly_the_same_function(site_models, recipes):
    # "the other recipes' seeds end further apart (the table)"
    def spread(name):
        return max(recipes[name].exact_match) - min(recipes[name].exact_match)

    assert all(spread(name) > spread("ours") for name in COUNTING_RECIPES if name != "ours")
    assert spread("ours") <= 0.0005  # "within a twentieth of a point of one another"
    # "they give the same counts on all but a handful of 5,000 further held-out sequences"
    trained = [site_models(model) for model in DEFAULT_COUNTING]
    inputs = trained[0].task.sample(5000, held_out_generator(3)).inputs
    first, *others = [predict(model.model, inputs)[1] for model in trained]
    for predictions in others:
        assert (predictions != first).any(dim=1).sum().item() <= 10


def test_ours_gets_most_large_counts_right_and_the_original_almost_none(recipes):
    assert min(recipes["original"].error_large) >= 0.8
    assert max(recipes["ours"].error_large) <= 0.25
    assert recipes["ours"].large > 50
    # "about one in six of them wrong, against about one in a thousand of the others"
    assert all(1 / 9 < rate < 1 / 4 for rate in recipes["ours"].error_large)
    assert all(rate < 2 / 1000 for rate in recipes["ours"].error_small)


def _mean_between(curve, first: int, last: int) -> float:
    values = [value for step, value in zip(*curve, strict=True) if first <= step <= last]
    assert len(values) >= 3
    return sum(values) / len(values)


def test_the_cosine_runs_level_off_near_95_percent_and_the_constant_ones_climb(recipes):
    for curve in recipes["original, cosine"].curves:
        last = [value for step, value in zip(*curve, strict=True) if step >= 1500]
        assert min(last) > 0.93 and max(last) < 0.975
    for curve in recipes["original, 6,000 steps"].curves:
        assert _mean_between(curve, 5600, 6000) > _mean_between(curve, 1600, 2000) + 0.005


def test_a_run_now_and_then_falls_off_and_recovers(recipes):
    # The page: the dips in the curves are real (a run falls more than ten points below its best
    # so far) and every run comes back (to within three points of that best within 300 steps).
    # When, how far and in which seed differs between seeds and between retrainings, so this
    # checks every run of the figure's four recipes, not one run or one recipe.
    falls = []
    for name in ("original, 6,000 steps", "original, lr 0.03", "original, cosine", "ours"):
        for steps, values in recipes[name].curves:
            for index, (step, value) in enumerate(zip(steps, values, strict=True)):
                best = max(values[:index], default=0.0)
                if step >= 500 and value < best - 0.1:
                    falls.append((name, step))
                    after = values[index + 1:index + 4]  # the next 300 steps
                    assert after and max(after) > best - 0.03, (name, step)
    assert falls


def test_the_original_run_is_the_start_of_the_longer_constant_run(recipes):
    # The curves figure draws them as one line: a constant rate does not depend on the length.
    for short, long in zip(recipes["original"].curves, recipes["original, 6,000 steps"].curves,
                           strict=True):
        points = len(short[0])
        assert long[0][:points] == short[0]
        torch.testing.assert_close(long[1][:points], short[1], atol=0.0, rtol=0.0)


# --- mechanisms on the page: no trained model --------------------------------------------------


def test_without_the_scale_the_softmax_saturates_and_its_gradient_vanishes():
    result = score_saturation(dims=(4, 64, 1024), trials=1000)
    assert result.peak["unscaled"][-1] > 0.9  # "almost all its weight to one key"
    assert result.gradient["unscaled"][-1] < 1e-3 * result.gradient["scaled"][-1]
    assert all(0.2 < peak < 0.3 for peak in result.peak["scaled"])
    assert max(result.gradient["scaled"]) < 1.5 * min(result.gradient["scaled"])


def test_kernel_width_runs_from_a_lookup_to_an_average():
    toy = kernel_regression_toy()
    narrow, middle, wide = range(3)
    assert toy.widths[narrow] < toy.widths[middle] < toy.widths[wide]
    # narrow: "most rows put most of their weight on the nearest one or two samples", and the
    # estimate follows the noise (closer to the samples than the noise)
    assert toy.peak[narrow] > 0.8
    nearest_two = toy.weights[narrow].topk(2, dim=-1).values.sum(dim=-1)  # (queries,)
    assert (nearest_two > 0.5).float().mean() > 0.5
    assert toy.sample_error[narrow] < 0.5 * 0.3
    # wide: rows spread widely over the samples (no weight near a nearest-sample lookup's), and
    # the function flattened
    assert toy.peak[wide] < 2 / len(toy.x)
    # the middle width is closest to the function, by a wide margin
    assert 2 * toy.grid_error[middle] < min(toy.grid_error[narrow], toy.grid_error[wide])


def test_each_learned_query_points_closest_to_its_own_letters_key(site_models):
    # "in every seed each learned query points closer to its own letter's key than to any other
    # token's" (query t counts letter t + 1; token 0 is the blank)
    for model in site_seeds("counting"):
        network = site_models(model).model
        with torch.no_grad():
            keys = network.key_value(torch.eye(network.num_tokens))  # (V + 1, D)
            cosines = F.cosine_similarity(network.queries[:, None], keys[None], dim=-1)
        assert cosines.argmax(dim=-1).tolist() == list(range(1, network.num_tokens))
