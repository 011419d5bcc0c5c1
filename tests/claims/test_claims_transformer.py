"""The claims of the Transformer chapter about its trained models, every seed.

They run on the models the docs build uses (the real model cache, via ``site_models``), and
read the experiments through the same result cache as the page's figures and tables.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnprimer.site.catalogue import REVERSAL_DECODERS, TRANSFORMER_STEPS, TRANSFORMERS, site_seeds
from attnprimer.site.experiments.bahdanau import first_step_reaching
from attnprimer.site.experiments.length_curves import cached_accuracy_by_length
from attnprimer.site.experiments.transformer import cached_copies_by_position
from attnprimer.site.experiments.transformer_heads import copy_groups
from attnprimer.site.experiments.transformer_positions import (
    cached_extra_letters,
    cached_position_scores,
)
from attnprimer.site.figures import transformer_lengths as lengths_page
from attnprimer.site.figures.transformer import (
    MODELS,
    RNNS,
    SAMPLES,
    _step_by_step,
    letter_step_accuracy,
)
from attnprimer.site.figures.transformer_heads import example_attention, head_results

INSIDE, BEYOND = list(range(1, 11)), list(range(11, 21))


def _catalogue(name):
    if name in TRANSFORMERS:
        settings = TRANSFORMERS[name]
        return site_seeds("reversal-transformer", **settings,
                          steps=TRANSFORMER_STEPS[settings["architecture"]])
    return site_seeds("reversal", **REVERSAL_DECODERS[name])


@pytest.fixture(scope="module")
def models(site_models):
    """Every seed of every model of the page, by name."""
    return {name: [site_models(model) for model in _catalogue(name)] for name in MODELS}


@pytest.fixture(scope="module")
def by_length(models):
    """Exact match at lengths 1-20, (seeds, 20) per model: the page's numbers."""
    return {name: np.array([cached_accuracy_by_length(trained, INSIDE + BEYOND, SAMPLES)
                            for trained in runs]) for name, runs in models.items()}


def test_every_model_has_three_seeds(models):
    assert all(len(runs) == 3 for runs in models.values())


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_every_transformer_seed_reverses_the_training_lengths(by_length, name):
    """Not undertrained: 99 % exact match or more at every length 1-10, every seed."""
    assert by_length[name][:, : len(INSIDE)].min() >= 0.98  # the worst length of the worst seed
    assert by_length[name][:, : len(INSIDE)].mean(axis=1).min() >= 0.995


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_the_transformers_beat_every_rnn_inside_the_training_lengths(by_length, name):
    ours = by_length[name][:, : len(INSIDE)].mean(axis=1)
    for rnn in RNNS:
        assert ours.min() > by_length[rnn][:, : len(INSIDE)].mean(axis=1).max(), rnn


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_every_transformer_seed_reaches_99_percent_on_the_monitor(models, name):
    assert all(first_step_reaching(trained.history, 0.99) is not None for trained in models[name])


def test_the_encoder_decoder_reaches_99_percent_sooner_than_any_rnn_seed(models):
    reached = [first_step_reaching(trained.history, 0.99)
               for trained in models["Transformer (encoder-decoder)"]]
    for rnn in RNNS:
        theirs = [first_step_reaching(trained.history, 0.99) for trained in models[rnn]]
        assert all(step is None or step > max(reached) for step in theirs), rnn


def test_no_rnn_reaches_99_percent_reliably(models):
    """The page: vanilla and peeky never get there; the additive model falls short of it in
    most seeds (as on the Bahdanau page). Whether one additive seed touches 99 % varies with the
    run: one did on the first build machine, none on the second, two of them ending within two
    points of it."""
    for rnn in ("vanilla", "peeky"):
        assert all(first_step_reaching(t.history, 0.99) is None for t in models[rnn])
    assert sum(first_step_reaching(t.history, 0.99) is None
               for t in models["attention (additive)"]) >= 2


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_beyond_the_training_lengths_the_transformers_fall_below_the_attention_rnn(by_length,
                                                                                name):
    """The surprise: at every length 11-20 with anything to lose, the attention RNN's worst seed
    does better than the Transformer's best, and from 12 letters the Transformers get under 5 %."""
    ours = by_length[name][:, len(INSIDE):]
    additive = by_length["attention (additive)"][:, len(INSIDE):]
    assert (ours.max(axis=0)[:5] < additive.min(axis=0)[:5]).all()  # lengths 11-15
    assert ours[:, 1:].max() < 0.05  # lengths 12-20, every seed


