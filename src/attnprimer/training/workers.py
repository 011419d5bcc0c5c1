"""Worker processes that Ctrl-C stops at once and quietly.

[`run_in_processes`][attnprimer.training.workers.run_in_processes] calls a function on each item in
a pool of spawned processes: the model cache trains missing models with it, the figure registry
renders chapters with it. Ctrl-C in a terminal reaches every process of the group; here only the
parent gets it, stops the workers with SIGTERM, and each worker unwinds what it was doing (an atomic
write removes its temporary file) and exits without a traceback.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["run_in_processes"]

Item = TypeVar("Item")
Result = TypeVar("Result")


def run_in_processes(function: Callable[[Item], Result], items: Sequence[Item], *,
                     workers: int,
                     on_done: Callable[[Item, Result], object] | None = None) -> list[Result]:
    """``[function(item) for item in items]``, in ``workers`` spawned processes.

    Items start in their order (put the longest first); results come back in the same order.
    ``on_done(item, result)`` is called here, in this process, as each item finishes (in the
    order they finish). ``function`` and the items must pickle (a module-level function). The
    first exception, Ctrl-C included, stops every worker at once and is raised here.
    """
    # spawn: a fresh interpreter per worker, whatever threads the parent runs.
    context = multiprocessing.get_context("spawn")
    with _ctrl_c_reaches_only_this_process():  # its queues start the resource tracker
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=_stop_on_sigterm)
    try:
        with _ctrl_c_reaches_only_this_process():  # and its workers
            futures = {pool.submit(_call, function, item): item for item in items}
        for future in as_completed(futures):
            result = future.result()  # raises the worker's exception
            if on_done is not None:
                on_done(futures[future], result)
        results = [future.result() for future in futures]
    except BaseException:  # Ctrl-C, or a failure: stop the others now
        _terminate(pool)
        raise
    pool.shutdown()
    return results


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


_busy = False  # this worker is running a function (see _call)


def _stop_on_sigterm() -> None:
    """A worker's initializer: SIGTERM ends it quietly, leaving no temporary file behind."""
    signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame) -> None:
    if _busy:
        raise _Terminated  # write_atomically removes its temporary file on the way up
    os._exit(128 + signum)  # idle: nothing to clean up, and no traceback


def _call(function: Callable[[Item], Result], item: Item) -> Result:
    global _busy
    _busy = True
    try:
        return function(item)
    except _Terminated:
        os._exit(128 + signal.SIGTERM)
    finally:
        _busy = False
