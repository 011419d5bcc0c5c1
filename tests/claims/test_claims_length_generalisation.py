"""The claims of the chapter "Train short, test long", every seed.

They read the page's numbers through the same result cache as its figures and tables
(``attnprimer.site.experiments.length_generalisation``,
``attnprimer.site.figures.length_generalisation``),
on the site's trained models: five position schemes, copy and reverse, three seeds each
(rotary eight).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnprimer.site.catalogue import LENGTH_SCHEMES, NOPE_LONGER_STEPS, ROTARY_SEEDS, site_seeds
from attnprimer.site.experiments.length_generalisation import (
    cached_first_errors,
    cached_source_attention,
)
from attnprimer.site.figures.length_generalisation import (
    ATTENTION_LENGTH,
    FAIL_LENGTH,
    LENGTHS,
    ROTARY_LATE,
    SAMPLES,
    TRAIN_MAX,
    _best_head,
    beyond,
    exact,
    relative_entries,
    rotary_pair_angles,
    seeds,
)
from attnprimer.tasks import CopyReverseTask

OFFSET_SCHEMES = ("relative", "alibi", "rotary")


@pytest.fixture(scope="module")
def runs(site_models):
    """Exact match (seeds, lengths) of every task and scheme, models trained on demand."""
    for operation in ("copy", "reverse"):
        for scheme in LENGTH_SCHEMES:
            for model in site_seeds("copy-reverse", operation=operation, pos_enc=scheme):
                site_models(model)
    return {(operation, scheme): exact(operation, scheme)
            for operation in ("copy", "reverse") for scheme in LENGTH_SCHEMES}


def at(runs, operation, scheme, length):
    """Every seed's exact match at ``length`` letters: (seeds,)."""
    return runs[operation, scheme][:, LENGTHS.index(length)]


def survival(operation, scheme, steps):
    """Every seed's share of 10-letter inputs right for the first ``steps`` output steps."""
    shares = np.array([cached_first_errors(trained, LENGTHS, SAMPLES)[FAIL_LENGTH]
                       for trained in seeds(operation, scheme)])
    return 1 - shares[:, :steps].sum(axis=1)


def test_the_setting_the_page_describes():
    task = CopyReverseTask()
    assert (task.max_len, task.vocab_size, task.dim, task.heads, task.layers) == (8, 8, 32, 4, 2)
    assert list(range(1, 17)) == LENGTHS and SAMPLES == 1000 and FAIL_LENGTH == 10
    assert CopyReverseTask.train_defaults == {"steps": 1500, "lr": 1e-2, "batch_size": 64,
                                              "schedule": "warmup-cosine"}
    for scheme in LENGTH_SCHEMES:  # "about 26,000 parameters"
        model = CopyReverseTask(pos_enc=scheme).build_model()
        assert 25_500 < sum(p.numel() for p in model.parameters()) < 26_500
    assert len(site_seeds("copy-reverse", pos_enc="none", steps=NOPE_LONGER_STEPS)) == 3


def test_four_schemes_learn_the_training_lengths_and_nope_does_not(runs):
    for operation in ("copy", "reverse"):
        for scheme in LENGTH_SCHEMES:
            if scheme != "none":  # "over 90 % ... in every seed"
                assert at(runs, operation, scheme, TRAIN_MAX).min() > 0.9, (operation, scheme)
    # copy: every seed at least 99 % up to 4 letters, "then slips, to about 90 % at 8 on average"
    assert min(at(runs, "copy", "none", length).min() for length in range(1, 5)) >= 0.99
    assert 0.85 <= at(runs, "copy", "none", TRAIN_MAX).mean() <= 0.95
    assert at(runs, "reverse", "none", TRAIN_MAX).max() < 0.7  # "no seed gets 70 %"


def test_nope_nearly_learns_copy_and_is_still_behind_the_offset_schemes_beyond(runs):
    # "On copy it nearly has (about 90 % at 8 letters on average), and beyond them it is still
    # behind the relative bias and ALiBi in every seed, and behind rotary on average" (the page
    # said NoPE copies more than two rotary seeds, true on the AMD EPYC machines that built it
    # before, not on an Intel Xeon's retraining of the same code)
    assert 0.85 <= at(runs, "copy", "none", TRAIN_MAX).mean() <= 0.95
    nope = beyond(runs["copy", "none"])
    for scheme in ("relative", "alibi"):
        assert beyond(runs["copy", scheme]).min() > nope.max(), scheme
    assert beyond(runs["copy", "rotary"]).mean() > nope.mean()


