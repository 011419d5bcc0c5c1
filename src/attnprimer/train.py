"""Train, evaluate, save and cache the toy tasks' models.

Everything here is deterministic on the CPU: [`seed_everything`][attnprimer.train.seed_everything] fixes the
model's initialisation, training batches come from a generator seeded by the
training seed, and held-out batches from a *different* stream, so that no
evaluation ever replays the training batches.

Trained models are cached on disk (see [`cache_dir`][attnprimer.train.cache_dir]), keyed by the task
and its settings, the training settings (seed included) and the source code
of the modules that shape training. A warm docs build retrains nothing; edit a
model or a task and the affected models retrain by themselves.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import multiprocessing
import os
import random
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from attnprimer.models import ModelOutput
from attnprimer.tasks import Batch, Task, get_task

__all__ = [
    "CheckpointError",
    "Evaluation",
    "TrainConfig",
    "TrainedModel",
    "cache_dir",
    "cached_path",
    "evaluate",
    "get_trained",
    "held_out_generator",
    "load_checkpoint",
    "predict",
    "predict_one",
    "save_checkpoint",
    "seed_everything",
    "train",
    "train_missing",
    "write_atomically",
]

HELD_OUT_SEED = 1234
"""The default seed of held-out evaluation data."""

CHECKPOINT_FORMAT = 1

SCHEDULES = {
    "cosine": lambda step, steps: 0.5 * (1 + math.cos(math.pi * step / steps)),
    "constant": lambda step, steps: 1.0,
}
"""Learning-rate schedules: the factor applied to ``lr`` at each step."""


@dataclass(frozen=True)
class TrainConfig:
    """How to train: the same fields become the CLI's flags.

    Args:
        steps: optimiser steps.
        batch_size: examples per step.
        lr: Adam's peak learning rate (it decays along a cosine to zero).
        seed: seeds the initialisation and the training batches.
        schedule: ``"cosine"`` decays the learning rate from ``lr`` to zero;
            ``"constant"`` keeps it at ``lr`` (the original primer's choice).
    """

    steps: int = field(default=2000, metadata={"help": "optimiser steps"})
    batch_size: int = field(default=100, metadata={"help": "examples per step"})
    lr: float = field(default=1e-2, metadata={"help": "Adam's peak learning rate"})
    seed: int = field(default=0, metadata={"help": "seed of the initialisation and the batches"})
    schedule: str = field(
        default="cosine",
        metadata={"help": "learning-rate schedule", "choices": ("cosine", "constant")},
    )

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if self.seed < 0:
            raise ValueError(f"seed must be non-negative, got {self.seed}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")


@dataclass
class TrainedModel:
    """A trained model with everything needed to rebuild, describe and evaluate it.

    Attributes:
        task: the task (and model settings) it was trained on.
        config: how it was trained.
        model: the trained module, in eval mode.
        history: ``step``, ``loss`` (every step) and ``held_out_step``,
            ``held_out_exact_match`` (every ``eval_every`` steps) lists.
        train_seconds: wall time of training; informative only, never shown on the site.
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


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, unreadable or not one of ours."""


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
    """Train a fresh model for ``task``: Adam, cross-entropy on every output step.

    By default the learning rate starts at ``config.lr`` and decays to zero
    along a cosine; the decay lets the model settle on the rare classes (the
    counts of 7 and more letters in ten) that a constant rate keeps overshooting.

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
    with _single_thread(), torch.enable_grad():
        return _train(task, config, progress, eval_every, eval_samples)


def _train(task, config, progress, eval_every, eval_samples) -> TrainedModel:
    seed_everything(config.seed)
    model = task.build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    factor = SCHEDULES[config.schedule]
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: factor(step, config.steps))
    batches = training_generator(config.seed)
    monitor = task.sample(eval_samples, held_out_generator())
    history: dict[str, list[float]] = {
        "step": [], "loss": [], "held_out_step": [], "held_out_exact_match": []
    }
    started = time.perf_counter()
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
    return TrainedModel(task, config, model, history, time.perf_counter() - started)
# --8<-- [end:train]


