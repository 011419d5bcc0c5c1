"""Training, evaluation, checkpoints and the cache of trained models (tiny throwaway models)."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import pytest
import torch

import attnprimer.train as train_module
from attnprimer.tasks import CountingTask
from attnprimer.train import (
    HELD_OUT_SEED,
    CheckpointError,
    Evaluation,
    TrainConfig,
    TrainedModel,
    cache_dir,
    cached_path,
    evaluate,
    get_trained,
    held_out_generator,
    load_checkpoint,
    predict,
    save_checkpoint,
    train,
    train_missing,
    training_generator,
)

TINY_TASK = CountingTask(hidden=8)
TINY_CONFIG = TrainConfig(steps=30, seed=0)


@pytest.fixture(autouse=True)
def temporary_cache(tmp_path, monkeypatch):
    """Every test here caches into its own folder, never into the real cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="module")
def tiny() -> TrainedModel:
    return train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)


def states_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


# --- TrainConfig -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, name",
    [({"steps": 0}, "steps"), ({"steps": -5}, "steps"), ({"batch_size": 0}, "batch_size"),
     ({"lr": 0.0}, "lr"), ({"lr": -1e-3}, "lr"), ({"lr": float("nan")}, "lr"),
     ({"seed": -1}, "seed"), ({"schedule": "linear"}, "schedule"), ({"schedule": ""}, "schedule")],
)
def test_train_config_rejects_bad_values(settings, name):
    with pytest.raises(ValueError, match=name):
        TrainConfig(**settings)


# --- train -------------------------------------------------------------------------------------


def test_train_returns_a_model_in_eval_mode_with_its_history(tiny):
    assert tiny.task == TINY_TASK
    assert tiny.config == TINY_CONFIG
    assert not tiny.model.training
    history = tiny.history
    assert history["step"] == list(range(1, 31))
    assert len(history["loss"]) == 30
    assert all(loss > 0 and torch.isfinite(torch.tensor(loss)) for loss in history["loss"])
    assert history["held_out_step"] == [10, 20, 30]
    assert all(0.0 <= value <= 1.0 for value in history["held_out_exact_match"])
    assert tiny.train_seconds >= 0


def test_the_last_step_is_always_evaluated():
    trained = train(TINY_TASK, TrainConfig(steps=25), eval_every=10, eval_samples=50)
    assert trained.history["held_out_step"] == [10, 20, 25]


def test_train_is_deterministic_for_a_seed(tiny):
    again = train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)
    assert states_equal(again.model.state_dict(), tiny.model.state_dict())
    assert again.history == tiny.history


def test_train_does_not_depend_on_the_global_generator_state(tiny):
    torch.manual_seed(987)
    torch.rand(100)
    again = train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)
    assert states_equal(again.model.state_dict(), tiny.model.state_dict())


def test_a_different_seed_trains_a_different_model(tiny):
    other = train(TINY_TASK, TrainConfig(steps=30, seed=1), eval_every=10, eval_samples=100)
    assert not states_equal(other.model.state_dict(), tiny.model.state_dict())
    assert other.history["loss"] != tiny.history["loss"]


def test_the_schedule_changes_training_but_not_the_start(tiny):
    constant = train(TINY_TASK, TrainConfig(steps=30, seed=0, schedule="constant"),
                     eval_every=10, eval_samples=100)
    assert constant.config.schedule == "constant" and tiny.config.schedule == "cosine"
    # Same initialisation and batches, and both start at the full learning rate ...
    assert constant.history["loss"][:2] == tiny.history["loss"][:2]
    # ... but the cosine decay then takes smaller steps.
    assert constant.history["loss"] != tiny.history["loss"]
    assert not states_equal(constant.model.state_dict(), tiny.model.state_dict())


def test_train_restores_the_thread_count():
    before = torch.get_num_threads()
    train(TINY_TASK, TrainConfig(steps=2))
    assert torch.get_num_threads() == before


def test_the_loss_goes_down():
    trained = train(CountingTask(hidden=16), TrainConfig(steps=300, lr=3e-2), eval_every=100,
                    eval_samples=500)
    losses = trained.history["loss"]
    first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
    assert last < 0.6 * first
    # And it learns something: far better than the untrained model on held-out data.
    matches = trained.history["held_out_exact_match"]
    assert matches[-1] > matches[0]