def test_absolute_sinusoids_fail_at_once_and_are_last(runs):
    for operation in ("copy", "reverse"):
        assert at(runs, operation, "sinusoidal", TRAIN_MAX + 1).max() <= 0.005
        means = {scheme: beyond(runs[operation, scheme]).mean() for scheme in LENGTH_SCHEMES}
        assert min(means, key=means.get) == "sinusoidal"


def test_rotary_is_trained_in_eight_seeds_far_apart_none_going_far(runs):
    # issue 37, item 8: three rotary seeds were far apart, so rotary has eight (the page said
    # "at least two of its three seeds fail almost at once"; with eight the spread is wide and
    # not two groups, and the page says so)
    assert len(ROTARY_SEEDS) == runs["copy", "rotary"].shape[0] == 8
    assert all(runs[op, scheme].shape[0] == 3 for op in ("copy", "reverse")
               for scheme in LENGTH_SCHEMES if scheme != "rotary")
    copy_nine = at(runs, "copy", "rotary", TRAIN_MAX + 1)
    # "At 9 letters one copies most of the inputs and another under a tenth"
    assert copy_nine.max() > 0.5 and copy_nine.min() < 0.1
    # "no seed copies a quarter of the inputs or reverses one in twenty" (9 to 16 letters)
    assert beyond(runs["copy", "rotary"]).max() < 0.25
    assert beyond(runs["reverse", "rotary"]).max() < 0.05
    # "spread over the whole range between their extremes rather than two groups": at 9 letters
    # at least half the seeds copy more than a tenth away from both extremes
    low, high = copy_nine.min() + 0.1, copy_nine.max() - 0.1
    assert ((copy_nine > low) & (copy_nine < high)).sum() >= 4
    # "several seeds copy more of the 14-letter inputs than of the 10- to 12-letter ones"
    ten_to_twelve = np.stack([at(runs, "copy", "rotary", n) for n in (10, 11, 12)]).max(axis=0)
    assert (at(runs, "copy", "rotary", ROTARY_LATE) > ten_to_twelve).sum() >= 2


def test_rotary_pairs_put_offset_seven_near_offset_one():
    """D_h = 8: four pairs at 1, 0.1, 0.01 and 0.001 rad per position; on the fast one offset 7
    is a full turn and 0.72 rad, 0.28 rad from offset 1 (closer than offset 1 is to 0)."""
    pairs = rotary_pair_angles()
    assert [round(speed, 6) for speed, _ in pairs] == [1.0, 0.1, 0.01, 0.001]
    (fast, (one, seven)), *slow = pairs
    gap = min(abs(one - seven), 2 * np.pi - abs(one - seven))
    assert abs(gap - (2 * np.pi - 6)) < 1e-9 and gap < fast * 1  # nearer than offsets 0 and 1
    assert all(speed <= 0.1 for speed, _ in slow)  # neighbours 0.1 rad apart or less there


def test_the_relative_bias_learns_136_numbers_and_uses_72(runs):
    counts = relative_entries()
    task = CopyReverseTask()
    assert counts["entries"] == 136 == task.heads * task.layers * (2 * TRAIN_MAX + 1)
    assert counts["used"] == 72 == task.heads * task.layers * (TRAIN_MAX + 1)
    # "in every trained model they are still the zero they started at"
    assert counts["moved"] == counts["max_moved"] == counts["used"]


def test_the_relative_bias_goes_furthest_on_copy(runs):
    sixteen = at(runs, "copy", "relative", 2 * TRAIN_MAX)
    assert 0.4 <= sixteen.mean() <= 0.7  # "about half of the inputs on average"
    assert sixteen.min() > 0.25  # "each seed more than a quarter"
    relative = beyond(runs["copy", "relative"])
    for scheme in LENGTH_SCHEMES:
        if scheme != "relative":  # every seed above every seed of any other scheme
            assert relative.min() > beyond(runs["copy", scheme]).max(), scheme
    # ALiBi keeps most 9- and 10-letter copies, with a wide spread between seeds
    assert at(runs, "copy", "alibi", 9).mean() > 0.5 and at(runs, "copy", "alibi", 10).mean() > 0.5
    assert np.ptp(beyond(runs["copy", "alibi"])) > 0.2
    # "and falls after, to near 0 at 16 letters"
    assert at(runs, "copy", "alibi", 12).mean() < at(runs, "copy", "alibi", 10).mean()
    assert at(runs, "copy", "alibi", 2 * TRAIN_MAX).mean() < 0.1


