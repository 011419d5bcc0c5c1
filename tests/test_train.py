"""Training and evaluation (tiny throwaway models)."""

from __future__ import annotations

import pytest
import torch

from attnprimer.tasks import CountingTask
from attnprimer.training.train import (
    HELD_OUT_SEED,
    OPTIMIZERS,
    SCHEDULES,
    WARMUP,
    Evaluation,
    TrainConfig,
    evaluate,
    held_out_generator,
    predict,
    train,
    training_generator,
)
from tiny_models import TINY_CONFIG, TINY_TASK, states_equal

pytestmark = pytest.mark.usefixtures("temporary_cache")


# --- TrainConfig -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings, name",
    [({"steps": 0}, "steps"), ({"steps": -5}, "steps"), ({"batch_size": 0}, "batch_size"),
     ({"lr": 0.0}, "lr"), ({"lr": -1e-3}, "lr"), ({"lr": float("nan")}, "lr"),
     ({"seed": -1}, "seed"), ({"schedule": "linear"}, "schedule"), ({"schedule": ""}, "schedule"),
     ({"optimizer": "sgd"}, "optimizer")],
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


@pytest.mark.parametrize("steps", [1, 2, 10, 1000])
def test_warm_up_rises_to_the_peak_then_decays_to_zero(steps):
    factors = [SCHEDULES["warmup-cosine"](step, steps) for step in range(steps + 1)]
    peak = factors.index(max(factors))
    assert max(factors) == 1.0 and 0 < factors[0] <= 1.0
    assert peak == max(0, round(WARMUP * steps) - 1)
    assert factors[: peak + 1] == sorted(factors[: peak + 1])  # rises ...
    assert factors[peak:] == sorted(factors[peak:], reverse=True)  # ... then decays
    assert factors[-1] == pytest.approx(0.0, abs=1e-12) or steps == 1


def test_warm_up_starts_training_with_smaller_steps(tiny):
    warm = train(TINY_TASK, TrainConfig(steps=30, seed=0, schedule="warmup-cosine"),
                 eval_every=10, eval_samples=100)
    # Same first batch, same initialisation: the first loss is the same, the first update is not.
    assert warm.history["loss"][0] == tiny.history["loss"][0]
    assert warm.history["loss"][1] != tiny.history["loss"][1]


def test_radam_damps_the_first_steps_that_adam_takes_at_full_size():
    """Adam's first step moves every parameter by about lr, however small its gradient;
    RAdam's first steps are plain momentum steps, lr times the gradient."""
    moves = {}
    for name in ("adam", "radam"):
        parameter = torch.nn.Parameter(torch.zeros(4))
        optimizer = OPTIMIZERS[name]([parameter], 0.01)
        parameter.grad = torch.full((4,), 1e-3)
        optimizer.step()
        moves[name] = float(parameter.detach().abs().max())
    assert moves["adam"] == pytest.approx(0.01, rel=1e-3)
    assert moves["radam"] == pytest.approx(0.01 * 1e-3, rel=1e-3)


def test_the_optimizer_changes_training_but_not_the_start(tiny):
    radam = train(TINY_TASK, TrainConfig(steps=30, seed=0, optimizer="radam"),
                  eval_every=10, eval_samples=100)
    assert radam.config.optimizer == "radam" and tiny.config.optimizer == "adam"
    assert radam.history["loss"][0] == tiny.history["loss"][0]
    assert radam.history["loss"][1] != tiny.history["loss"][1]


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


def test_train_works_inside_no_grad(tiny):
    # A caller's torch.no_grad() must not break training (or silently skip it).
    with torch.no_grad():
        trained = train(TINY_TASK, TINY_CONFIG, eval_every=10, eval_samples=100)
    assert states_equal(trained.model.state_dict(), tiny.model.state_dict())
    with torch.no_grad():
        train(TINY_TASK, TrainConfig(steps=2))
        assert not torch.is_grad_enabled()  # the caller's mode is back after the call


