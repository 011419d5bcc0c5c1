"""The machine a measurement ran on: the CPU, its cores, and how busy it was.

A time measured on a shared machine says as much about the machine as about the code, so every
timing table of the chapter "Attention at scale" states the CPU model, the number of cores and
the load average (the number of processes running or waiting to run, averaged over the last
minute) before and after its measurement, as recorded here.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

__all__ = ["describe", "machine"]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine() or "unknown CPU"
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.machine() or "unknown CPU"


def machine() -> dict[str, object]:
    """The CPU model, the cores the system has, and the one-minute load average now.

    Examples:
        >>> info = machine()
        >>> sorted(info), info["cores"] >= 1
        (['cores', 'cpu', 'load'], True)
    """
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:  # not available on this system
        load = None
    return {"cpu": _cpu_model(), "cores": os.cpu_count() or 1, "load": load}


def describe(before: dict[str, object], after: dict[str, object]) -> str:
    """One sentence for a table's caption.

    Examples:
        >>> describe({"cpu": "X", "cores": 2, "load": 1.5}, {"cpu": "X", "cores": 2, "load": 2.0})
        'X, 2 cores, load average 1.50 before the measurement and 2.00 after'
    """
    if before["load"] is None or after["load"] is None:
        return f"{before['cpu']}, {before['cores']} cores, load average not available"
    return (f"{before['cpu']}, {before['cores']} cores, load average {before['load']:.2f} "
            f"before the measurement and {after['load']:.2f} after")
