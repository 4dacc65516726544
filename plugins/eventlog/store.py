"""The DuckDB file holding every run, shared safely between processes.

DuckDB lets one process write a file, or many read it. Every writer therefore holds the
file only for one short flush under an exclusive ``flock`` of ``<file>.lock``; readers hold
a shared lock while they query. Two runs at once take turns for a few milliseconds per
flush interval and never block their runtimes (their flusher threads wait, not the loop).

A run whose process died without ending it (SIGKILL, power cut) is found by the next
reader or writer — its status is ``running`` but its process is gone — and marked
``crashed``; everything flushed before the crash stays.
"""

from __future__ import annotations

import fcntl
import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from kernel.errors import EventLogError
from kernel.eventbus import drain_buses
from plugins.eventlog.migrations import LATEST, check_version, migrate, schema_version
from plugins.eventlog.schema import SCHEMA

#: the name the log's file is attached under in every connection
CATALOG = "rill_log"
_MIGRATED: set[str] = set()


def process_start(pid: int) -> int | None:
    """Start time of a process (clock ticks since boot, Linux), to tell reused pids apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def process_alive(pid: int, start: int | None) -> bool:
    if os.path.isdir("/proc/self"):
        current = process_start(pid)
        return current is not None and (start is None or current == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EventStore:
    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    def exists(self) -> bool:
        drain_buses()
        return self.path.exists()

    @contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _connect(self, read_only: bool) -> Any:
        """An in-memory DuckDB with the log attached as catalog ``rill_log`` (whatever the
        file is called, ``rill.runs`` then always means the log's schema ``rill``)."""
        import duckdb

        con = duckdb.connect()
        path = str(self.path).replace("'", "''")
        try:
            con.execute(f"ATTACH '{path}' AS {CATALOG}{' (READ_ONLY)' if read_only else ''}")
        except duckdb.Error as exc:
            con.close()
            raise EventLogError(
                f"cannot open event log {self.path} (corrupt, or not a DuckDB file?): "
                f"{str(exc).splitlines()[0]}"
            ) from None
        con.execute(f"USE {CATALOG}")
        return con

    @contextmanager
    def write(self) -> Iterator[Any]:
        """An exclusive read-write connection, migrated to the latest schema."""
        with self._locked(exclusive=True):
            con = self._connect(read_only=False)
            try:
                key = str(self.path.resolve())
                if key not in _MIGRATED:
                    migrate(con, str(self.path))
                    _MIGRATED.add(key)
                yield con
            finally:
                con.close()

    @contextmanager
    def read(self) -> Iterator[Any]:
        """A shared read-only connection with ``rill`` first on the search path."""
        drain_buses()
        if not self.exists():
            raise EventLogError(f"no event log at {self.path} (no run has been recorded there yet)")
        self.mark_crashed_runs()
        with self._locked(exclusive=False):
            con = self._connect(read_only=True)
            try:
                check_version(schema_version(con), str(self.path))
                con.execute(f"SET search_path = '{CATALOG}.{SCHEMA},{CATALOG}.main'")
                yield con
            finally:
                con.close()

    def mark_crashed_runs(self) -> list[str]:
        """Mark runs of dead processes on this host ``crashed``; returns their ids."""
        host = socket.gethostname()
        with self._locked(exclusive=False):
            con = self._connect(read_only=True)
            try:
                version = schema_version(con)
                check_version(version, str(self.path))
                if version == 0:
                    rows = []
                else:
                    rows = con.execute(
                        f"SELECT run_id, pid, pid_start FROM {SCHEMA}.runs WHERE status = 'running' AND host = ?",
                        [host],
                    ).fetchall()
            finally:
                con.close()
        dead = [run_id for run_id, pid, start in rows if not process_alive(pid, start)]
        if 0 < version < LATEST:
            with self.write():  # upgrade a log written by an older rill before reading it
                pass
        if dead:
            with self.write() as con:
                con.executemany(
                    f"UPDATE {SCHEMA}.runs SET status = 'crashed', ended_at = updated_at "
                    "WHERE run_id = ? AND status = 'running'",
                    [[run_id] for run_id in dead],
                )
        return dead

