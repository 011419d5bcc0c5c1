"""What a training step of the site's models costs at their batch size and at three times it.

The seeds of one recipe could train as one batched ensemble: every parameter with a leading
seed dimension, so that one set of operations updates the three seeds at once. Such an
ensemble runs the operations of one model on three times the data, so a step of one model on a
batch three times as large is about the least an ensemble step of three seeds can cost (the
ensemble adds its own reshapes and batched matrix products). The ratio of the two step times
bounds what batching the seeds can save: three seeds trained one after another cost three
steps, the ensemble at least ``ratio`` of them, so the best speed-up is ``3 / ratio``. Where
the per-operation overhead dominates, the ratio is near 1 and batching pays; where the
arithmetic dominates, it is near 3 and it cannot.

``python -m attnprimer.site.bench.training_step_cost`` (one of the ``nox -s bench`` measurements)
prints both times for one model of each kind the site trains
([`ARCHITECTURES`][attnprimer.site.bench.training_step_cost.ARCHITECTURES]), measured as the models
train: one thread, fused Adam, the task's own batches and loss.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, NamedTuple

import torch

from attnprimer.site.catalogue import SiteModel, site_model
from attnprimer.training.train import seed_everything, single_thread, training_generator

__all__ = ["ARCHITECTURES", "StepCost", "architectures", "main", "step_cost", "step_seconds"]


class StepCost(NamedTuple):
    """The median time of one training step at a model's batch size and at three times it.

    Attributes:
        label: the site model measured (its catalogue label).
        batch_size: B, the batch size it trains with.
        seconds: one step at B.
        seconds_tripled: one step at 3 B.
    """

    label: str
    batch_size: int
    seconds: float
    seconds_tripled: float

    @property
    def ratio(self) -> float:
        """How many steps at B one step at 3 B costs: 1 if only overhead, 3 if only arithmetic."""
        return self.seconds_tripled / self.seconds

    @property
    def best_speed_up(self) -> float:
        """The most a 3-seed ensemble can gain over three separate runs: ``3 / ratio``."""
        return 3 / self.ratio


def step_seconds(model: SiteModel, batch_size: int, *, steps: int = 50,
                 warmup: int = 10) -> float:
    """The median time in seconds of one training step of ``model`` (freshly initialised) at
    ``batch_size``: the task's batch and loss, the backward pass and a fused Adam update, on one
    thread. The first ``warmup`` steps are not counted.

    Examples:
        >>> from attnprimer.site.catalogue import site_model
        >>> step_seconds(site_model("counting"), batch_size=8, steps=3, warmup=1) > 0
        True
    """
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be positive and warmup not negative, got {steps}, {warmup}")
    task, config = model.task, model.config
    seed_everything(config.seed)
    network = task.build_model()
    optimizer = torch.optim.Adam(network.parameters(), lr=config.lr, fused=True)
    batches = training_generator(config.seed)
    times = []
    with single_thread(), torch.enable_grad():
        for _ in range(warmup + steps):
            batch = task.sample(batch_size, batches)
            started = time.perf_counter()
            loss = task.loss(network, batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            times.append(time.perf_counter() - started)
    return statistics.median(times[warmup:])


def step_cost(model: SiteModel, *, steps: int = 50, warmup: int = 10) -> StepCost:
    """[`step_seconds`][attnprimer.site.bench.training_step_cost.step_seconds]
    at the model's batch size B and
    at 3 B.

    Examples:
        >>> from attnprimer.site.catalogue import site_model
        >>> cost = step_cost(site_model("counting"), steps=3, warmup=1)
        >>> cost.batch_size, round(cost.best_speed_up * cost.ratio, 6)
        (100, 3.0)
    """
    size = model.config.batch_size
    return StepCost(model.label, size, step_seconds(model, size, steps=steps, warmup=warmup),
                    step_seconds(model, 3 * size, steps=steps, warmup=warmup))


ARCHITECTURES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("counting", {}),
    ("difference", {"self_att": True}),
    ("partners", {}),
    ("signal", {"pos_enc": "learned"}),
    ("reversal", {"decoder": "vanilla"}),
    ("reversal", {}),
    ("reversal-transformer", {"pre_norm": True}),
    ("reversal-transformer", {"architecture": "decoder-only", "pre_norm": True, "steps": 800}),
    ("copy-reverse", {}),
    ("digit-reading", {}),
    ("digit-pair", {}),
    ("induction", {"layers": 2}),
)
"""One site model of each kind the catalogue trains: task and settings, as
[`site_model`][attnprimer.site.catalogue.site_model] takes them (the reversal task twice: the GRU
encoder-decoder without and with attention)."""


def architectures() -> list[SiteModel]:
    """Seed 0 of each model of
    [`ARCHITECTURES`][attnprimer.site.bench.training_step_cost.ARCHITECTURES].

    Examples:
        >>> [model.label for model in architectures()][4:6]
        ['reversal decoder=vanilla seed=0', 'reversal seed=0']
    """
    return [site_model(task, **settings) for task, settings in ARCHITECTURES]


def main() -> None:
    """Print the step times of every architecture, and the best a 3-seed ensemble can do."""
    costs = [step_cost(model) for model in architectures()]
    width = max(len(cost.label) for cost in costs) + 2
    print("one training step, one thread, median of 50 after 10 (ms): at the model's batch B,")
    print("at 3 B, their ratio, and 3 / ratio, the most a 3-seed batched ensemble can gain")
    print(f"{'model':<{width}}{'B':>5}{'at B':>9}{'at 3 B':>9}{'ratio':>7}{'best':>8}")
    for cost in costs:
        print(f"{cost.label:<{width}}{cost.batch_size:>5}{cost.seconds * 1e3:>9.2f}"
              f"{cost.seconds_tripled * 1e3:>9.2f}{cost.ratio:>7.2f}{cost.best_speed_up:>7.2f}x")


if __name__ == "__main__":
    main()
