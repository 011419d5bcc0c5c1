"""Train and evaluate the toy tasks' models.

Everything here is deterministic on the CPU:
[`seed_everything`][attnprimer.training.train.seed_everything] fixes the model's initialisation,
training batches come from a generator seeded by the training seed, and held-out batches
from a *different* stream, so that no evaluation ever replays the training batches.

Saving is in [`attnprimer.training.checkpoints`][attnprimer.training.checkpoints]; the cache of
trained models, keyed per model on the code that shapes it, in
[`attnprimer.training.model_cache`][attnprimer.training.model_cache].
"""

from __future__ import annotations

import math
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from attnprimer.models import ModelOutput
from attnprimer.tasks.base import Batch, Task

__all__ = [
    "Evaluation",
    "TrainConfig",
    "TrainedModel",
    "evaluate",
    "held_out_generator",
    "predict",
    "predict_one",
    "seed_everything",
    "single_thread",
    "train",
]

HELD_OUT_SEED = 1234
"""The default seed of held-out evaluation data."""

WARMUP = 0.1
"""The share of the steps over which ``warmup-cosine`` raises the learning rate from 0 to ``lr``."""

OPTIMIZERS = {
    # fused: one update for all the parameters (on a CPU the default loops over them)
    "adam": lambda parameters, lr: torch.optim.Adam(parameters, lr=lr, fused=True),
    # RAdam (Liu, Jiang et al. 2020): Adam whose early steps are damped until its running
    # estimate of each gradient's size rests on enough batches; same betas as Adam.
    "radam": lambda parameters, lr: torch.optim.RAdam(parameters, lr=lr),
}
"""The optimisers a model can be trained with, by name: each takes the parameters and ``lr``."""


def _warmup_cosine(step: int, steps: int) -> float:
    warmup = max(1, round(WARMUP * steps))
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))


SCHEDULES = {
    "cosine": lambda step, steps: 0.5 * (1 + math.cos(math.pi * step / steps)),
    "constant": lambda step, steps: 1.0,
    "warmup-cosine": _warmup_cosine,
}
"""Learning-rate schedules: the factor applied to ``lr`` at each step (counted from 0).

Examples:
    >>> [round(SCHEDULES["warmup-cosine"](step, 100), 2) for step in (0, 4, 9, 10, 55, 99)]
    [0.1, 0.5, 1.0, 1.0, 0.5, 0.0]
"""


