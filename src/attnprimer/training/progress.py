"""Progress lines while the cache trains models: one line as each model finishes.

A cold docs build, ``nox -s claims``, ``nox -s train`` and ``attnprimer train all`` spend most of
their first run training models in worker processes. So that a terminal and a CI log alike show a
working run, [`train_missing`][attnprimer.training.model_cache.train_missing] prints a line when it
starts and one as each model finishes:

    trained 45/159 (reversal decoder=peeky seed=2, 14.2 s) 6:31 elapsed, about 9 min left

The estimate of what is left comes from the training times recorded in the cache folder
(``training-times.json``: the seconds each model took when it last trained, whatever the code
then was); for a model never trained there, from the times of a reference build shipped with
the package (``reference_times.json``, the site's models on a 2-core Intel Xeon, November
2026); for any other, from a per-task cost per step. Each task's estimates are scaled by how
its models finished so far compare with theirs, so a slower machine's estimate corrects itself
after the first few models.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path

from attnprimer.tasks.base import Task
from attnprimer.training.files import cache_dir, write_atomically
from attnprimer.training.train import TrainConfig

__all__ = ["STEP_MILLISECONDS", "TrainingProgress", "describe", "recorded_times",
           "reference_times"]

STEP_MILLISECONDS = {"counting": 1.2, "difference": 2.3, "signal": 3.7, "reversal": 7.8,
                     "reversal-transformer": 18.0, "copy-reverse": 13.0}
"""Milliseconds per training step of 100 examples, per task: the median over the site's models
of each task, trained on one thread of a 2-core Intel Xeon (November 2026). The estimate for
a model whose training time was never recorded here; the order in which missing models start
(longest first) follows it too."""

Spec = tuple[Task, TrainConfig]


def describe(task: Task, config: TrainConfig) -> str:
    """A short description of a model: its task and every setting that is not the default.

    Examples:
        >>> from attnprimer.tasks import ReversalTask
        >>> describe(ReversalTask(decoder="peeky"), TrainConfig(**{
        ...     **ReversalTask.train_defaults, "seed": 2}))
        'reversal decoder=peeky seed=2'
        >>> describe(ReversalTask(), TrainConfig(steps=10))
        'reversal steps=10 seed=0'
    """
    default_task = type(task)()
    default_config = TrainConfig(**{**type(task).train_defaults, "seed": config.seed})
    changed = [f"{name}={value}" for name, value in asdict(task).items()
               if value != getattr(default_task, name)]
    changed += [f"{name}={value}" for name, value in asdict(config).items()
                if name != "seed" and value != getattr(default_config, name)]
    return " ".join([task.name, *changed, f"seed={config.seed}"])


def estimated_seconds(task: Task, config: TrainConfig) -> float:
    """A model's training time from its task's cost per step, when none was recorded."""
    per_step = STEP_MILLISECONDS.get(task.name, max(STEP_MILLISECONDS.values()))
    return config.steps * per_step * config.batch_size / 100 / 1000


def _times_path() -> Path:
    return cache_dir() / "training-times.json"


def _read_times(path: Path) -> dict[str, float]:
    try:
        times = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return times if isinstance(times, dict) else {}


def recorded_times() -> dict[str, float]:
    """The training seconds recorded in the cache folder, by the model's
    [`describe`][attnprimer.training.progress.describe] (empty if the file is missing or
    damaged)."""
    return _read_times(_times_path())


def reference_times() -> dict[str, float]:
    """The training seconds of the site's models in the reference build shipped with the
    package, by [`describe`][attnprimer.training.progress.describe].

    Examples:
        >>> reference_times()["counting seed=0"] > 0
        True
    """
    return _read_times(Path(__file__).with_name("reference_times.json"))


class TrainingProgress:
    """Counts finished models and reports each with the time elapsed and an estimate of what
    is left. Lives in the process that hands out the models (the workers only train).

    Args:
        specs: the models about to train.
        workers: how many train at once (the estimate divides the CPU time left by it).
        report: where each line goes (default: standard error, flushed).
        clock: seconds from some start (``time.monotonic``; tests pass their own).
    """

    def __init__(self, specs: Iterable[Spec], workers: int,
                 report: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.specs = list(specs)
        self.workers = workers
        self.report = report or _to_stderr
        self.clock = clock
        self.start = clock()
        self.recorded = recorded_times()
        known = {**reference_times(), **self.recorded}
        self.expected = {spec: known.get(describe(*spec)) or estimated_seconds(*spec)
                         for spec in self.specs}
        self.seconds: dict[Spec, float] = {}  # the finished models, in the order they finished

    def started(self) -> None:
        """Report what is about to train and roughly how long it will take."""
        total = sum(self.expected.values()) / self.workers
        models = f"{len(self.specs)} model" + ("s" if len(self.specs) != 1 else "")
        self.report(f"training {models} the cache lacks, {self.workers} at a time "
                    f"({_duration(total)}); a line as each finishes")

    def done(self, spec: Spec, seconds: float) -> None:
        """Record that ``spec`` trained in ``seconds`` and report it."""
        self.seconds[spec] = seconds
        label = describe(*spec)
        self.recorded[label] = round(seconds, 2)
        _times_path().parent.mkdir(parents=True, exist_ok=True)
        write_atomically(_times_path(), lambda file: file.write(
            json.dumps(self.recorded, indent=0, sort_keys=True).encode("utf-8")), mode=0o644)
        elapsed = self.clock() - self.start
        line = (f"trained {len(self.seconds)}/{len(self.specs)} ({label}, "
                f"{seconds:.1f} s) {_clock(elapsed)} elapsed")
        if len(self.seconds) < len(self.specs):
            line += f", {_duration(self.seconds_left())} left"
        self.report(line)

    def seconds_left(self) -> float:
        """The wall time the unfinished models should take: their expected CPU time over the
        workers, each scaled by how the finished models of its task compared with theirs (of
        any task, while none of its own has finished)."""
        actual: dict[str, float] = {}
        expected: dict[str, float] = {}
        for spec, seconds in self.seconds.items():
            task = spec[0].name
            actual[task] = actual.get(task, 0.0) + seconds
            expected[task] = expected.get(task, 0.0) + self.expected[spec]
        overall = sum(actual.values()) / max(sum(expected.values()), 1e-9) if actual else 1.0
        left = 0.0
        for spec in self.specs:
            if spec not in self.seconds:
                task = spec[0].name
                scale = actual[task] / expected[task] if expected.get(task) else overall
                left += self.expected[spec] * scale
        return left / self.workers


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on.

    Examples:
        >>> _clock(391.2), _clock(3725)
        ('6:31', '1:02:05')
    """
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _duration(seconds: float) -> str:
    """A rough duration: under ten seconds, tens of seconds, or whole minutes.

    Examples:
        >>> _duration(3.2), _duration(42.4), _duration(89), _duration(545)
        ('under 10 s', 'about 40 s', 'about 1 min', 'about 9 min')
    """
    if seconds < 10:
        return "under 10 s"
    if seconds < 60:
        return f"about {round(seconds, -1):.0f} s"
    return f"about {round(seconds / 60):.0f} min"
