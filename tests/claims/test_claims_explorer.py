"""The explorer's export: exact weights, only what the forward pass needs, deterministic bytes.

Checked on the site's trained models, with the claims ``docs/explorer.md`` makes about them.
The browser side (that the page computes what PyTorch computes) is tested on the built site,
in ``tests/site/test_explorer.py``.
"""

from __future__ import annotations

import json
import os

import pytest
import torch

from attnprimer.positional import POSITIONAL_ENCODINGS, SinusoidalEncoding, apply_rotary
from attnprimer.site.catalogue import SIGNAL_EXAMPLE
from attnprimer.site.explorer import families as explorer_exports
from attnprimer.site.explorer.export import (
    EXPLORER_FORMAT,
    decode_array,
    encode_array,
    explorer_data,
    explorer_json,
    explorer_labels,
    explorer_models,
    export_counting,
    export_reversal,
    export_transformer,
    write_explorer_data,
)
from attnprimer.training.model_cache import cached_evaluation
from attnprimer.training.train import Evaluation, evaluate, held_out_generator, predict, predict_one


def _decoded(trained, output):
    return trained.task.decode_output(output.logits.argmax(-1)[0])


@pytest.fixture(scope="module")
def models(site_models):
    """The trained models the page runs, by their explorer name."""
    return {name: site_models(model) for name, model in explorer_models().items()}


@pytest.fixture(scope="module")
def data(models):
    return explorer_data(models, held_out=False)


def _exported(data, name):
    family, _, variant = name.partition("/")
    return data[family][variant] if variant else data[family]


def _entries(data):
    return [_exported(data, name) for name in explorer_labels()]


def test_every_parameter_goes_out_exactly_and_nothing_else(models, data):
    for name, trained in models.items():
        exported = _exported(data, name)
        state = trained.model.state_dict()  # the sinusoidal table is not in it: not persistent
        assert set(exported["weights"]) == set(state), name
        for key, entry in exported["weights"].items():
            expected = state[key]
            if key == "position.table":  # learned encoding: the rows of the task's positions
                expected = expected[: trained.task.length]
            assert entry["shape"] == list(expected.shape), (name, key)
            assert torch.equal(decode_array(entry), expected), (name, key)


def test_the_task_settings_the_page_needs(models, data):
    counting = data["counting"]
    task = models["counting"].task
    assert counting["alphabet"] == task.alphabet == " ABC"
    assert counting["blank"] == " " and counting["input_length"] == task.max_len == 10
    assert counting["output_labels"] == ["A", "B", "C"]
    assert counting["num_classes"] == task.num_classes
    assert counting["label"] == "counting, seed 0"
    assert list(data["signal"]) == list(POSITIONAL_ENCODINGS)
    for encoding, exported in data["signal"].items():
        task = models[f"signal/{encoding}"].task
        assert exported["pos_enc"] == task.pos_enc == encoding
        assert exported["input_length"] == task.length == 11
        assert exported["letters"] == "ABC" and exported["num_classes"] == task.num_classes
        if encoding == "learned":
            assert exported["weights"]["position.table"]["shape"] == [11, 64]
        else:
            assert "position.table" not in exported["weights"]
    for variant, self_attention in (("plain", False), ("self-attention", True)):
        exported, task = data["difference"][variant], models[f"difference/{variant}"].task
        assert exported["self_attention"] is task.self_att is self_attention
        assert exported["output_labels"] == ["A", "B", "C", "|A-B|"]
        assert exported["alphabet"] == " ABC" and exported["input_length"] == 10
    for decoder in ("vanilla", "peeky", "attention"):
        exported, task = data["reversal"][decoder], models[f"reversal/{decoder}"].task
        assert exported["decoder"] == task.decoder == decoder
        assert exported["letters"] == "ABCDEFGH" and exported["end"] == task.end == 9
        assert exported["start"] == task.num_classes == 10  # the decoder's extra embedding
        assert exported["trained_lengths"] == [1, 10] and exported["longest_input"] == 20
    transformer, task = data["transformer"]["encoder-decoder"], \
        models["transformer/encoder-decoder"].task
    assert (transformer["dim"], transformer["heads"], transformer["layers"]) == (32, 4, 2)
    assert transformer["pre_norm"] is task.pre_norm is True
    assert transformer["max_positions"] >= transformer["longest_input"] + 1  # T = S + 1
    assert transformer["position_base"] == data["signal"]["sinusoidal"]["position_base"]
    assert data["format"] == EXPLORER_FORMAT
    assert data["examples"] == {"counting": "AACCB CCCB", "signal": "BCACABBAACB",
                                "difference": "BBBA ACABB", "reversal": "HEADBADGE",
                                "transformer": "HEADBADGE"}