def test_the_decoder_only_model_gets_no_longer_input_right(by_length):
    assert by_length["Transformer (decoder-only)"][:, len(INSIDE):].max() <= 0.002


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_teacher_forced_they_misread_even_positions_seen_in_training(models, name):
    """Lengths 11-20, every step fed the right letters: letters copied from positions 0-9,
    which hold letters in training, are still mostly wrong, unlike the RNN's."""
    for trained in models[name]:
        positions = cached_copies_by_position(trained, BEYOND)["position"]
        assert max(positions[:10]) < 0.6
    for trained in models["attention (additive)"]:
        assert min(cached_copies_by_position(trained, BEYOND)["position"]) > 0.35


def test_the_decoder_only_model_is_below_chance_from_position_nine(models):
    # "below chance from position 9 on, in every seed"
    for trained in models["Transformer (decoder-only)"]:
        positions = cached_copies_by_position(trained, BEYOND)["position"]
        assert max(positions[9:]) < 1 / 8  # chance: 1 in 8


def _end_share(trained) -> float:
    """The share of the wrong steps copying positions 9 on at which the end token was written."""
    result = cached_copies_by_position(trained, BEYOND)
    accuracy, ended, seen = (np.array(result[key][9:]) for key in ("position", "ended", "seen"))
    return float((ended * seen).sum() / ((1 - accuracy) * seen).sum())


def test_the_decoder_only_models_mistakes_there_are_often_the_end(models):
    # "a third to three quarters of its mistakes there, by seed, are the end token ... The
    # encoder-decoder almost never does (under one of its mistakes there in a thousand)."
    shares = [_end_share(trained) for trained in models["Transformer (decoder-only)"]]
    assert all(0.3 <= share <= 0.8 for share in shares), shares
    assert max(shares) > 0.6 and min(shares) < 0.4  # seeds differ widely ("by seed")
    assert all(_end_share(trained) < 1e-3 for trained in models["Transformer (encoder-decoder)"])



def test_on_the_steps_where_it_writes_a_letter_the_decoder_only_model_is_at_chance(models):
    # "below chance from position 9 on ... partly by stopping early ... On the steps there at
    # which it writes a letter, it is right 13 % to 15 % of the time, by seed: about chance"
    # (issue 37, item 7: the page said "not by picking wrong letters")
    for trained in models["Transformer (decoder-only)"]:
        assert 0.1 <= letter_step_accuracy(trained) <= 0.2
        assert letter_step_accuracy(trained) > max(
            cached_copies_by_position(trained, BEYOND)["position"][9:])  # stopping costs more

@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_one_teacher_forced_pass_equals_one_pass_per_step(models, name):
    steps, difference, accuracy = _step_by_step(models[name][0])
    assert steps == 11 and difference < 1e-4 and accuracy > 0.99


def test_the_decoder_only_model_has_under_half_the_attention_rnns_parameters(models):
    def count(trained):
        return sum(parameter.numel() for parameter in trained.model.parameters())

    assert 2 * count(models["Transformer (decoder-only)"][0]) < count(
        models["attention (additive)"][0])


def test_the_attention_rnn_ends_above_90_percent_in_every_seed(models):
    """The page: the attention model, though not at 99 % in every seed, ends above 90 % on the
    monitor in every seed."""
    assert min(t.history["held_out_exact_match"][-1] for t in models["attention (additive)"]) > 0.9


