"""Locks of the event log between processes: a writer alone, readers together, nobody
waiting longer than a bound, and writers not starved by readers coming one after another.

``<log>.lock`` is the lock proper (``flock``: exclusive for a writer, shared for readers).
In front of it is ``<log>.queue``: a writer holds it exclusively while it waits for the lock,
readers pass through it (shared) before they ask; so readers arriving while a writer waits
queue behind it instead of overtaking it forever.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kernel.errors import EventLogError
from plugins.eventlog.damage import LogLocked


def _open(path: Path, exclusive: bool) -> int | None:
    """The lock file's fd; None for a reader in a directory nobody can write (no writer
    can change the log there either, so it reads without locking)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if not exclusive and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return None
        raise EventLogError(f"cannot create {path} ({exc.strerror or exc})") from None


def _acquire(fd: int, mode: int, deadline: float) -> bool:
    pause = 0.0005
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.005)


@contextmanager
def log_lock(log: Path, exclusive: bool, timeout: float) -> Iterator[None]:
    """Hold the log's lock (exclusive for a writer); :class:`LogLocked` after ``timeout`` s."""
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    deadline = time.monotonic() + timeout
    queue = _open(log.with_name(log.name + ".queue"), exclusive)
    try:
        lock = _open(log.with_name(log.name + ".lock"), exclusive)
    except BaseException:
        if queue is not None:
            os.close(queue)
        raise
    try:
        try:
            for fd in (queue, lock):
                if fd is not None and not _acquire(fd, mode, deadline):
                    raise LogLocked(f"event log {log} is locked by another process (waited {timeout:g} s)")
        finally:
            if queue is not None:
                os.close(queue)  # closing releases it
        yield
    finally:
        if lock is not None:
            os.close(lock)
