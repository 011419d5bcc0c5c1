"""The cache of trained models, keyed per model on the fingerprint of the code that shapes it.

A trained model is cached on disk (see [`cache_dir`][attnprimer.training.files.cache_dir]) under a
key made of its task and settings, its training settings (seed included) and the *fingerprint of the
code that shapes it* ([`attnprimer.training.fingerprints`][attnprimer.training.fingerprints]): the
task's module, every package module it imports (the model classes, the concept modules they are
built from, ...), followed import by import, and the training loop with what it imports. The set is
derived from the ``import`` statements, never kept by hand
([`dependencies`][attnprimer.training.fingerprints.dependencies]), so

* editing ``tasks/reversal.py`` retrains the reversal models and the models whose tasks are
  built on it (``reversal-transformer``, ``copy-reverse``), not the counting models;
* editing ``positional.py`` retrains the models whose code imports it (signal, and the
  Transformers through ``transformer.py``), not the counting models;
* editing a docstring or a comment retrains nothing: a fingerprint covers the syntax tree
  Python runs, without docstrings, attribute docstrings included
  ([`code_fingerprint`][attnprimer.training.fingerprints.code_fingerprint]).

The results of experiments on trained models are cached the same way
([`cached_result`][attnprimer.training.model_cache.cached_result]).
"""

from __future__ import annotations

import fcntl
import hashlib
import inspect
import json
import os
import textwrap
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from attnprimer.tasks.base import Task
from attnprimer.training.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attnprimer.training.files import cache_dir, write_atomically
from attnprimer.training.fingerprints import code_fingerprint, fingerprint, module_path
from attnprimer.training.progress import TrainingProgress
from attnprimer.training.train import (
    HELD_OUT_SEED,
    Evaluation,
    TrainConfig,
    TrainedModel,
    evaluate,
    single_thread,
    train,
)
from attnprimer.training.workers import run_in_processes

__all__ = [
    "TRAINING_MODULES",
    "cached_evaluation",
    "cached_path",
    "cached_result",
    "get_trained",
    "model_modules",
    "train_missing",
    "training_lock",
]

TRAINING_MODULES = ("attnprimer.training.train",)
"""The training loop: its code (and what it imports) shapes every trained model."""


# --- the cache of trained models -------------------------------------------------------------


def model_modules(task: Task) -> tuple[str, ...]:
    """The modules whose code shapes a model of ``task``: its task module and the training loop.

    Examples:
        >>> from attnprimer.tasks import ReversalTask
        >>> model_modules(ReversalTask())
        ('attnprimer.tasks.reversal', 'attnprimer.training.train')
    """
    return (type(task).__module__, *TRAINING_MODULES)