@contextmanager
def _single_thread():
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
        >>> output, predictions = predict(task.build_model(), task.sample(4, torch.Generator()).inputs)
        >>> predictions.shape, output.logits.shape
        (torch.Size([4, 3]), torch.Size([4, 3, 11]))
    """
    was_training = model.training
    model.eval()
    output = model(inputs)
    model.train(was_training)
    return output, output.logits.argmax(dim=-1)


def predict_one(model: nn.Module, tokens: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
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


def _exact_match(task: Task, model: nn.Module, batch: Batch) -> float:
    return _correct(task, model, batch).all(dim=1).float().mean().item()


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


# --- checkpoints ---------------------------------------------------------------------------


def save_checkpoint(trained: TrainedModel, path: str | os.PathLike) -> Path:
    """Write ``trained`` to ``path`` atomically: a crash never leaves half a file behind.

    Examples:
        >>> import tempfile
        >>> from attnprimer.tasks import CountingTask
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> folder = Path(tempfile.mkdtemp())
        >>> save_checkpoint(trained, folder / "counting.pt").name
        'counting.pt'
        >>> load_checkpoint(folder / "counting.pt").config == trained.config
        True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "task": trained.task.name,
        "task_settings": asdict(trained.task),
        "train_config": asdict(trained.config),
        "state_dict": trained.model.state_dict(),
        "history": trained.history,
        "train_seconds": trained.train_seconds,
        "source_hash": source_hash(),
    }
    write_atomically(path, lambda file: torch.save(payload, file))
    return path


def write_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], object],
                     mode: int | None = None) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it into place.

    A reader (or a crash) never sees half a file: ``path`` holds the old content or the
    new, whole. ``mode`` sets the file's permissions (mkstemp's are 0600).

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "note.txt"
        >>> write_atomically(path, lambda file: file.write(b"whole"))
        >>> path.read_bytes(), [other.name for other in path.parent.iterdir()]
        (b'whole', ['note.txt'])
    """
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | os.PathLike) -> TrainedModel:
    """Read a checkpoint written by [`save_checkpoint`][attnprimer.train.save_checkpoint] (with ``weights_only=True``).

    Raises:
        CheckpointError: the file is missing, corrupted, or not an attnprimer checkpoint.

    Examples:
        >>> import tempfile
        >>> damaged = Path(tempfile.mkdtemp()) / "damaged.pt"
        >>> _ = damaged.write_bytes(b"not a checkpoint")
        >>> try:
        ...     load_checkpoint(damaged)
        ... except CheckpointError as error:
        ...     print("refused:", str(error).startswith("cannot read checkpoint"))
        refused: True
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many kinds for a damaged file
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"cannot read checkpoint {path}: {reason}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not an attnprimer checkpoint (format {CHECKPOINT_FORMAT})")
    try:
        task = get_task(payload["task"], **payload["task_settings"])
        config = TrainConfig(**payload["train_config"])
        model = task.build_model()
        model.load_state_dict(payload["state_dict"])
        history, train_seconds = payload["history"], payload["train_seconds"]
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        reason = str(error).strip().splitlines()[0]
        raise CheckpointError(f"checkpoint {path} is incomplete or does not match its task: "
                              f"{type(error).__name__}: {reason}") from None
    model.eval()
    return TrainedModel(task, config, model, history, train_seconds)


# --- the cache of trained models -----------------------------------------------------------

# Modules that only present results: editing them never changes a trained model.
_PRESENTATION_MODULES = frozenset(
    {"__main__.py", "analysis.py", "cli.py", "cost.py", "exercises.py", "explorer.py", "figures.py",
     "report.py"}
)