def test_beyond_the_training_lengths_the_transformers_fall_off_fastest(by_length):
    """Mean over seeds and over lengths 11-20: each Transformer under every RNN; the attention
    RNN at about a fifth."""
    beyond = {name: runs[:, len(INSIDE):].mean() for name, runs in by_length.items()}
    for name in TRANSFORMERS:
        assert all(beyond[name] < beyond[rnn] for rnn in RNNS), name
    assert 0.15 <= beyond["attention (additive)"] <= 0.25
    # "the attention RNN still reverses, on average, two in five to two in three of the 12-letter
    # inputs and a quarter to a third of the 13-letter ones (it too gets almost none right from
    # 16 letters on)": about a half and a quarter on the AMD EPYC machines that built the page
    # before, 0.60 and 0.33 on an Intel Xeon
    additive = by_length["attention (additive)"].mean(axis=0)  # lengths 1-20
    assert 0.4 <= additive[11] <= 0.67 and 0.2 <= additive[12] <= 0.36
    assert additive[15:].max() < 0.01


def test_teacher_forced_the_attention_rnn_copies_better_at_every_position(models):
    def mean_curve(name):
        return np.mean([cached_copies_by_position(t, BEYOND)["position"] for t in models[name]],
                       axis=0)

    additive = mean_curve("attention (additive)")
    for name in TRANSFORMERS:
        assert (additive > mean_curve(name)).all(), name
    assert mean_curve("Transformer (encoder-decoder)")[:10].max() < 0.5
    assert mean_curve("Transformer (decoder-only)")[:10].max() < 0.35
    for trained in models["attention (additive)"]:  # best at the two ends
        positions = cached_copies_by_position(trained, BEYOND)["position"]
        assert min(positions[0], positions[-1]) > positions[9] + 0.2


# --- heads ---
# "What the heads do": every head's weights on simple targets and exact match with heads off,
# through the result cache the page's tables read (figures.transformer_heads.head_results).

# --- beyond the training lengths: positions ---
# The interventions of "Beyond the training lengths": positions moved (shifted, squeezed) while the
# model runs, read through the same result cache as the page's figures and tables.

ENCODER_DECODER, DECODER_ONLY = TRANSFORMERS
ABLATIONS = pytest.mark.parametrize("kind", ["", "mean "], ids=["zero", "mean"])
"""The claims about switching heads off hold for both ablations: the head's output zeroed, and
set to its mean output over other held-out inputs."""


@pytest.fixture(scope="module")
def heads(models):
    """Per model: per seed, the heads' patterns and exact match with heads off."""
    return {name: head_results(name) for name in TRANSFORMERS}


def _top(scores: dict[str, float], leave_out: str | None = None) -> str:
    return max((p for p in scores if p != leave_out), key=scores.get)


def _layer(run: dict, prefix: str) -> dict[str, dict[str, float]]:
    return {head: scores for head, scores in run.items() if head.startswith(prefix + ".")}


def _example_argmax(models, name, head, target):
    """On the page's example, seed 0: at how many letter steps the head's largest weight is
    on ``target(t, n)``."""
    attention, _, decoder_only = example_attention(models[name][0])
    weights, letters = attention[head], 9  # HEADBADGE
    rows = weights[letters: 2 * letters] if decoder_only else weights[:letters]
    return sum(int(row.argmax()) == target(step, letters) for step, row in enumerate(rows))


def test_the_example_is_reversed_by_both_models(models):
    for name in TRANSFORMERS:
        trained = models[name][0]
        task = trained.task
        tokens = task.encode("HEADBADGE")[:9]
        prediction = trained.model(tokens[None]).logits.argmax(-1)[0]
        assert task.decode_output(prediction) == "EGDABDAEH."


def test_on_the_example_cross_2_4_traces_the_anti_diagonal_and_cross_1_1_the_last_letter(
        models):
    assert _example_argmax(models, ENCODER_DECODER, "cross 2.4", lambda t, n: n - 1 - t) == 9
    assert _example_argmax(models, ENCODER_DECODER, "cross 1.1", lambda t, n: n - 1) == 9


