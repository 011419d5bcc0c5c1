"""Checkpoints: a trained model on disk, written atomically and read back safely.

A checkpoint holds the task's name and settings, the training settings, the weights and
the training history. [`save_checkpoint`][attnprimer.training.checkpoints.save_checkpoint] writes it
through [`write_atomically`][attnprimer.training.files.write_atomically], so a crash or a Ctrl-C
never leaves half a file behind;
[`load_checkpoint`][attnprimer.training.checkpoints.load_checkpoint]
reads it with ``weights_only=True`` and rebuilds the model from its task.
"""

from __future__ import annotations

import os
import tempfile  # noqa: F401  (the examples use it)
from dataclasses import asdict
from pathlib import Path

import torch

from attnprimer.tasks import get_task
from attnprimer.training.files import write_atomically
from attnprimer.training.train import TrainConfig, TrainedModel

__all__ = ["CHECKPOINT_FORMAT", "CheckpointError", "load_checkpoint", "save_checkpoint"]

CHECKPOINT_FORMAT = 1


class CheckpointError(RuntimeError):
    """A checkpoint file is missing, unreadable or not one of ours."""


def save_checkpoint(trained: TrainedModel, path: str | os.PathLike) -> Path:
    """Write ``trained`` to ``path`` atomically: a crash never leaves half a file behind.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import train
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
    }
    write_atomically(path, lambda file: torch.save(payload, file))
    return path


def load_checkpoint(path: str | os.PathLike) -> TrainedModel:
    """Read a checkpoint written by
    [`save_checkpoint`][attnprimer.training.checkpoints.save_checkpoint].

    Raises:
        CheckpointError: the file is missing, corrupted, or not an attnprimer checkpoint.

    Examples:
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
    except Exception as error:  # noqa: BLE001  torch raises many kinds for a damaged file
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"cannot read checkpoint {path}: {reason}") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path} is not an attnprimer checkpoint (format {CHECKPOINT_FORMAT})")
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