def test_reverse_is_harder_for_all_five(runs):
    for scheme in ("relative", "alibi"):  # over 90 % of 9-letter copies, about 3/4 of reversals
        assert at(runs, "copy", scheme, 9).mean() > 0.9, scheme
        assert 0.6 <= at(runs, "reverse", scheme, 9).mean() <= 0.85, scheme
    for scheme in LENGTH_SCHEMES:
        assert at(runs, "reverse", scheme, TRAIN_MAX + 3).mean() < 0.1, scheme  # "a tenth"
        for length in range(TRAIN_MAX + 4, 2 * TRAIN_MAX + 1):  # "no seed ... 5 %"
            assert at(runs, "reverse", scheme, length).max() < 0.05, (scheme, length)
    # the relative bias and ALiBi level: neither above the other in every seed
    relative, alibi = (beyond(runs["reverse", scheme]) for scheme in ("relative", "alibi"))
    assert relative.min() < alibi.max() and alibi.min() < relative.max()
    # rotary behind them on average on both tasks, the sinusoids last (0 in every seed)
    for operation in ("copy", "reverse"):
        ahead = min(beyond(runs[operation, scheme]).mean() for scheme in ("relative", "alibi"))
        assert beyond(runs[operation, "rotary"]).mean() < ahead, operation
        assert beyond(runs[operation, "sinusoidal"]).max() == 0, operation


def test_nope_trained_twice_as_long_gets_further_on_reverse(runs, site_models):
    longer = site_seeds("copy-reverse", pos_enc="none", steps=NOPE_LONGER_STEPS)
    for model in longer:
        site_models(model)
    twice = exact("reverse", "none", steps=NOPE_LONGER_STEPS)
    once = runs["reverse", "none"]
    eight, nine = LENGTHS.index(TRAIN_MAX), LENGTHS.index(TRAIN_MAX + 1)
    assert twice[:, eight].min() > once[:, eight].max()  # at 8 letters, every seed
    assert twice[:, nine].mean() > once[:, nine].mean()  # at 9, on average
    others = min(at(runs, "reverse", scheme, TRAIN_MAX).min()
                 for scheme in LENGTH_SCHEMES if scheme != "none")
    assert twice[:, eight].max() < others  # still short of every seed of the other schemes
    assert twice[:, nine + 1:].max() < 0.01  # and near 0 from 10 letters on, every seed


def test_where_copy_goes_wrong_at_ten_letters(runs):
    assert survival("copy", "sinusoidal", 2).mean() < 0.2  # most lost in the first two steps
    assert survival("copy", "none", 5).mean() < 0.1  # NoPE over the first five
    # rotary "on average keeps most of them through steps 0 to 3 (how many differs from seed to
    # seed), loses most of them over steps 4 to 8": 0.92 to 0.99 kept here (0.95 on average;
    # earlier retrainings had one seed as low as 0.72); the losses of steps 4 to 8 far outweigh
    # those before
    kept, after = survival("copy", "rotary", 4).mean(), survival("copy", "rotary", 9).mean()
    assert kept > 0.8 and after < 0.3
    assert kept - after > 2 * (1 - kept)
    # ALiBi loses inputs at the steps that write letters 9 and 10, few before
    kept = survival("copy", "alibi", 8).mean()
    assert kept > 0.9  # over 90 % through the first eight steps
    assert kept - survival("copy", "alibi", 10).mean() > 1 - kept  # most losses at steps 8, 9
    assert survival("copy", "alibi", 10).mean() < 0.8
    assert survival("copy", "relative", 11).mean() > 0.85  # "loses few anywhere"