def cached_path(task: Task, config: TrainConfig) -> Path:
    """The cache file of the model for ``task`` and ``config`` under the current code.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> path = cached_path(CountingTask(), TrainConfig(seed=0))
        >>> path.name.startswith("counting-"), path == cached_path(
        ...     CountingTask(), TrainConfig(seed=1))
        (True, False)
    """
    key = json.dumps(
        {"task": task.name, "settings": asdict(task), "train": asdict(config),
         "code": fingerprint(*model_modules(task))},
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "models" / f"{task.name}-{digest}.pt"


def get_trained(task: Task, config: TrainConfig, *, progress: bool = False) -> TrainedModel:
    """The trained model for ``task`` and ``config``: from the cache, or trained and cached.

    A cache entry that cannot be read is treated as missing and replaced.

    Examples:
        >>> import tempfile, torch
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


Result = TypeVar("Result")


def cached_result(
    function: Callable[..., Result],
    trained: TrainedModel | None,
    *,
    encode: Callable[[Result], Any] = lambda result: result,
    decode: Callable[[Any], Result] = lambda data: data,
    **arguments: Any,
) -> Result:
    """``function(trained, **arguments)`` for a trained model of the cache, computed once.

    The result is kept as JSON (``encode`` makes it JSON-ready, ``decode`` rebuilds it) under a key
    made of the model's cache key, the function's name, its arguments and the fingerprint of its
    module: an experiment that the docs build ran on a site model is read back by the claims tests,
    until the model or the experiment's code changes. Deterministic functions only (a fixed seed for
    any held-out data). The function runs on one torch thread
    ([`single_thread`][attnprimer.training.train.single_thread]): experiments on the site's small
    models are many small operations, where threads cost more than they save.

    With ``trained=None`` the result depends on the arguments and the code alone, and the
    function is called as ``function(**arguments)``: a measurement of this machine that the
    page and its claims tests must share (it runs its own processes, with their own threads).

    Examples:
        >>> import tempfile
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import evaluate
        >>> saved = os.environ.get("ATTNPRIMER_CACHE_DIR")
        >>> os.environ["ATTNPRIMER_CACHE_DIR"] = tempfile.mkdtemp()
        >>> trained = get_trained(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> first = cached_result(evaluate, trained, encode=lambda e: e.exact_match, samples=50)
        >>> cached_result(evaluate, trained, samples=50) == first.exact_match  # read back
        True
        >>> _ = os.environ.pop("ATTNPRIMER_CACHE_DIR")
        >>> if saved is not None: os.environ["ATTNPRIMER_CACHE_DIR"] = saved
    """
    model = None if trained is None else cached_path(trained.task, trained.config).stem
    key = json.dumps({"model": model,
                      "function": f"{function.__module__}.{function.__qualname__}",
                      "code": _code_of(function), "arguments": arguments},
                     sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = cache_dir() / "results" / f"{function.__name__}-{digest}.json"
    if path.is_file():
        try:
            return decode(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):  # damaged: compute it again
            pass
    with single_thread():
        result = function(**arguments) if trained is None else function(trained, **arguments)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(encode(result))  # keys in the result's own order: tables follow it
    write_atomically(path, lambda file: file.write(text.encode("utf-8")), mode=0o644)
    return result


def cached_evaluation(trained: TrainedModel, samples: int = 10_000,
                      seed: int = HELD_OUT_SEED) -> Evaluation:
    """[`evaluate`][attnprimer.training.train.evaluate] through
    [`cached_result`][attnprimer.training.model_cache.cached_result]: a site model's held-out
    accuracy is scored once, then read back by every page, figure and claims test that quotes it.

    Examples:
        >>> import tempfile
        >>> from attnprimer.tasks import CountingTask
        >>> saved = os.environ.get("ATTNPRIMER_CACHE_DIR")
        >>> os.environ["ATTNPRIMER_CACHE_DIR"] = tempfile.mkdtemp()
        >>> trained = get_trained(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> cached_evaluation(trained, samples=50) == evaluate(trained, samples=50)
        True
        >>> _ = os.environ.pop("ATTNPRIMER_CACHE_DIR")
        >>> if saved is not None: os.environ["ATTNPRIMER_CACHE_DIR"] = saved
    """
    return cached_result(evaluate, trained, encode=asdict, decode=lambda data: Evaluation(**data),
                         samples=samples, seed=seed)


def _code_of(function: Callable) -> str:
    """The fingerprint of a package function's module (and its imports); elsewhere, of its
    own source.

    This module counts among the imports, but not what it imports: loading a checkpoint names
    every task, and the model's own code is in its cache key already. So an edit to one task
    re-keys the results of its own models, not every machine measurement and experiment.
    """
    if module_path(function.__module__) is not None:
        return fingerprint(function.__module__, leaves=[__name__])
    return hashlib.sha256(code_fingerprint(
        textwrap.dedent(inspect.getsource(function))).encode()).hexdigest()


def train_missing(
    specs: Iterable[tuple[Task, TrainConfig]], *, workers: int | None = None,
    report: Callable[[str], None] | None = None,
) -> list[tuple[Task, TrainConfig]]:
    """Train and cache every model of ``specs`` the cache lacks, several at a time.

    Each model trains on one thread in its own process (``workers`` of them,
    default: one per CPU), so a cold cache fills about ``workers`` times faster.
    Training is deterministic, so the models are the ones
    [`get_trained`][attnprimer.training.model_cache.get_trained] would have made one by one.
    A line goes to ``report`` (default: standard error) when training starts and as each
    model finishes, with an estimate of what is left
    ([`TrainingProgress`][attnprimer.training.progress.TrainingProgress]).

    Ctrl-C (``KeyboardInterrupt``, raised here) stops every worker at once, quietly:
    the models finished before stay cached, and no half-written file is left. Run again, it
    trains only what is still missing.

    Returns:
        The (task, config) pairs that were trained.
    """
    specs = list(dict.fromkeys(specs))
    if all(cached_path(task, config).is_file() for task, config in specs):
        return []
    with training_lock():  # another process filling the same cache: wait, then train the rest
        missing = [spec for spec in specs if not cached_path(*spec).is_file()]
        if not missing:
            return []
        workers = max(1, min(workers or os.cpu_count() or 1, len(missing)))
        # Longest first: the last model to start is then a short one, and the workers finish
        # together instead of one waiting for a long model started last.
        progress = TrainingProgress(missing, workers, report)
        missing.sort(key=progress.expected.__getitem__, reverse=True)
        progress.started()
        if workers == 1:
            for spec in missing:
                progress.done(spec, _train_and_cache(spec))
        else:
            run_in_processes(_train_and_cache, missing, workers=workers, on_done=progress.done)
        return missing


@contextmanager
def training_lock():
    """Hold the cache's training lock (one process trains into a cache at a time).

    Two processes that fill the same cache, such as two test workers or a docs build beside
    the tests, would otherwise train the same models twice, side by side on the same cores.
    """
    folder = cache_dir() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    lock = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)  # the folder itself: no lock file
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)  # closing releases the lock


def _train_and_cache(spec: tuple[Task, TrainConfig]) -> float:
    """Train one model into the cache (in a worker process); its training seconds."""
    return get_trained(*spec).train_seconds