def test_on_the_example_no_encoder_self_attention_weight_reaches_one_half(models):
    attention, _, _ = example_attention(models[ENCODER_DECODER][0])
    assert max(float(w.max()) for name, w in attention.items()
               if name.startswith("encoder self")) < 0.5


def test_on_the_example_three_decoder_only_block_2_heads_copy_at_most_steps(models):
    copying = [head for head in range(1, 5)
               if _example_argmax(models, DECODER_ONLY, f"decoder self 2.{head}",
                                  lambda t, n: n - 1 - t) >= 5]
    assert len(copying) >= 3


def test_the_second_cross_attention_block_holds_the_copying_in_every_seed(heads):
    for run in heads[ENCODER_DECODER]["patterns"]:
        copiers = [h for h, s in _layer(run, "cross 2").items() if _top(s) == "copy"]
        assert len(copiers) >= 3
        for head in copiers:
            assert 0.4 <= run[head]["copy"] < 0.6, head
            assert _top(run[head], leave_out="copy") in ("last copy", "last"), head


def test_no_encoder_decoder_head_puts_60_percent_on_the_letter_copied(heads):
    assert max(scores["copy"] for run in heads[ENCODER_DECODER]["patterns"]
               for scores in run.values() if "copy" in scores) < 0.6


def test_every_first_block_cross_head_looks_most_at_the_last_letter(heads):
    for run in heads[ENCODER_DECODER]["patterns"]:
        assert all(_top(scores) == "last" for scores in _layer(run, "cross 1").values())


@ABLATIONS
def test_encoder_self_attention_heads_are_diffuse_and_cheap_to_lose(heads, kind):
    results = heads[ENCODER_DECODER]
    for run, alone in zip(results["patterns"], results[f"{kind}alone"], strict=True):
        for head in (h for h in run if h.startswith("encoder self")):
            assert max(run[head].values()) < 0.4, head
            assert alone[head] >= 0.95, head


@ABLATIONS
def test_the_costliest_single_head_is_a_first_block_cross_head_in_every_seed(heads, kind):
    for alone in heads[ENCODER_DECODER][f"{kind}alone"]:
        costliest = min((h for h in alone if h != "none"), key=alone.get)
        assert costliest.startswith("cross 1."), costliest


@ABLATIONS
def test_in_the_encoder_decoder_the_least_copying_heads_cost_more_than_the_most_copying(heads,
                                                                                     kind):
    for groups in heads[ENCODER_DECODER][f"{kind}groups"]:
        assert groups["2 lowest copy"] < groups["2 highest copy"]
    # "In every seed those two are first-block cross-attention heads and the two that copy most
    # are second-block ones"
    for run in heads[ENCODER_DECODER]["patterns"]:
        groups = copy_groups(run)
        assert all(head.startswith("cross 1.") for head in groups["2 lowest copy"]), groups
        assert all(head.startswith("cross 2.") for head in groups["2 highest copy"]), groups


@ABLATIONS
def test_in_the_decoder_only_model_both_pairs_of_heads_are_costly(heads, kind):
    """The page: each pair off leaves at most about a quarter of the inputs right, every seed,
    "and which pair costs more differs from seed to seed"."""
    for groups in heads[DECODER_ONLY][f"{kind}groups"]:
        assert max(groups["2 lowest copy"], groups["2 highest copy"]) <= 0.3
    lowest_costs_more = {groups["2 lowest copy"] < groups["2 highest copy"]
                         for groups in heads[DECODER_ONLY][f"{kind}groups"]}
    assert lowest_costs_more == {True, False}


@ABLATIONS
def test_without_the_two_strongest_copy_heads_under_half_right(heads, kind):
    """The page: fewer than half of the inputs right in every seed of the encoder-decoder
    (at most 40 % on the first build machine; 38, 20 and 36 % on the site's models, 42, 20
    and 36 % in the retraining with AVX2 kernels)."""
    assert all(groups["2 highest copy"] < 0.5 for groups in heads[ENCODER_DECODER][f"{kind}groups"])