# --- evaluate ----------------------------------------------------------------------------------


def test_evaluate_returns_fractions(tiny):
    result = evaluate(tiny, samples=300)
    assert isinstance(result, Evaluation)
    assert result.samples == 300
    assert result.seed == HELD_OUT_SEED
    assert 0.0 <= result.exact_match <= 1.0
    assert len(result.per_step) == len(tiny.task.output_labels())
    assert all(0.0 <= value <= 1.0 for value in result.per_step)
    # Every sequence right means every step right; and the union bound the other way.
    assert result.exact_match <= min(result.per_step) + 1e-12
    assert result.exact_match >= 1 - sum(1 - value for value in result.per_step) - 1e-12


def test_per_step_has_one_entry_per_output_step():
    task = CountingTask(max_len=6, vocab_size=5, hidden=8)
    trained = train(task, TrainConfig(steps=3))
    assert len(evaluate(trained, samples=40).per_step) == 5


@pytest.mark.parametrize("seed", [HELD_OUT_SEED, 3])
def test_evaluate_agrees_with_a_manual_count(tiny, seed):
    samples = 250
    batch = tiny.task.sample(samples, held_out_generator(seed))
    with torch.no_grad():
        predictions = tiny.model(batch.inputs).logits.argmax(dim=-1)
    exact = 0
    per_step = [0] * tiny.task.vocab_size
    for predicted, target in zip(predictions.tolist(), batch.targets.tolist(), strict=True):
        exact += predicted == target
        for step, (p, t) in enumerate(zip(predicted, target, strict=True)):
            per_step[step] += p == t
    result = evaluate(tiny, samples=samples, seed=seed)
    assert result.exact_match == pytest.approx(exact / samples)
    assert result.per_step == pytest.approx([count / samples for count in per_step])
    assert result.seed == seed


def test_evaluate_in_batches_scores_every_sample(tiny):
    result = evaluate(tiny, samples=101, batch_size=25)
    assert result.samples == 101
    # Each fraction is a whole number of sequences out of 101.
    for value in [result.exact_match, *result.per_step]:
        assert value * 101 == pytest.approx(round(value * 101))


def test_evaluate_is_repeatable(tiny):
    assert evaluate(tiny, samples=200) == evaluate(tiny, samples=200)


@pytest.mark.parametrize("samples", [0, -10])
def test_evaluate_rejects_non_positive_samples(tiny, samples):
    with pytest.raises(ValueError, match="samples"):
        evaluate(tiny, samples=samples)


def test_predict_restores_training_mode(tiny):
    tiny.model.train()
    try:
        output, predictions = predict(tiny.model, tiny.task.sample(4, held_out_generator()).inputs)
        assert tiny.model.training
        assert predictions.shape == (4, tiny.task.vocab_size)
        assert torch.equal(predictions, output.logits.argmax(dim=-1))
    finally:
        tiny.model.eval()


# --- held-out data -----------------------------------------------------------------------------


def test_held_out_stream_never_replays_a_training_stream():
    task = CountingTask()
    seeds = range(0, 12)
    training = {seed: task.sample(64, training_generator(seed)).inputs for seed in seeds}
    held_out = {seed: task.sample(64, held_out_generator(seed)).inputs for seed in seeds}
    for seed in seeds:
        assert not torch.equal(held_out[seed], training[seed]), seed
    # Not for the same seed, and not for any other seed either.
    for a in seeds:
        for b in seeds:
            assert not torch.equal(held_out[a], training[b]), (a, b)
    assert not torch.equal(task.sample(64, held_out_generator()).inputs,
                           task.sample(64, training_generator(HELD_OUT_SEED)).inputs)


def test_held_out_generator_is_repeatable():
    task = CountingTask()
    assert torch.equal(task.sample(8, held_out_generator(5)).inputs,
                       task.sample(8, held_out_generator(5)).inputs)
    assert torch.equal(task.sample(8, held_out_generator()).inputs,
                       task.sample(8, held_out_generator(HELD_OUT_SEED)).inputs)


