"""Files the reading commands write (``rill sql --output``, ``rill report -o``): checked before
anything runs, written whole or not at all.

A path is refused when it is a directory or exists as anything but a regular file, when its
directory is missing or cannot be written, and when it is — itself or through a link — the
event log or one of the files kept beside it (``rill.duckdb.*``), or lies inside a directory
being read (an export, a checkpoint). The file is written under a temporary name in its
directory and renamed over ``path`` once complete; a command that fails leaves no file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from typing import IO, Iterable, Iterator

from kernel.errors import UsageError


def check_output(path: str, option: str, files: Iterable[os.PathLike | str] = (),
                 directories: Iterable[os.PathLike | str] = ()) -> str:
    """``path`` if a command may write it, else one :class:`UsageError` line naming why.
    ``files``: files never to replace (nor their ``FILE.*`` companions); ``directories``:
    directories never to write into."""
    where = f"{option} {path}"
    if not path:
        raise UsageError(f"{option}: give a file name")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UsageError(f"{where}: {exc.strerror}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UsageError(f"{where} is a directory: give a file name")
    if mode is not None and not stat.S_ISREG(mode):
        raise UsageError(f"{where} is not a regular file (a FIFO, a device, a socket?)")
    real = os.path.realpath(path)
    for file in files:
        protected = os.path.realpath(file)
        if real == protected or real.startswith(protected + "."):
            raise UsageError(f"{where} would overwrite the event log {file}: give another file")
    for directory in directories:
        protected = os.path.realpath(directory)
        if os.path.commonpath([protected, real]) == protected:
            raise UsageError(f"{where} lies inside {directory}, which is being read: give a file elsewhere")
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise UsageError(f"{where}: no directory {os.path.dirname(path) or '.'}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{where}: cannot write in {os.path.dirname(path) or '.'} (permission denied)")
    return path


@contextmanager
def replaced_whole(path: str, option: str) -> Iterator[IO[str]]:
    """A text file that becomes ``path`` when the block ends without an exception; otherwise it
    is removed and ``path`` is left as it was."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", newline="", dir=directory,
                                             prefix=f".{os.path.basename(path)}.", suffix=".part", delete=False)
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror}") from None
    try:
        with handle:
            yield handle
        os.replace(handle.name, path)
    except BaseException:
        try:
            os.unlink(handle.name)
        except FileNotFoundError:
            pass
        raise