@ABLATIONS
def test_the_first_cross_block_off_costs_more_than_the_second(heads, kind):
    for groups in heads[ENCODER_DECODER][f"{kind}groups"]:
        assert groups["cross 1, all"] < groups["cross 2, all"]


def test_the_seeds_put_different_roles_in_the_same_slot(heads):
    """Seed 1: cross 2.3 reads the last letter; the decoder-only model's head 2.4 the letter
    copied one step before."""
    assert _top(heads[ENCODER_DECODER]["patterns"][1]["cross 2.3"]) == "last"
    assert _top(heads[DECODER_ONLY]["patterns"][1]["decoder self 2.4"]) == "last copy"
    assert _top(heads[ENCODER_DECODER]["patterns"][0]["cross 2.3"]) == "copy"


def test_the_decoder_only_copying_heads_are_in_its_second_block(heads):
    for run in heads[DECODER_ONLY]["patterns"]:
        assert max(run, key=lambda head: run[head]["copy"]).startswith("decoder self 2.")
        assert max(s["copy"] for s in _layer(run, "decoder self 1").values()) < 0.25


@ABLATIONS
def test_the_decoder_only_first_block_cannot_be_spared(heads, kind):
    results = heads[DECODER_ONLY]
    for run, alone, groups in zip(results["patterns"], results[f"{kind}alone"],
                                  results[f"{kind}groups"],
                                  strict=True):
        assert groups["decoder self 1, all"] == 0.0
        fatal = [head for head in _layer(run, "decoder self 1") if alone[head] == 0.0]
        assert any(_top(run[head]) == "separator" for head in fatal), fatal


@pytest.mark.parametrize(("kind", "at_most"), [("", 0.7), ("mean ", 0.9)], ids=["zero", "mean"])
def test_no_decoder_only_second_block_head_can_be_spared(heads, kind, at_most):
    """The page: without any one of them, at most 70 % of the inputs right in any seed when it
    is zeroed (at most 61 % on the first build machine, 60 % on the site's models, 62 % in the
    retraining with AVX2 kernels), fewer than nine in ten when it is set to its mean."""
    for alone in heads[DECODER_ONLY][f"{kind}alone"]:
        assert max(alone[f"decoder self 2.{head}"] for head in range(1, 5)) <= at_most


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_with_every_head_on_the_models_are_near_perfect(heads, name):
    """The baseline of the ablation table."""
    assert min(alone["none"] for alone in heads[name]["alone"]) >= 0.99


def _moved(name, side, move, lengths):
    return lengths_page.moved(name, side, move, lengths)


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_one_teacher_forced_pass_scores_what_greedy_decoding_gets_right(models, name):
    """The page scores every move in one teacher-forced pass: as trained, its exact match is
    greedy decoding's, length by length (the same 1,000 held-out inputs per length)."""
    for trained in models[name]:
        forced = cached_position_scores(trained, [10, 11, 12], samples=SAMPLES)["exact"]
        greedy = cached_accuracy_by_length(trained, INSIDE + BEYOND, SAMPLES)[9:12]
        assert forced == pytest.approx(greedy, abs=1e-9)


@pytest.mark.parametrize("name", list(TRANSFORMERS))
@pytest.mark.parametrize("side", ["source", "target"])
def test_positions_moved_one_on_break_inputs_the_model_reverses(name, side):
    """Lengths 6-9, where a shift of one keeps every position inside the trained range: every
    seed reverses them as trained, and rarely with either side's positions moved one on."""
    lengths = lengths_page.SHIFT_LENGTHS[:4]
    assert lengths == [6, 7, 8, 9]
    assert _moved(name, "both", "shift 0", lengths_page.SHIFT_LENGTHS)["exact"].min() >= 0.97
    moved = _moved(name, side, "shift 1", lengths_page.SHIFT_LENGTHS)["exact"][:, :4]
    assert moved.mean() < 0.25 and moved.max() < 0.5