def test_training_batches_differ_from_the_held_out_batches(monkeypatch):
    # Record what train() actually samples and compare with evaluate()'s data.
    task = CountingTask(hidden=8)
    seen = []
    original = CountingTask.sample

    def recording(self, batch_size, generator):
        batch = original(self, batch_size, generator)
        seen.append(batch.inputs)
        return batch

    with monkeypatch.context() as patch:
        patch.setattr(CountingTask, "sample", recording)
        train(task, TrainConfig(steps=3, batch_size=50, seed=HELD_OUT_SEED), eval_samples=50)
    monitor, *training_batches = seen
    held_out = task.sample(50, held_out_generator(HELD_OUT_SEED)).inputs
    assert torch.equal(monitor, held_out)  # the monitor is held-out data
    for batch in training_batches:
        assert not torch.equal(batch, held_out)


# --- checkpoints -------------------------------------------------------------------------------


def test_checkpoint_round_trip_gives_identical_predictions(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "nested" / "tiny.pt")
    assert path == tmp_path / "nested" / "tiny.pt"
    assert path.is_file()
    loaded = load_checkpoint(path)
    assert loaded.task == tiny.task
    assert loaded.config == tiny.config
    assert loaded.history == tiny.history
    assert loaded.train_seconds == tiny.train_seconds
    assert not loaded.model.training
    assert states_equal(loaded.model.state_dict(), tiny.model.state_dict())
    inputs = tiny.task.sample(200, held_out_generator(9)).inputs
    with torch.no_grad():
        expected, got = tiny.model(inputs), loaded.model(inputs)
    assert torch.equal(got.logits, expected.logits)
    assert torch.equal(got.attention["encoder-decoder"], expected.attention["encoder-decoder"])


def test_a_checkpoint_from_before_the_schedule_setting_loads_as_cosine(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "old.pt")
    payload = torch.load(path, weights_only=True)
    del payload["train_config"]["schedule"]
    torch.save(payload, path)
    assert load_checkpoint(path).config == TINY_CONFIG


def test_checkpoint_accepts_a_string_path(tiny, tmp_path):
    path = save_checkpoint(tiny, str(tmp_path / "tiny.pt"))
    assert isinstance(path, Path)
    assert load_checkpoint(str(path)).config == tiny.config


def test_save_leaves_no_temporary_files(tiny, tmp_path):
    folder = tmp_path / "out"
    save_checkpoint(tiny, folder / "a.pt")
    save_checkpoint(tiny, folder / "a.pt")  # overwriting too
    save_checkpoint(tiny, folder / "b.pt")
    assert sorted(path.name for path in folder.iterdir()) == ["a.pt", "b.pt"]


def _exploding_save(exception):
    def save(obj, file, *args, **kwargs):
        file.write(b"PK\x03\x04 half a checkpoint")  # some bytes hit the disk first
        file.flush()
        raise exception

    return save


