"""Tiny throwaway models and damaged checkpoints, shared by the training, checkpoint and cache
tests."""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

from attnprimer.tasks import CountingTask
from attnprimer.training.checkpoints import save_checkpoint
from attnprimer.training.train import TrainConfig

TINY_TASK = CountingTask(hidden=8)
TINY_CONFIG = TrainConfig(steps=30, seed=0)


def states_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


# --- ways to damage a checkpoint ----------------------------------------------------------------


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