@pytest.mark.parametrize("name", list(TRANSFORMERS))
@pytest.mark.parametrize("side", list(lengths_page.MOVES))
def test_the_further_the_shift_the_fewer_letters_right(name, side):
    letters = lengths_page.shifted(name, side)["letters"].mean(axis=0)  # per shift
    assert letters[0] > 0.99
    assert letters[1] < letters[0] and letters[-1] < letters[1]
    if side != "target":  # "the further the input's positions move, alone or with the outputs'"
        assert (np.diff(letters) < 0).all(), letters


def test_two_exceptions_at_ten_letters_in_the_decoder_only_model():
    # "with its separator and outputs moved, it still reverses at least three in ten of the
    # 10-letter inputs in every seed, against almost none of 6 to 9; with the whole sequence
    # moved, it reverses almost no 10-letter input, against many of 6 to 9"
    assert lengths_page.SHIFT_LENGTHS == [6, 7, 8, 9, 10]
    target = _moved(DECODER_ONLY, "target", "shift 1", lengths_page.SHIFT_LENGTHS)["exact"]
    assert target[:, 4].min() > 0.3 and target[:, :4].max() < 0.05
    both = _moved(DECODER_ONLY, "both", "shift 1", lengths_page.SHIFT_LENGTHS)["exact"]
    assert both[:, 4].max() < 0.01 and both[:, :4].mean() > 0.3


def test_moving_the_outputs_alone_is_not_so_regular():
    # "the encoder-decoder gets more letters right at a shift of 8 than at 4, in every seed, and
    # the decoder-only model's seeds go up and down"
    assert lengths_page.SHIFTS[-2:] == [4, 8]
    letters = lengths_page.shifted(ENCODER_DECODER, "target")["letters"]  # (seeds, shifts)
    assert (letters[:, -1] > letters[:, -2]).all()
    letters = lengths_page.shifted(DECODER_ONLY, "target")["letters"]
    assert (np.diff(letters, axis=1) > 0).any()


def test_the_encoder_decoder_with_its_encoder_moved_writes_the_letters_but_not_the_end():
    scores = _moved(ENCODER_DECODER, "source", "shift 1", lengths_page.SHIFT_LENGTHS)
    assert scores["letters"].mean(axis=1).min() > 0.9
    assert scores["end"].mean(axis=1).max() < 0.05


def test_the_encoder_decoder_with_its_encoder_moved_writes_on_past_the_end(models):
    """Greedy, 6 letters: no letter too many as trained; more for every position of shift."""
    runs = np.array([cached_extra_letters(trained, lengths_page.OVERRUN_LENGTH,
                                          lengths_page.OVERRUN_SHIFTS, lengths_page.SAMPLES)
                     for trained in models[ENCODER_DECODER]])  # (seeds, shifts)
    assert lengths_page.OVERRUN_SHIFTS == [0, 1, 2]
    assert np.abs(runs[:, 0]).max() < 0.05
    assert (runs[:, 1] > 0.5).all() and (runs[:, 2] > runs[:, 1]).all()


def test_the_encoder_decoder_with_its_decoder_moved_ends_right_but_misses_more_letters():
    scores = _moved(ENCODER_DECODER, "target", "shift 1", lengths_page.SHIFT_LENGTHS)
    encoder = _moved(ENCODER_DECODER, "source", "shift 1", lengths_page.SHIFT_LENGTHS)
    assert scores["end"].mean(axis=1).min() > 0.95
    assert scores["letters"].mean(axis=1).max() < encoder["letters"].mean(axis=1).min()


