"""The command line's errors, argument types, and the checks of its settings and paths.

Paths are checked before any training: a bad one fails at once, not after minutes of training.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

from attnprimer.tasks import TASKS, Task
from attnprimer.training.files import cache_dir
from attnprimer.training.train import (
    TrainConfig,
)

__all__ = ["Interrupted", "PathError", "UsageError"]


class UsageError(Exception):
    """Bad flags or input: reported on one line, exit code 2."""


class PathError(Exception):
    """A file or folder the command needs cannot be used: one line, exit code 1."""


class Interrupted(Exception):
    """Ctrl-C, with what was interrupted and what was saved: one line, exit code 130."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (and exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _setting_fields(task_class: type[Task]):
    return [*fields(TrainConfig), *fields(task_class)]


def _settings(args: argparse.Namespace) -> tuple[Task, TrainConfig]:
    """Build the task and the training config from the flags, checking the values."""
    task_class = TASKS[args.task]
    given = {field.name: getattr(args, field.name) for field in _setting_fields(task_class)
             if getattr(args, field.name) is not None}
    train_names = {field.name for field in fields(TrainConfig)}
    train_settings = {**task_class.train_defaults,
                      **{name: value for name, value in given.items() if name in train_names}}
    task_settings = {name: value for name, value in given.items() if name not in train_names}
    try:
        return task_class(**task_settings), TrainConfig(**train_settings)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _train_command(task: Task, config: TrainConfig) -> str:
    """The shortest ``attnprimer train`` command line that trains this model."""
    defaults = {field.name: field.default for field in _setting_fields(type(task))}
    defaults.update(type(task).train_defaults)
    words = ["attnprimer", "train", task.name]
    for name, value in {**asdict(config), **asdict(task)}.items():
        flag = "--" + name.replace("_", "-")
        if value == defaults[name]:
            continue
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        else:
            words += [flag, str(value)]
    return " ".join(words)


# --- paths: checked before any training ------------------------------------------------------


def _check_checkpoint(path: Path) -> None:
    """``--checkpoint``: a file in an existing folder we can write in.

    The folder is not created: a mistyped path should fail, not leave new folders behind.
    """
    if path.is_dir():
        problem = f"{path} is a folder, not a file"
    else:
        problem = _folder_problem(path.parent, create=False)
    if problem:
        raise PathError(f"cannot save the checkpoint to {path}: {problem}; nothing was trained")


def _check_cache(folder: Path, *, writing: bool, then: str = "") -> None:
    """A folder of the model cache: usable for reading (or missing), or also for writing."""
    problem = _folder_problem(folder, create=True, probe=writing)
    if problem:
        source = ("ATTNPRIMER_CACHE_DIR" if os.environ.get("ATTNPRIMER_CACHE_DIR")
                  else "set ATTNPRIMER_CACHE_DIR to use another")
        raise PathError(f"cannot use the model cache {cache_dir()} ({source}): {problem}"
                        + (f"; {then}" if then else ""))


def _folder_problem(folder: Path, *, create: bool, probe: bool = True) -> str | None:
    """Why files cannot be written in ``folder``, or None if they can.

    A missing ``folder`` is a problem unless ``create`` (it is made later, with its
    parents). Leaves nothing on disk: no folder is made here, and ``probe`` (a
    temporary file in the nearest existing folder) is removed at once.
    """
    existing = folder
    while not existing.exists():
        if not create:
            return f"folder {existing} does not exist"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is {'a file, ' if existing.is_file() else ''}not a folder"
    if probe:
        try:
            handle, name = tempfile.mkstemp(dir=existing, prefix=".attnprimer-", suffix=".tmp")
        except OSError as error:
            return f"cannot create files in {existing} ({error.strerror})"
        try:
            os.close(handle)
        finally:
            os.unlink(name)
    return None


def _describe(error: OSError) -> str:
    """An OSError in a few words with its path, e.g. ``Not a directory: a/b``."""
    if error.filename is None:
        return str(error)
    paths = " -> ".join(str(name) for name in (error.filename, error.filename2) if name)
    return f"{error.strerror}: {paths}"


# --- argument types --------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    value = _parse(int, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = _parse(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _parse(float, text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _parse(kind, text: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a valid {kind.__name__}: {text!r}") from None
