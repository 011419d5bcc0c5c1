"""Export the induction model's saved checkpoints for the explorer page "Induction heads".

The page (``docs/explorer/induction-heads.md``) lets a reader slide through training, type a
sequence with a repeated segment, watch the heads of the two-layer attention-only model of the
chapter "Induction heads" read it, and switch heads off. Its script
(``docs/javascripts/explorer-induction-heads.js``) runs the forward pass of
[`AttentionOnly`][attnprimer.models.attention_only.AttentionOnly]; this module gives it the
weights of seed 0 at a chosen set of the snapshots
[`Snapshots`][attnprimer.models.attention_only.Snapshots] saved during training.

All forty snapshots would make a file of more than 2 MB. The page keeps
[`checkpoint_steps`][attnprimer.site.explorer.induction.checkpoint_steps]: every snapshot
within ``WINDOW`` steps of the drop in the loss on the repeat, where the heads form, and one
every ``EVERY`` steps elsewhere, the first and the last (the trained model) included.

The page also finds the repeat in whatever the reader types:
[`find_repeat`][attnprimer.site.explorer.induction.find_repeat] is the rule its script
follows, written here so that the site's tests can compare the two.

Positions count from 0.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.induction_heads import (
    SAMPLES,
    Curves,
    cached_curves,
    drop_step,
    heads_of,
)
from attnprimer.site.explorer.export import write_explorer_data
from attnprimer.site.explorer.families import encode_array
from attnprimer.site.figures.induction_heads import EXAMPLE
from attnprimer.tasks.induction import InductionTask, held_out_pairs
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import HELD_OUT_SEED, TrainedModel

__all__ = ["EVERY", "INDUCTION_FORMAT", "WINDOW", "checkpoint_steps", "export_site",
           "find_repeat", "induction_data"]

INDUCTION_FORMAT = 1
"""The version of the file's layout; the page's script refuses any other."""

WINDOW = 200
"""Every snapshot this many steps or fewer from the drop goes to the page."""

EVERY = 400
"""Elsewhere, one snapshot every this many steps."""


def checkpoint_steps(steps: list[int], drop: int) -> list[int]:
    """The training steps the page offers, out of ``steps`` (every snapshot, then the end).

    Examples:
        >>> checkpoint_steps(list(range(0, 2001, 50)), drop=750)
        [0, 400, 550, 600, 650, 700, 750, 800, 850, 900, 950, 1200, 1600, 2000]
    """
    last = steps[-1]
    return [step for step in steps
            if abs(step - drop) <= WINDOW or step % EVERY == 0 or step in (steps[0], last)]


# --8<-- [start:find_repeat]
def find_repeat(letters: str) -> tuple[int, int, int] | None:
    """The longest segment of two letters or more that appears twice without overlapping.

    Returns ``(first, repeat, length)``: where it starts the first time, the second time, and
    how long it is; None if no two letters repeat. On a tie, the earliest second occurrence
    wins, then the earliest first one.

    Examples:
        >>> find_repeat("JQCMAETHSGCMAEKPL")     # C M A E at 2 and at 10
        (2, 10, 4)
        >>> find_repeat("ABAB"), find_repeat("ABCD")
        ((0, 2, 2), None)
    """
    best = None
    for repeat in range(len(letters)):
        for first in range(repeat):
            length = 0  # extend while the letters agree and the two copies do not overlap
            while (first + length < repeat and repeat + length < len(letters)
                   and letters[first + length] == letters[repeat + length]):
                length += 1
            if length >= 2 and (best is None or length > best[2]):
                best = (first, repeat, length)
    return best
# --8<-- [end:find_repeat]


def _export_checkpoint(trained: TrainedModel, curves: Curves, step: int) -> dict[str, Any]:
    """One checkpoint: its step, every parameter exactly, and its held-out losses."""
    snapshots = trained.model
    index = curves.steps.index(step)
    model = snapshots.model if index == len(curves.steps) - 1 else snapshots.snapshot(index)
    return {"step": step,
            "repeat_loss": curves.repeat_loss[index],
            "first_loss": curves.first_loss[index],
            "induction": {head: scores[index] for head, scores in curves.induction.items()},
            "previous_token": {head: scores[index]
                               for head, scores in curves.previous_token.items()},
            "weights": {name: encode_array(value) for name, value in model.state_dict().items()}}


def induction_data(trained: TrainedModel | None = None,
                   curves: Curves | None = None) -> dict[str, Any]:
    """Everything the page needs, as one JSON-ready dict.

    Args:
        trained: a two-layer model of [`InductionTask`][attnprimer.tasks.induction.InductionTask];
            by default the site's seed 0, from the cache.
        curves: its scores at every snapshot; by default the chapter's
            ([`cached_curves`][attnprimer.site.experiments.induction_heads.cached_curves]).

    Returns:
        The task's settings, the model's shape, its previous-token and induction heads, the
        step of its drop, and ``checkpoints``: for each step of
        [`checkpoint_steps`][attnprimer.site.explorer.induction.checkpoint_steps], the
        parameters by their ``state_dict`` names and the loss on the repeat and on the first
        occurrence over the chapter's held-out sequences.
    """
    if trained is None:
        trained = site_model("induction", layers=2, seed=0).trained()
    task = trained.task
    if not isinstance(task, InductionTask) or task.layers != 2:
        raise TypeError(f"expected a two-layer induction model, got {task}")
    curves = cached_curves(trained) if curves is None else curves
    drop = drop_step(curves)
    previous, induction = heads_of(curves)
    held = held_out_pairs(task.vocab_size)
    return {
        "format": INDUCTION_FORMAT,
        "label": f"two attention layers, seed {trained.config.seed}",
        "alphabet": task.alphabet,
        "letters": task.alphabet[1:],
        "sequence_length": task.max_len,
        "longest_input": task.max_len - 1,  # training read letters 0..S-2
        "repeat_lengths": [task.min_repeat, task.max_repeat],
        "held_out_successors": {task.alphabet[a]: "".join(task.alphabet[int(b)]
                                                          for b in held[a].nonzero()[:, 0])
                                for a in range(1, task.vocab_size + 1)},
        "dim": task.hidden, "heads": task.heads, "layers": task.layers,
        "previous_head": previous, "induction_head": induction,
        "drop_step": drop, "snapshot_every": task.snapshot_every,
        "chance": curves.chance, "samples": SAMPLES, "seed": HELD_OUT_SEED,
        "example": EXAMPLE,
        "checkpoints": [_export_checkpoint(trained, curves, step)
                        for step in checkpoint_steps(curves.steps, drop)],
    }


def export_site(path: str | os.PathLike) -> tuple[bool, list[Path]]:
    """The docs build's step (``docs/hooks/explorer.py``): write
    [`induction_data`][attnprimer.site.explorer.induction.induction_data] of the site's model
    to ``path`` (deterministic bytes, left alone when unchanged).

    Returns:
        Whether the file was (re)written, and the model's checkpoint file in the cache.
    """
    model = site_model("induction", layers=2, seed=0)  # the one induction_data() exports
    written = write_explorer_data(path, induction_data())
    return written, [cached_path(model.task, model.config)]