def test_reverse_fails_on_steps_whose_offsets_training_had(runs):
    """Steps 0..7 of a 10-letter reversal read 1..15 columns back, offsets every 8-letter
    training input needs; the offset schemes lose inputs on them all the same."""
    needed = [2 * step + 1 for step in range(8)]
    assert max(needed) == 2 * (TRAIN_MAX - 1) + 1
    for scheme in OFFSET_SCHEMES:
        assert survival("reverse", scheme, 8).mean() < 0.5, scheme
    assert 0.8 < survival("reverse", "alibi", 1).mean() < 0.98  # "some" at the first step
    # rotary (eight seeds) "keeps nine in ten inputs or more through the first three steps in
    # most of its seeds. Then every seed loses most of them within the first six steps, whose
    # offsets training had; in some seeds the loss comes at the fourth step, offset 7" (issue 37
    # restated these over eight seeds: "in every seed" held for the first three only)
    assert (survival("reverse", "rotary", 3) >= 0.9 - 1e-6).sum() >= 5  # 900 of 1,000, float32
    assert survival("reverse", "rotary", 6).max() < 0.5
    assert 2 * (TRAIN_MAX - 1) + 1 >= 11  # step 5 reads 11 back: an offset training had
    losses = -np.diff(np.stack([survival("reverse", "rotary", steps) for steps in range(9)]),
                      axis=0)  # (steps, seeds): the share lost at each step
    assert (losses.argmax(axis=0) == 3).sum() >= 1  # the largest loss at step 3, offset 7
    for scheme in ("relative", "alibi"):
        assert 0.15 < survival("reverse", scheme, 11).mean() < 0.35  # "about a quarter"
        # "fewer of rotary's on average"
        assert survival("reverse", "rotary", 11).mean() < survival("reverse", scheme, 11).mean()
    assert survival("reverse", "sinusoidal", 2).mean() < 0.1
    assert survival("reverse", "none", 3).mean() < 0.15


def test_each_schemes_copying_head_loses_the_letter_on_long_inputs(runs):
    for scheme in LENGTH_SCHEMES:
        trained = seeds("reverse", scheme)[0]
        head = _best_head(trained)
        assert head.startswith("decoder self 2."), scheme  # a second-block head
        short = cached_source_attention(trained, TRAIN_MAX)["on_source"][head]
        long = cached_source_attention(trained, ATTENTION_LENGTH)["on_source"][head]
        # a third or more on 8 letters, less than half as much on 16
        assert short >= 1 / 3 and long < short / 2, (scheme, short, long)
    # rotary's head: nearly all its weight on the letter at five of eight steps, none at three
    trained = seeds("reverse", "rotary")[0]
    example = cached_source_attention(trained, TRAIN_MAX, samples=1)["example"][
        _best_head(trained)]
    on_letter = [example[step][TRAIN_MAX - 1 - step] for step in range(TRAIN_MAX)]
    assert sum(w > 0.9 for w in on_letter) == 5 and sum(w < 0.1 for w in on_letter) == 3


def test_where_each_head_looks_on_the_sixteen_letter_example(runs):
    """The heatmaps' alt text, bottom row (seed 0, reverse, the drawn 16-letter input)."""
    def most_weighted(scheme):
        trained = seeds("reverse", scheme)[0]
        example = cached_source_attention(trained, ATTENTION_LENGTH, samples=1)["example"][
            _best_head(trained)]
        return np.asarray(example).argmax(axis=1)  # (steps,): the letter column per step

    squares = np.arange(ATTENTION_LENGTH)[::-1]  # step t should read letter L - 1 - t
    # NoPE's and the sinusoidal head: among the first five letters at most steps
    for scheme in ("none", "sinusoidal"):
        assert (most_weighted(scheme) <= 4).sum() >= 12, scheme
    # the relative bias's from the fifth step on; before, at most six letters left of the square
    relative = most_weighted("relative")
    assert (relative[4:] <= 4).all()
    assert ((squares[:4] - relative[:4] >= 0) & (squares[:4] - relative[:4] <= 6)).all()
    # ALiBi's: mostly a band parallel to the anti-diagonal, two to six letters to its left (all
    # of steps 2 to 12 two to five letters left on the AMD EPYC machines that built the page
    # before; on an Intel Xeon one of them one letter right, one six letters left)
    left = squares - most_weighted("alibi")
    assert ((left[2:13] >= 2) & (left[2:13] <= 6)).sum() >= 9