@pytest.mark.parametrize("exception", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_save_leaves_nothing_behind(tiny, tmp_path, monkeypatch, exception):
    folder = tmp_path / "out"
    monkeypatch.setattr(torch, "save", _exploding_save(exception))
    with pytest.raises(type(exception)):
        save_checkpoint(tiny, folder / "tiny.pt")
    assert not (folder / "tiny.pt").exists()
    assert list(folder.iterdir()) == []


def test_a_failed_save_keeps_the_previous_checkpoint(tiny, tmp_path, monkeypatch):
    path = save_checkpoint(tiny, tmp_path / "tiny.pt")
    before = path.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(torch, "save", _exploding_save(RuntimeError("boom")))
        with pytest.raises(RuntimeError, match="boom"):
            save_checkpoint(tiny, path)
    assert path.read_bytes() == before
    assert [entry.name for entry in tmp_path.iterdir()] == ["tiny.pt"]
    assert load_checkpoint(path).config == tiny.config


def _truncated(tiny, path: Path) -> None:
    save_checkpoint(tiny, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random_bytes(tiny, path: Path) -> None:
    path.write_bytes(bytes(torch.randint(0, 256, (4096,),
                                         generator=torch.Generator().manual_seed(0)).tolist()))


class _Something:
    def __init__(self):
        self.value = 42


def _foreign_pickle(tiny, path: Path) -> None:
    path.write_bytes(pickle.dumps(_Something()))


def _plain_pickle_of_a_list(tiny, path: Path) -> None:
    path.write_bytes(pickle.dumps([1, 2, 3]))


def _torch_save_of_a_tensor(tiny, path: Path) -> None:
    torch.save(torch.arange(5), path)


def _other_format(tiny, path: Path) -> None:
    torch.save({"format": 99, "task": "counting"}, path)


def _missing_fields(tiny, path: Path) -> None:
    torch.save({"format": 1, "task": "counting"}, path)


def _unknown_task(tiny, path: Path) -> None:
    save_checkpoint(tiny, path)
    payload = torch.load(path, weights_only=True)
    payload["task"] = "sorting"
    torch.save(payload, path)


def _wrong_shapes(tiny, path: Path) -> None:
    save_checkpoint(tiny, path)
    payload = torch.load(path, weights_only=True)
    payload["task_settings"]["hidden"] = 16  # the weights are for hidden=8
    torch.save(payload, path)


def _empty(tiny, path: Path) -> None:
    path.write_bytes(b"")


def _text(tiny, path: Path) -> None:
    path.write_text("not a checkpoint\nat all\n")


@pytest.mark.parametrize(
    "damage",
    [_truncated, _random_bytes, _foreign_pickle, _plain_pickle_of_a_list, _torch_save_of_a_tensor,
     _other_format, _missing_fields, _unknown_task, _wrong_shapes, _empty, _text],
)
def test_loading_a_damaged_checkpoint_raises_checkpoint_error(tiny, tmp_path, damage):
    path = tmp_path / "damaged.pt"
    damage(tiny, path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert message.strip()
    assert "\n" not in message
    assert str(path) in message


def test_loading_a_checkpoint_without_history_raises_checkpoint_error(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "tiny.pt")
    payload = torch.load(path, weights_only=True)
    del payload["history"]
    torch.save(payload, path)
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


def test_loading_a_missing_checkpoint_raises_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "absent.pt")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path)  # a folder is not a checkpoint either


def test_checkpoint_is_loaded_with_weights_only(tiny, tmp_path):
    # A pickle that would run code when unpickled must be refused, not executed.
    marker = tmp_path / "executed"

    class Exploit:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    path = tmp_path / "evil.pt"
    buffer = io.BytesIO()
    torch.save({"format": 1, "payload": Exploit()}, buffer)
    path.write_bytes(buffer.getvalue())
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
    assert not marker.exists()


# --- the cache ---------------------------------------------------------------------------------


def test_cache_dir_follows_the_environment(temporary_cache, monkeypatch, tmp_path):
    assert cache_dir() == temporary_cache
    monkeypatch.delenv("ATTNPRIMER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "attnprimer"


def test_cached_path_lives_in_the_cache_dir(temporary_cache):
    path = cached_path(TINY_TASK, TINY_CONFIG)
    assert path.parent == temporary_cache / "models"
    assert path.name.startswith("counting-") and path.suffix == ".pt"
    assert cached_path(TINY_TASK, TINY_CONFIG) == path
    assert cached_path(CountingTask(hidden=8), TrainConfig(steps=30, seed=0)) == path


@pytest.mark.parametrize(
    "task, config",
    [(TINY_TASK, TrainConfig(steps=30, seed=1)),
     (TINY_TASK, TrainConfig(steps=31, seed=0)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, lr=2e-2)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, batch_size=50)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, schedule="constant")),
     (CountingTask(hidden=9), TINY_CONFIG),
     (CountingTask(hidden=8, max_len=9), TINY_CONFIG),
     (CountingTask(hidden=8, vocab_size=4), TINY_CONFIG)],
)
def test_cached_path_changes_with_the_settings(task, config):
    assert cached_path(task, config) != cached_path(TINY_TASK, TINY_CONFIG)


def test_cached_path_changes_with_the_source(monkeypatch):
    before = cached_path(TINY_TASK, TINY_CONFIG)
    monkeypatch.setattr(train_module, "source_hash", lambda: "0" * 64)
    assert cached_path(TINY_TASK, TINY_CONFIG) != before