def test_the_exported_base_reproduces_the_models_encodings(models, data):
    """The script computes the sinusoid and the rotation from ``position_base``: it must fit."""
    base = data["signal"]["sinusoidal"]["position_base"]
    sinusoidal = models["signal/sinusoidal"].model.position
    assert isinstance(sinusoidal, SinusoidalEncoding)
    reference = SinusoidalEncoding(64, max_positions=11)
    torch.testing.assert_close(sinusoidal.table[:11], reference.table, atol=0, rtol=0)
    x = torch.randn(11, 64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(apply_rotary(x, base=base), apply_rotary(x), atol=0, rtol=0)
    assert {exported["position_base"] for exported in data["signal"].values()} == {base}


def test_the_held_out_exact_match_is_the_chapters(models):
    exported = export_counting(models["counting"])
    result = evaluate(models["counting"])
    assert exported["held_out"] == {"exact_match": result.exact_match, "samples": 10_000,
                                    "seed": result.seed}


def test_an_unchanged_model_keeps_its_held_out_result_and_a_changed_one_is_evaluated(
        models, data, monkeypatch):
    earlier = {"exact_match": 0.5, "samples": 10_000, "seed": 1234}
    previous = json.loads(explorer_json(data))
    for entry in _entries(previous):
        entry["held_out"] = earlier
    monkeypatch.setattr(explorer_exports, "evaluate",
                        lambda *args, **kwargs: pytest.fail("evaluated"))
    again = explorer_data(models, previous=previous)
    assert [entry["held_out"] for entry in _entries(again)] == [earlier] * len(models)

    previous["signal"]["rotary"]["weights"]["query"] = encode_array(torch.zeros(1, 64))
    evaluated = []

    def evaluate_anew(trained, **settings):
        evaluated.append(trained)
        return Evaluation(0.25, [0.25], settings["samples"], settings["seed"])

    monkeypatch.setattr(explorer_exports, "evaluate", evaluate_anew)
    again = explorer_data(models, previous=previous)
    assert evaluated == [models["signal/rotary"]]
    assert again["signal"]["rotary"]["held_out"]["exact_match"] == 0.25
    assert again["signal"]["learned"]["held_out"] == earlier


def test_the_file_is_deterministic(models, data):
    first = explorer_json(data)
    assert explorer_json(explorer_data(models, held_out=False)) == first
    assert json.loads(first) == json.loads(json.dumps(data))  # plain JSON: nothing lost
    assert first.endswith(b"\n") and first.count(b"\n") == 1


def test_explorer_data_needs_every_model(models):
    with pytest.raises(ValueError, match="no model for signal/rotary"):
        explorer_data({name: model for name, model in models.items() if name != "signal/rotary"})


def test_write_keeps_an_unchanged_file_and_replaces_a_changed_one(tmp_path, data):
    path = tmp_path / "explorer" / "models.json"
    assert write_explorer_data(path, data) is True
    assert path.read_bytes() == explorer_json(data)
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)  # readable by a web server
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))  # so that a rewrite would show
    assert write_explorer_data(path, data) is False
    assert path.stat().st_mtime_ns == before - 10**9
    assert write_explorer_data(path, {**data, "format": EXPLORER_FORMAT + 1}) is True
    assert json.loads(path.read_bytes())["format"] == EXPLORER_FORMAT + 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["models.json"]  # no temporary left


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, data, monkeypatch):
    path = tmp_path / "models.json"
    write_explorer_data(path, {"format": EXPLORER_FORMAT})
    old = path.read_bytes()

    def crash(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        write_explorer_data(path, data)
    assert path.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["models.json"]


def test_non_site_models_are_refused(models):
    with pytest.raises(TypeError, match="expected a counting model, got SignalTask"):
        export_counting(models["signal/none"])
    with pytest.raises(TypeError, match="expected a counting model, got DifferenceTask"):
        export_counting(models["difference/plain"])
    with pytest.raises(TypeError, match="expected a reversal model, got ReversalTransformerTask"):
        export_reversal(models["transformer/encoder-decoder"])
    with pytest.raises(TypeError, match="expected a encoder-decoder Transformer model"):
        export_transformer(models["reversal/attention"])


def test_the_file_stays_within_its_budget(data):
    """All exported weights together: at most 2 MB (a phone downloads them to use the page)."""
    assert len(explorer_json(data)) <= 2_000_000


def test_every_model_the_page_runs_has_a_label_and_the_page_an_example(data):
    assert list(explorer_labels()) == list(explorer_models())
    pages = {name.partition("/")[0] for name in explorer_labels()}
    assert sorted(data["examples"]) == sorted(pages)
    for name, label in explorer_labels().items():
        assert _exported(data, name)["label"] == label
        assert label.endswith("seed 0") and explorer_models()[name].config.seed == 0


def test_claim_the_counting_model_gets_ten_as_wrong(models):
    task, model = models["counting"].task, models["counting"].model
    tokens = task.encode("A" * task.max_len)
    _, predictions = predict(model, tokens[None])
    assert predictions[0].tolist() != task.targets_for(tokens[None])[0].tolist()


def test_claim_each_query_weighs_its_letter_above_the_rest_and_not_only_it(models):
    # "Each query weighs every position of its own letter above any other position, and puts all
    # of its weight there only when every position holds its letter", on held-out inputs (when
    # every position holds it, the row's sum is all of it by construction)
    task, model = models["counting"].task, models["counting"].model
    inputs = task.sample(500, held_out_generator()).inputs  # (B, S)
    weights = predict(model, inputs)[0].attention["encoder-decoder"]  # (B, T, S)
    for query, letter in enumerate(task.output_labels()):
        own = inputs == task.encode(letter)[0]  # (B, S)
        present = own.any(dim=1)
        row = weights[:, query]
        lowest_own = row.masked_fill(~own, float("inf")).min(dim=1).values
        highest_other = row.masked_fill(own, float("-inf")).max(dim=1).values
        assert (lowest_own > highest_other)[present].all(), letter
        assert ((row * own).sum(dim=1) < 1)[present].all(), letter


def test_claim_the_signal_example_is_one_the_learned_model_gives_little_weight(models):
    # "For the learned model this example is far below it: each learned seed gives one signal
    # letter little weight, seed 0 (this model) a B, and the example's signal is a B; the model
    # still answers it right"
    task, model = models["signal/learned"].task, models["signal/learned"].model
    tokens = task.encode(SIGNAL_EXAMPLE)
    prediction, attention = predict_one(model, tokens)
    assert SIGNAL_EXAMPLE[0] == "B"
    assert prediction.tolist() == task.targets_for(tokens[None])[0].tolist()
    assert attention["encoder-decoder"][0, 0] < 2 / len(SIGNAL_EXAMPLE)  # under twice even
    # "The sinusoidal model (seed 0) reads position 0 heavily here, more than five times an
    # even share"
    sinusoidal = models["signal/sinusoidal"]
    _, attention = predict_one(sinusoidal.model, sinusoidal.task.encode(SIGNAL_EXAMPLE))
    assert attention["encoder-decoder"][0, 0] > 5 / len(SIGNAL_EXAMPLE)


def test_claim_shuffling_moves_the_counting_weights_with_the_letters(models):
    task, model = models["counting"].task, models["counting"].model
    inputs = task.sample(200, held_out_generator()).inputs  # (B, S)
    order = torch.randperm(task.max_len, generator=torch.Generator().manual_seed(0))
    output, predictions = predict(model, inputs)
    shuffled, shuffled_predictions = predict(model, inputs[:, order])
    assert torch.equal(shuffled_predictions, predictions)
    torch.testing.assert_close(shuffled.attention["encoder-decoder"],
                               output.attention["encoder-decoder"][..., order])


def test_claim_without_an_encoding_copies_of_a_letter_look_alike(models):
    task, model = models["signal/none"].task, models["signal/none"].model
    inputs = task.sample(200, held_out_generator()).inputs  # (B, S)
    output, predictions = predict(model, inputs)
    same = inputs[:, :, None] == inputs[:, None, :]  # (B, S, S): positions holding one letter
    reading = output.attention["encoder-decoder"][:, 0]  # (B, S)
    # Equal up to float32 rounding (the batched products round each position a little apart).
    torch.testing.assert_close(reading[:, :, None].expand_as(same)[same],
                               reading[:, None, :].expand_as(same)[same], atol=1e-6, rtol=0)
    encoder = output.attention["encoder self"]  # (B, S, S): equal letters, equal rows
    b, i, j = same.nonzero().unbind(dim=1)
    torch.testing.assert_close(encoder[b, i], encoder[b, j], atol=1e-6, rtol=0)
    moved = torch.cat([inputs[:, 1:], inputs[:, :1]], dim=1)  # the signal moved to the end
    _, moved_predictions = predict(model, moved)
    assert torch.equal(moved_predictions, predictions)


def test_claim_the_rotary_encoder_reads_the_signal_from_every_later_position(models):
    task, model = models["signal/rotary"].task, models["signal/rotary"].model
    inputs = task.sample(2000, held_out_generator()).inputs  # (B, S)
    output, _ = predict(model, inputs)
    on_signal = output.attention["encoder self"][:, 1:, 0]  # (B, S - 1): later rows, column 0
    assert on_signal.mean() > 0.9
    assert (on_signal > 0.5).float().mean() > 0.99  # "almost every position"


def test_the_file_is_about_the_size_the_page_says(data):
    assert 1_600_000 <= len(explorer_json(data)) < 1_800_000  # "about 1.7 MB"


def test_claim_the_difference_step_needs_the_larger_count_on_the_example(models):
    from attnprimer.site.catalogue import DIFFERENCE_EXAMPLE
    from attnprimer.site.explorer.interventions import difference_intervened

    trained = models["difference/self-attention"]
    tokens = trained.task.encode(DIFFERENCE_EXAMPLE)[None]
    assert trained.task.targets_for(tokens)[0].tolist() == [3, 5, 1, 2]  # three As, five Bs

    def answer(**intervention):
        return difference_intervened(trained.model, tokens, **intervention).logits[0, 3].argmax()

    assert answer() == 2
    assert answer(blocked=[1]) == 0  # the B step, the larger count
    assert answer(blocked=[0]) == 2  # the A step
    assert answer(swap=True) == 0
    assert answer(blocked=[3]) == 2  # itself
    assert answer(blocked=[2]) == 3  # the C step
    # "which fits the chapter: over held-out sequences blocking the C step costs about as much
    # as blocking the smaller count, in this seed more"
    from attnprimer.site.experiments.difference_model import cached_block_and_swap

    held_out = cached_block_and_swap(trained)
    assert held_out["block the other letters"] < held_out["block the smaller count"]
    plain = models["difference/plain"]
    assert plain.model(tokens).logits[0].argmax(-1).tolist() == [3, 5, 1, 2]


def test_claim_the_attention_decoder_reads_one_to_the_right_on_the_example(models):
    from attnprimer.site.catalogue import REVERSAL_EXAMPLE

    trained = models["reversal/attention"]
    tokens = trained.task.encode(REVERSAL_EXAMPLE)[None]
    weights = trained.model(tokens).attention["encoder-decoder"][0]  # (T, S)
    n = len(REVERSAL_EXAMPLE)
    for step in range(1, n):  # step t writes the letter at n - 1 - t
        assert weights[step].argmax() == n - 1 - step + 1, step
    assert REVERSAL_EXAMPLE[7] == "G" and weights[1].argmax() == 8


def test_claim_a_forced_step_mostly_writes_the_letter_it_was_given(models, site_models):
    """The page's model (seed 0) and the two other seeds of its recipe: forced onto position 0,
    step 3 writes H; of the 81 forcings, most make the step write the letter at the position it
    was given, and more do that than write the letter to its left. (How many, and what the
    steps after a forced one write, vary with the run: on the first build machine seed 0 wrote
    its own letter in 63 of 81 and EGDHAEH. forced as above; on the second, 60 and EGDHEAEH.)"""
    from attnprimer.site.catalogue import REVERSAL_DECODERS, REVERSAL_EXAMPLE, site_seeds
    from attnprimer.site.explorer.interventions import reversal_forced

    seeds = [site_models(model)
             for model in site_seeds("reversal", **REVERSAL_DECODERS["attention (additive)"])]
    assert seeds[0].config == models["reversal/attention"].config  # the page's model
    n = len(REVERSAL_EXAMPLE)
    for trained in seeds:
        alphabet = trained.task.alphabet
        tokens = trained.task.encode(REVERSAL_EXAMPLE)[None]
        assert _decoded(trained, reversal_forced(trained.model, tokens)) == "EGDABDAEH."
        assert _decoded(trained, reversal_forced(trained.model, tokens, {3: 0}))[:4] == "EGDH"
        own = left = 0
        for step in range(n):
            for position in range(n):
                written = int(reversal_forced(trained.model, tokens, {step: position})
                              .logits[0, step].argmax())
                own += written == alphabet.index(REVERSAL_EXAMPLE[position])
                left += position > 0 and written == alphabet.index(REVERSAL_EXAMPLE[position - 1])
        assert own > n * n / 2 and own > left, (trained.config.seed, own, left)


def test_claim_past_ten_letters_one_input_says_little(models, site_models):
    """On twelve letters the page's vanilla and peeky decoders fail, and some seed of each of the
    three recipes writes the reversal; over held-out inputs of 11 to 20 letters the additive model
    is right several times as often as the vanilla one in every seed, and wrong on most; at twenty
    letters no seed of the four recipes writes it. (Earlier wordings, "every attention seed
    reverses twelve letters" and "at twenty it writes eleven or twelve letters, begun DC", each
    held on one build machine's models and failed on another's: rounding alone moved them.)"""
    from attnprimer.site.experiments.rnn_recap import decoder_curves, decoder_models
    from attnprimer.site.explorer.interventions import reversal_forced

    def written(trained, letters: str) -> str:
        return _decoded(trained, reversal_forced(trained.model,
                                                 trained.task._tokens(letters)[None]))

    twelve, twenty = "ABCDEFGHABCD", "ABCDEFGHABCDEFGHABCD"
    for decoder in ("vanilla", "peeky"):
        assert written(models[f"reversal/{decoder}"], twelve) != twelve[::-1] + "."
    for decoder, seeds in decoder_models().items():  # vanilla, peeky, additive, dot
        trained_seeds = [site_models(model) for model in seeds]
        if decoder != "attention (dot)":
            assert any(written(trained, twelve) == twelve[::-1] + "."
                       for trained in trained_seeds), decoder
        assert all(written(trained, twenty) != twenty[::-1] + "."
                   for trained in trained_seeds), decoder
    curves, beyond = decoder_curves(), range(11, 21)  # site_models trained what was missing
    additive = curves.over("attention (additive)", beyond)
    assert additive.min() > 3 * curves.over("vanilla", beyond).max()
    assert additive.max() < 0.5
    assert curves.at("attention (additive)", 11).min() > 0.5  # "at 11 letters alone ... most"


def test_claim_five_of_the_transformers_heads_each_change_the_example(models):
    from attnprimer.site.catalogue import REVERSAL_EXAMPLE
    from attnprimer.site.experiments.head_ablation import head_names, heads_off

    trained = models["transformer/encoder-decoder"]
    tokens = trained.task.encode(REVERSAL_EXAMPLE)[None]
    changing = []
    for name in head_names(trained.model):
        with torch.no_grad(), heads_off(trained.model, [name]):
            if _decoded(trained, trained.model(tokens)) != "EGDABDAEH.":
                changing.append(name)
    assert len(head_names(trained.model)) == 24
    assert changing == ["decoder self 1.2", "decoder self 1.3", "decoder self 1.4", "cross 1.1",
                        "cross 2.4"]


def test_claim_the_transformer_is_perfect_to_ten_letters_and_fails_at_twelve(models):
    trained = models["transformer/encoder-decoder"]
    # "more than 99.5 %" (99.99 % on the first build machine, 99.98 % on the second; the
    # chapter's test holds every seed's mean over lengths 1-10 to 99.5 % or more)
    assert cached_evaluation(trained, samples=10_000).exact_match > 0.995  # as the docs scored it
    with torch.no_grad():
        written = _decoded(trained, trained.model(trained.task._tokens("ABCDEFGHABCD")[None]))
    assert written != "DCBAHGFEDCBA."