def cache_dir() -> Path:
    """Where trained models are cached: ``$ATTNPRIMER_CACHE_DIR``, else ``~/.cache/attnprimer``.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> cached_path(CountingTask(), TrainConfig()).parent == cache_dir() / "models"
        True
    """
    configured = os.environ.get("ATTNPRIMER_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnprimer"


def source_hash(*, presentation: bool = False) -> str:
    """A hash of the package code that shapes training, or with ``presentation``, all of it.

    Comments and docstrings are left out, so editing them retrains nothing.
    """
    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        if not presentation and path.name in _PRESENTATION_MODULES and path.parent == package:
            continue
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(code_fingerprint(path.read_text(encoding="utf-8")).encode())
    return digest.hexdigest()


def code_fingerprint(source: str) -> str:
    r"""What Python runs of ``source``: its syntax tree without docstrings (comments never get in).

    Examples:
        >>> code_fingerprint('def f():\n    "Doc."\n    return 1  # one') == code_fingerprint(
        ...     "def f():\n    return 1")
        True
        >>> code_fingerprint("x = 1") == code_fingerprint("x = 2")
        False
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def cached_path(task: Task, config: TrainConfig) -> Path:
    """The cache file of the model for ``task`` and ``config`` under the current source.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> path = cached_path(CountingTask(), TrainConfig(seed=0))
        >>> path.name.startswith("counting-"), path == cached_path(CountingTask(), TrainConfig(seed=1))
        (True, False)
    """
    key = json.dumps(
        {"task": task.name, "settings": asdict(task), "train": asdict(config), "source": source_hash()},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "models" / f"{task.name}-{digest}.pt"


def train_missing(
    specs: Iterable[tuple[Task, TrainConfig]], *, workers: int | None = None
) -> list[tuple[Task, TrainConfig]]:
    """Train and cache every model of ``specs`` the cache lacks, several at a time.

    Each model trains on one thread in its own process (``workers`` of them,
    default: one per CPU), so a cold cache fills about ``workers`` times faster.
    Training is deterministic, so the models are the ones
    [`get_trained`][attnprimer.train.get_trained] would have made one by one.

    Ctrl-C (``KeyboardInterrupt``, raised here) stops every worker at once, quietly:
    the models finished before stay cached, and no half-written file is left.

    Returns:
        The (task, config) pairs that were trained.
    """
    missing = list(dict.fromkeys(
        (task, config) for task, config in specs if not cached_path(task, config).is_file()
    ))
    workers = max(1, min(workers or os.cpu_count() or 1, len(missing)))
    if workers == 1:
        for task, config in missing:
            get_trained(task, config)
        return missing
    # spawn: a fresh interpreter per worker, whatever threads the parent runs.
    context = multiprocessing.get_context("spawn")
    with _ctrl_c_reaches_only_this_process():  # its queues start the resource tracker
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=_stop_on_sigterm)
    try:
        with _ctrl_c_reaches_only_this_process():  # and its workers
            futures = [pool.submit(_train_and_cache, spec) for spec in missing]
        for future in futures:
            future.result()
    except BaseException:  # Ctrl-C, or a model that failed: stop training the others now
        _terminate(pool)
        raise
    pool.shutdown()
    return missing


@contextmanager
def _ctrl_c_reaches_only_this_process():
    """Ignore SIGINT while starting processes: they inherit that, so Ctrl-C in a terminal
    (sent to every process of the group) interrupts this process alone, never a worker
    with a traceback of its own; this process then stops the workers (``_terminate``).
    """
    if threading.current_thread() is not threading.main_thread():  # signal() would raise
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool``'s workers now, mid-training, and wait until they are gone."""
    processes = list(pool._processes.values())  # no public way before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()  # SIGTERM: see _stop_on_sigterm
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join()


class _Terminated(BaseException):
    """Raised in a worker by SIGTERM: unwinds training and any half-written file."""


_busy = False  # a worker is in _train_and_cache


def _stop_on_sigterm() -> None:
    """A worker's initializer: SIGTERM ends it quietly, leaving no temporary file behind."""
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame) -> None:
    if _busy:
        raise _Terminated  # write_atomically removes its temporary file on the way up
    os._exit(128 + signum)  # idle: nothing to clean up, and no traceback


def _train_and_cache(spec: tuple[Task, TrainConfig]) -> None:
    global _busy
    _busy = True
    try:
        get_trained(*spec)
    except _Terminated:
        os._exit(128 + signal.SIGTERM)
    finally:
        _busy = False


def get_trained(task: Task, config: TrainConfig, *, progress: bool = False) -> TrainedModel:
    """The trained model for ``task`` and ``config``: from the cache, or trained and cached.

    A cache entry that cannot be read is treated as missing and replaced.

    Examples:
        >>> import os, tempfile
        >>> from attnprimer.tasks import CountingTask
        >>> saved = os.environ.get("ATTNPRIMER_CACHE_DIR")
        >>> os.environ["ATTNPRIMER_CACHE_DIR"] = tempfile.mkdtemp()  # a throwaway cache
        >>> task, config = CountingTask(hidden=8), TrainConfig(steps=5)
        >>> first = get_trained(task, config)           # trains, then caches
        >>> cached_path(task, config).is_file()
        True
        >>> second = get_trained(task, config)          # loads from the cache
        >>> torch.equal(first.model.queries, second.model.queries)
        True
        >>> _ = os.environ.pop("ATTNPRIMER_CACHE_DIR")
        >>> if saved is not None: os.environ["ATTNPRIMER_CACHE_DIR"] = saved
    """
    path = cached_path(task, config)
    if path.is_file():
        try:
            return load_checkpoint(path)
        except CheckpointError:
            pass
    trained = train(task, config, progress=progress)
    save_checkpoint(trained, path)
    return trained