@pytest.fixture
def train_calls(monkeypatch):
    """Record every call get_trained makes to train (and still train)."""
    calls = []
    real_train = train_module.train

    def counting_train(*args, **kwargs):
        calls.append(args)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(train_module, "train", counting_train)
    return calls


def _refuse_to_train(*args, **kwargs):
    raise AssertionError("train() was called although the model is cached")


def test_get_trained_caches(monkeypatch, train_calls):
    first = get_trained(TINY_TASK, TINY_CONFIG)
    assert len(train_calls) == 1
    assert cached_path(TINY_TASK, TINY_CONFIG).is_file()

    monkeypatch.setattr(train_module, "train", _refuse_to_train)
    second = get_trained(TINY_TASK, TINY_CONFIG)
    assert second.task == first.task and second.config == first.config
    assert second.history == first.history
    assert states_equal(second.model.state_dict(), first.model.state_dict())
    # And the cache only holds the one model.
    assert [path.name for path in cached_path(TINY_TASK, TINY_CONFIG).parent.iterdir()] == [
        cached_path(TINY_TASK, TINY_CONFIG).name
    ]


def test_get_trained_trains_what_train_trains(tiny):
    cached = get_trained(TINY_TASK, TINY_CONFIG)
    # tiny was trained with a different monitor, which never affects the weights.
    assert states_equal(cached.model.state_dict(), tiny.model.state_dict())
    assert cached.history["loss"] == tiny.history["loss"]


def test_get_trained_with_other_settings_trains_again(monkeypatch):
    get_trained(TINY_TASK, TINY_CONFIG)
    monkeypatch.setattr(train_module, "train", _refuse_to_train)
    with pytest.raises(AssertionError, match="cached"):
        get_trained(TINY_TASK, TrainConfig(steps=30, seed=1))


@pytest.mark.parametrize("damage", [_random_bytes, _truncated, _empty, _other_format])
def test_a_corrupt_cache_entry_is_replaced_by_retraining(tiny, monkeypatch, train_calls, damage):
    path = cached_path(TINY_TASK, TINY_CONFIG)
    path.parent.mkdir(parents=True)
    damage(tiny, path)
    trained = get_trained(TINY_TASK, TINY_CONFIG)
    assert len(train_calls) == 1
    assert states_equal(trained.model.state_dict(), tiny.model.state_dict())
    # The entry on disk is now a good checkpoint, and the next call uses it.
    assert states_equal(load_checkpoint(path).model.state_dict(), tiny.model.state_dict())
    monkeypatch.setattr(train_module, "train", _refuse_to_train)
    get_trained(TINY_TASK, TINY_CONFIG)


def test_train_works_inside_no_grad(tiny):
    # A caller's torch.no_grad() must not break training (or silently skip it).
    with torch.no_grad():
        trained = train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)
    assert states_equal(trained.model.state_dict(), tiny.model.state_dict())
    with torch.no_grad():
        train(TINY_TASK, TrainConfig(steps=2))
        assert not torch.is_grad_enabled()  # the caller's mode is back after the call


# --- training what the cache lacks, in parallel ----------------------------------------------


def test_train_missing_trains_only_what_is_missing(monkeypatch, train_calls):
    other = TrainConfig(steps=30, seed=1)
    get_trained(TINY_TASK, TINY_CONFIG)
    train_calls.clear()
    trained = train_missing([(TINY_TASK, TINY_CONFIG), (TINY_TASK, other), (TINY_TASK, other)],
                            workers=1)
    assert trained == [(TINY_TASK, other)]  # duplicates once, cached ones not at all
    assert len(train_calls) == 1
    assert cached_path(TINY_TASK, other).is_file()
    assert train_missing([(TINY_TASK, TINY_CONFIG), (TINY_TASK, other)]) == []


def test_train_missing_in_parallel_makes_the_same_models(tiny):
    configs = [TINY_CONFIG, TrainConfig(steps=30, seed=1)]
    trained = train_missing([(TINY_TASK, config) for config in configs], workers=2)
    assert len(trained) == 2
    parallel = load_checkpoint(cached_path(TINY_TASK, TINY_CONFIG))
    assert states_equal(parallel.model.state_dict(), tiny.model.state_dict())
    assert parallel.history["loss"] == tiny.history["loss"]
    assert cached_path(TINY_TASK, configs[1]).is_file()
