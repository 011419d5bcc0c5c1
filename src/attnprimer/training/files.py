"""Where the package keeps what it writes, and how it writes a file so that no reader sees half.

Trained models, cached results and the parses of the package's modules live under
[`cache_dir`][attnprimer.training.files.cache_dir]; every file there (and every figure, table and
checkpoint) is written through [`write_atomically`][attnprimer.training.files.write_atomically].
Nothing here imports torch: the docs build reads these on a rebuild where nothing changed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["cache_dir", "write_atomically"]


def cache_dir() -> Path:
    """Where trained models are cached: ``$ATTNPRIMER_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/attnprimer``, else ``~/.cache/attnprimer``.

    Examples:
        >>> from attnprimer.training.model_cache import cached_path
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.training.train import TrainConfig
        >>> cached_path(CountingTask(), TrainConfig()).parent == cache_dir() / "models"
        True
    """
    configured = os.environ.get("ATTNPRIMER_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnprimer"


def write_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], object],
                     mode: int | None = None) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it into place.

    A reader, or a crash of the process, never sees half a file: ``path`` holds the old
    content or the new, whole (the file is not synced to disk first, so a crash of the whole
    machine may leave less). ``mode`` sets the file's permissions (mkstemp's are 0600).

    Examples:
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