def test_the_decoder_only_model_loses_least_when_its_whole_sequence_moves():
    letters = {side: _moved(DECODER_ONLY, side, "shift 1", lengths_page.SHIFT_LENGTHS)
               ["letters"].mean(axis=1) for side in lengths_page.MOVES}  # per seed
    assert (letters["both"] > np.maximum(letters["source"], letters["target"])).all()
    assert letters["source"].mean() < 0.55 and letters["target"].mean() < 0.55  # half or more
    both = _moved(DECODER_ONLY, "both", "shift 1", lengths_page.SHIFT_LENGTHS)["exact"]
    assert both[:, :4].mean(axis=1).max() > 0.9  # one seed reverses nearly every input...
    # "two on, two seeds reverse none of them and the third about three in five of 6 to 8
    # letters and none of 9"
    assert lengths_page.SHIFT_LENGTHS[:4] == [6, 7, 8, 9]
    two = _moved(DECODER_ONLY, "both", "shift 2", lengths_page.SHIFT_LENGTHS)["exact"]
    third = int(np.argmax(two[:, :3].mean(axis=1)))
    others = [seed for seed in range(len(two)) if seed != third]
    assert two[others, :4].max() < 0.01
    assert 0.5 <= two[third, :3].mean() <= 0.7 and two[third, 3] < 0.01
    source = _moved(DECODER_ONLY, "source", "shift 1", lengths_page.SHIFT_LENGTHS)
    assert source["end"].min() > 0.95  # its end still right


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_squeezing_both_sides_brings_back_11_and_12_letters(name):
    squeeze = lengths_page.SQUEEZE_LENGTHS
    assert squeeze[:2] == [11, 12]
    both = _moved(name, "both", "squeeze", squeeze)["exact"]
    natural = _moved(name, "both", "natural", squeeze)["exact"]
    assert both[:, 0].min() > 0.85  # "most inputs of 11 letters, in every seed"
    assert both[:, 1].mean() > 0.5 and (both[:, 1] > natural[:, 1] + 0.25).all()  # "many of 12"


@pytest.mark.parametrize("name", list(TRANSFORMERS))
@pytest.mark.parametrize("side", ["source", "target"])
def test_squeezing_one_side_alone_does_almost_nothing_for_exact_match(name, side):
    one = _moved(name, side, "squeeze", lengths_page.SQUEEZE_LENGTHS)["exact"]
    natural = _moved(name, "both", "natural", lengths_page.SQUEEZE_LENGTHS)["exact"]
    assert one[:, 1:].max() < 0.05  # 12 letters and more, every seed
    assert one[:, 0].mean() < natural[:, 0].mean() + 0.15  # 11 letters: about as trained


@pytest.mark.parametrize("name", list(TRANSFORMERS))
def test_squeezed_the_exact_match_falls_with_length_and_letters_hold_up_better(name):
    squeeze = lengths_page.SQUEEZE_LENGTHS
    both = _moved(name, "both", "squeeze", squeeze)
    natural = _moved(name, "both", "natural", squeeze)
    exact = both["exact"].mean(axis=0)
    assert exact[0] > exact[2] > exact[-1] and exact[-1] < 0.05  # 11 > 13 > 20 letters
    assert (both["letters"][:, -1] > natural["letters"][:, -1] + 0.1).all()  # 20 letters



def test_reversal_is_no_fixed_offset_but_two_distances():
    """The page: in the encoder-decoder, step t reads input position n - 1 - t, an offset of
    n - 1 - 2t from the step's position; in the decoder-only model (input at 0..n-1, the
    separator at n, step t's query at n + t) the letter sits 2t + 1 before the query. The offset
    changes at every step, while the step's distance from the output's start (t) equals the
    letter's distance from the input's end (n - 1 - position) at every step."""
    from attnprimer.tasks import ReversalTransformerTask
    task = ReversalTransformerTask()
    for n in range(2, task.vocab_size + 1):  # distinct letters: each target names its position
        inputs = torch.nn.functional.pad(torch.arange(1, n + 1)[None], (0, task.max_len - n))
        targets = task.targets_for(inputs)[0]
        read = [int((inputs[0] == targets[t]).nonzero()[0]) for t in range(n)]
        assert read == [n - 1 - t for t in range(n)]
        encoder_decoder = {position - t for t, position in enumerate(read)}
        decoder_only = {position - (n + t) for t, position in enumerate(read)}
        assert encoder_decoder == {n - 1 - 2 * t for t in range(n)} and len(encoder_decoder) == n
        assert decoder_only == {-(2 * t + 1) for t in range(n)}
        assert all(t == n - 1 - position for t, position in enumerate(read))