@dataclass(frozen=True)
class TrainConfig:
    """How to train: the same fields become the CLI's flags.

    Args:
        steps: optimiser steps.
        batch_size: examples per step.
        lr: the optimiser's peak learning rate (the only one, for ``schedule="constant"``).
        seed: seeds the initialisation and the training batches.
        schedule: ``"cosine"`` decays the learning rate from ``lr`` to zero;
            ``"constant"`` keeps it at ``lr`` (the original primer's choice);
            ``"warmup-cosine"`` first raises it linearly from zero to ``lr`` over the first
            ``WARMUP`` share of the steps, then decays it along a cosine to zero.
        optimizer: ``"adam"`` (every site model but one run) or ``"radam"``.
    """

    steps: int = field(default=2000, metadata={"help": "optimiser steps"})
    batch_size: int = field(default=100, metadata={"help": "examples per step"})
    lr: float = field(default=1e-2, metadata={"help": "the optimiser's peak learning rate"})
    seed: int = field(default=0, metadata={"help": "seed of the initialisation and the batches"})
    schedule: str = field(
        default="cosine",
        metadata={"help": "learning-rate schedule", "choices": tuple(SCHEDULES)},
    )
    optimizer: str = field(
        default="adam", metadata={"help": "optimiser", "choices": tuple(OPTIMIZERS)})

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if self.seed < 0:
            raise ValueError(f"seed must be non-negative, got {self.seed}")
        if self.schedule not in SCHEDULES:
            raise ValueError(
                f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")


@dataclass
class TrainedModel:
    """A trained model with everything needed to rebuild, describe and evaluate it.

    Attributes:
        task: the task (and model settings) it was trained on.
        config: how it was trained.
        model: the trained module, in eval mode.
        history: ``step``, ``loss`` (every step) and ``held_out_step``,
            ``held_out_exact_match`` (every ``eval_every`` steps) lists. The exact match is
            greedy decoding's, computed in one teacher-forced pass where the task allows it.
        train_seconds: the CPU time of training (one thread, monitoring included): a
            measurement of that run, which another run will not repeat exactly (the Transformer
            chapter's cost table shows it, and says so).
    """

    task: Task
    config: TrainConfig
    model: nn.Module
    history: dict[str, list[float]] = field(default_factory=dict)
    train_seconds: float = 0.0


@dataclass(frozen=True)
class Evaluation:
    """Held-out accuracy.

    Attributes:
        exact_match: fraction of sequences whose every output step is right.
        per_step: accuracy of each output step.
        samples: how many held-out sequences were scored.
        seed: the held-out data's seed.
    """

    exact_match: float
    per_step: list[float]
    samples: int
    seed: int


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (model initialisation).

    Examples:
        >>> seed_everything(0); first = torch.rand(2)
        >>> seed_everything(0); torch.equal(first, torch.rand(2))
        True
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def training_generator(seed: int) -> torch.Generator:
    """The stream of training batches for ``seed`` (even stream numbers)."""
    return torch.Generator().manual_seed(2 * seed)


def held_out_generator(seed: int = HELD_OUT_SEED) -> torch.Generator:
    """A stream of held-out batches (odd stream numbers: never a training stream).

    Examples:
        >>> torch.equal(torch.rand(3, generator=held_out_generator(0)),
        ...             torch.rand(3, generator=training_generator(0)))
        False
    """
    return torch.Generator().manual_seed(2 * seed + 1)


# --8<-- [start:train]
def train(
    task: Task,
    config: TrainConfig,
    *,
    progress: bool = False,
    eval_every: int = 100,
    eval_samples: int = 1000,
) -> TrainedModel:
    """Train a fresh model for ``task``: Adam (or RAdam), cross-entropy on every output step.

    By default the learning rate starts at ``config.lr`` and decays to zero
    along a cosine (the queries, keys and values chapter measures what that does,
    and does not, change for the counting model).

    Args:
        task: what to learn (and the model's settings).
        config: steps, batch size, learning rate, seed.
        progress: show a progress bar with the running loss (on a terminal).
        eval_every: record held-out exact match every this many steps.
        eval_samples: held-out sequences scored at each of those points.

    Returns:
        The trained model, in eval mode, with its training history.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=20))
        >>> len(trained.history["loss"]), trained.history["held_out_step"]
        (20, [20])
    """
    # Tiny models: threads cost more than they save. enable_grad: a caller's
    # torch.no_grad() must not silently break training.
    with single_thread(), torch.enable_grad():
        return _train(task, config, progress, eval_every, eval_samples)


def _train(task, config, progress, eval_every, eval_samples) -> TrainedModel:
    seed_everything(config.seed)
    model = task.build_model()
    optimizer = OPTIMIZERS[config.optimizer](model.parameters(), config.lr)
    factor = SCHEDULES[config.schedule]
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: factor(step, config.steps))
    batches = training_generator(config.seed)
    monitor = task.sample(eval_samples, held_out_generator())
    history: dict[str, list[float]] = {
        "step": [], "loss": [], "held_out_step": [], "held_out_exact_match": []
    }
    # CPU time: other processes' load inflates it less than the wall time, but still does
    # (1.3-2.3 times, beside four busy processes on 2 cores)
    started = time.process_time()
    # disable=None: a bar on a terminal, silence in logs and pipes.
    bar = tqdm(range(1, config.steps + 1), desc=f"train {task.name}",
               disable=None if progress else True)
    for step in bar:
        batch = task.sample(config.batch_size, batches)  # inputs (B, S), targets (B, T)
        loss = task.loss(model, batch)  # cross-entropy over the output steps
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        history["step"].append(step)
        history["loss"].append(loss.item())
        if step % eval_every == 0 or step == config.steps:
            history["held_out_step"].append(step)
            history["held_out_exact_match"].append(_exact_match(task, model, monitor))
            bar.set_postfix(loss=f"{loss.item():.4f}")
    model.eval()
    return TrainedModel(task, config, model, history, time.process_time() - started)
