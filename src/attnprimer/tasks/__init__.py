"""The toy tasks, by name.

Used by every chapter, from "RNN recap" (``docs/chapters/rnn-recap.md``) on.

``TASKS`` maps a task's name to its class; [`get_task`][attnprimer.tasks.get_task] builds one with
its settings checked.
"""

from __future__ import annotations

from attnprimer.tasks.base import BLANK, Batch, Task
from attnprimer.tasks.copy_reverse import CopyReverseTask
from attnprimer.tasks.counting import CountingTask
from attnprimer.tasks.difference import DifferenceTask
from attnprimer.tasks.digit_pair import DigitPairTask
from attnprimer.tasks.digit_reading import DigitReadingTask
from attnprimer.tasks.induction import InductionTask
from attnprimer.tasks.partners import PartnersTask
from attnprimer.tasks.reversal import ReversalTask
from attnprimer.tasks.reversal_transformer import ReversalTransformerTask
from attnprimer.tasks.signal import SignalTask

__all__ = [
    "BLANK",
    "TASKS",
    "Batch",
    "CopyReverseTask",
    "CountingTask",
    "DifferenceTask",
    "DigitPairTask",
    "DigitReadingTask",
    "InductionTask",
    "PartnersTask",
    "ReversalTask",
    "ReversalTransformerTask",
    "SignalTask",
    "Task",
    "get_task",
]

TASKS: dict[str, type[Task]] = {
    CountingTask.name: CountingTask,
    DifferenceTask.name: DifferenceTask,
    PartnersTask.name: PartnersTask,
    SignalTask.name: SignalTask,
    ReversalTask.name: ReversalTask,
    ReversalTransformerTask.name: ReversalTransformerTask,
    CopyReverseTask.name: CopyReverseTask,
    DigitReadingTask.name: DigitReadingTask,
    DigitPairTask.name: DigitPairTask,
    InductionTask.name: InductionTask,
}


def get_task(name: str, **settings: int | bool | str) -> Task:
    """Build the task called ``name`` with the given settings.

    Examples:
        >>> get_task("counting", max_len=8)
        CountingTask(max_len=8, vocab_size=3, hidden=64, start_token=False, mixed_lengths=False)
        >>> get_task("sorting")
        Traceback (most recent call last):
        ...
        ValueError: unknown task 'sorting'; known tasks: copy-reverse, counting, difference,
        digit-pair, digit-reading, induction, partners, reversal, reversal-transformer, signal
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](**settings)