# --8<-- [end:train]


@contextmanager
def single_thread():
    """Run the block on one torch thread, then restore the count: for many small operations,
    where threads cost more than they save (training, probes, rendering beside a worker)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@torch.no_grad()
def predict(model: nn.Module, inputs: torch.Tensor) -> tuple[ModelOutput, torch.Tensor]:
    """Run ``model`` in eval mode on inputs (B, S); returns its output and the classes (B, T).

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> task = CountingTask(hidden=8)
        >>> output, predictions = predict(task.build_model(),
        ...                               task.sample(4, torch.Generator()).inputs)
        >>> predictions.shape, output.logits.shape
        (torch.Size([4, 3]), torch.Size([4, 3, 11]))
    """
    was_training = model.training
    model.eval()
    output = model(inputs)
    model.train(was_training)
    return output, output.logits.argmax(dim=-1)


def predict_one(model: nn.Module,
                tokens: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Run ``model`` on one sequence (S,); returns its classes (T,) and its weights by name.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> task = CountingTask(hidden=8)
        >>> prediction, attention = predict_one(task.build_model(), task.encode("AAB"))
        >>> prediction.shape, attention["encoder-decoder"].shape
        (torch.Size([3]), torch.Size([3, 10]))
    """
    output, predictions = predict(model, tokens[None])  # a batch of one
    return predictions[0], {name: weights[0] for name, weights in output.attention.items()}


def _correct(task: Task, model: nn.Module, batch: Batch) -> torch.Tensor:
    """(B, T) bool: which output steps of ``batch`` the model gets right."""
    _, predictions = predict(model, batch.inputs)
    return task.correct(predictions, batch.targets)


@torch.no_grad()
def _exact_match(task: Task, model: nn.Module, batch: Batch) -> float:
    """The fraction of ``batch`` the model gets wholly right, decoding greedily.

    A teacher-forced task's model runs once, fed the right outputs, instead of once per output
    step: greedy decoding gets a sequence wholly right exactly when every step's best guess,
    given the right outputs before it, is right (by induction over the steps), so both give
    the same exact match (not the same per-step accuracy: after a first mistake they differ).
    """
    if not task.teacher_forced:
        return _correct(task, model, batch).all(dim=1).float().mean().item()
    was_training = model.training
    model.eval()
    predictions = model(batch.inputs, batch.targets).logits.argmax(dim=-1)  # (B, T)
    model.train(was_training)
    return task.correct(predictions, batch.targets).all(dim=1).float().mean().item()


def evaluate(
    trained: TrainedModel, samples: int = 10_000, seed: int = HELD_OUT_SEED, batch_size: int = 2_000
) -> Evaluation:
    """Score ``trained`` on ``samples`` fresh held-out sequences.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> result = evaluate(trained, samples=100)
        >>> result.samples, len(result.per_step), 0.0 <= result.exact_match <= 1.0
        (100, 3, True)
    """
    if samples <= 0:
        raise ValueError(f"samples must be positive, got {samples}")
    generator = held_out_generator(seed)
    exact, per_step = 0.0, 0.0
    remaining = samples
    while remaining:
        size = min(batch_size, remaining)
        correct = _correct(trained.task, trained.model, trained.task.sample(size, generator))
        exact += correct.all(dim=1).sum().item()
        per_step = per_step + correct.sum(dim=0).double()
        remaining -= size
    return Evaluation(exact / samples, (per_step / samples).tolist(), samples, seed)
