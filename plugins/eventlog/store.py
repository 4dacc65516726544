"""The DuckDB file holding every run, shared safely between processes.

DuckDB lets one process write a file, or many read it. Every writer therefore holds the
file only for one short flush under an exclusive ``flock`` of ``<file>.lock``; readers hold
a shared lock while they query (:mod:`plugins.eventlog.locking`). Two runs at once take turns for a few milliseconds per
flush interval and never block their runtimes (their flusher threads wait, not the loop).

A run whose process died without ending it (SIGKILL, power cut) is found by the next
reader or writer — its status is ``running`` but its process is gone — and marked
``crashed``; everything flushed before the crash stays.

Every run writes its events to its segments first (:mod:`plugins.eventlog.spool`); its writer
waits for the file at most a flush interval, and what it could not store waits in its
segments. A command waits at most a minute, then reports the log busy. Before reading, the
log's segments that are ready are ingested (:meth:`EventStore.recover`). A damaged log
(:mod:`plugins.eventlog.damage`) is never written to; an intact one that cannot be written is
read as it is.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator

from kernel.errors import EventLogError
from kernel.eventbus import drain_buses
from kernel.eventtables import SCHEMA
from plugins.eventlog.damage import LogDamaged, LogLocked, check_complete, damage_in, open_error, reason
from plugins.eventlog.locking import log_lock
from plugins.eventlog.migrations import LATEST, check_version, migrate, schema_version
from plugins.eventlog.spool import kept_segments, ready_spools

if TYPE_CHECKING:
    from plugins.eventlog.ingest import Recovery

#: the name the log's file is attached under in every connection
CATALOG = "rill_log"
_MIGRATED: set[str] = set()
#: seconds a command (a reader, a recovery) waits for the log before it gives up
COMMAND_WAIT = 60.0
#: resolved path -> (device, inode, size) of the file when it was last found complete (or written)
_COMPLETE: dict[str, tuple[int, int, int]] = {}


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


def _file_state(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_dev, stat.st_ino, stat.st_size


def _check_complete(con: Any, path: Path) -> None:
    """:func:`check_complete`, skipped while the file is the one found complete before and
    has not shrunk since (checking reads the metadata of every table)."""
    key = str(path.resolve())
    device, inode, size = _file_state(path)
    seen = _COMPLETE.get(key)
    if seen is None or seen[:2] != (device, inode) or size < seen[2]:
        check_complete(con, CATALOG, path)
    _COMPLETE[key] = (device, inode, size)


class EventStore:
    def __init__(self, path: str | os.PathLike, lock_timeout: float = 5.0, retention: float = 7 * 86_400.0) -> None:
        self.path = Path(path)
        #: seconds an explicit flush waits for a busy log (a batch no segment could take, too)
        self.lock_timeout = lock_timeout
        #: seconds an ingested segment is kept (``eventlog.retention``)
        self.retention = retention
        #: a recovery before reading failed (the segments wait): not tried again by this store
        self._recovery_failed = False

    def exists(self) -> bool:
        """Whether the log exists, once this process's runs are stored and the segments that
        are ready ingested (which may create it)."""
        drain_buses()
        if not self._recovery_failed and ready_spools(self.path):
            self._recover_pending()
        if self.path.exists():
            return True
        kept = {path.name.split("-", 1)[0] for path in kept_segments(self.path)}
        if kept:
            print(f"rill: warning: no event log at {self.path}, but {len(kept)} run(s) recorded there are in its kept "
                  "segments: `rill log rebuild` writes them into it", file=sys.stderr)
        return False

    @contextmanager
    def _locked(self, exclusive: bool, timeout: float = COMMAND_WAIT) -> Iterator[None]:
        with log_lock(self.path, exclusive, timeout):
            yield

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
            raise open_error(self.path, exc, readable=not read_only and self._readable()) from None
        con.execute(f"USE {CATALOG}")
        return con

    def _readable(self) -> bool:
        """Whether the log can be attached read-only and is complete (then a failed read-write
        attach means it cannot be written, not that it is damaged)."""
        import duckdb

        if not self.path.is_file():
            return False
        try:
            probe = self._connect(read_only=True)
        except EventLogError:
            return False
        try:
            check_complete(probe, CATALOG, self.path)
        except (EventLogError, duckdb.Error):
            return False
        finally:
            probe.close()
        return True

    def _attach_writable(self, timeout: float) -> Any:
        """A read-write connection, waiting up to ``timeout`` for another process holding
        DuckDB's own lock of the file; a damaged file is refused before anything is written."""
        deadline = time.monotonic() + timeout
        if self.path.with_name(self.path.name + ".wal").exists():
            # a crashed writer's WAL is replayed into the file when it is opened for writing:
            # check the file first, without writing
            probe = self._connect(read_only=True)
            try:
                _check_complete(probe, self.path)
            finally:
                probe.close()
        while True:
            try:
                con = self._connect(read_only=False)
                break
            except LogLocked:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)
        try:
            _check_complete(con, self.path)
            key = str(self.path.resolve())
            if key not in _MIGRATED:
                migrate(con, str(self.path))
                _MIGRATED.add(key)
        except BaseException as exc:
            con.close()
            detail = damage_in(exc)
            if detail and not isinstance(exc, LogDamaged):
                raise LogDamaged(self.path, detail) from None
            raise
        return con

    @contextmanager
    def write(self, timeout: float | None = None) -> Iterator[Any]:
        """An exclusive read-write connection, migrated to the latest schema, waiting up to
        ``timeout`` seconds for the file (a run's writer: ``lock_timeout``)."""
        timeout = self.lock_timeout if timeout is None else timeout
        with self._locked(exclusive=True, timeout=timeout):
            with self._session(timeout) as con:
                yield con

    @contextmanager
    def write_sessions(self, timeout: float | None = None) -> Iterator[Callable[[], ContextManager[Any]]]:
        """Hold the log as ``write`` does and yield ``session()``: connections one after the
        other (each closed, and so checkpointed, before the next), as a run's writer opens
        one per flush, without another process writing in between."""
        timeout = self.lock_timeout if timeout is None else timeout
        with self._locked(exclusive=True, timeout=timeout):
            yield lambda: self._session(timeout)

    @contextmanager
    def _session(self, timeout: float) -> Iterator[Any]:
        con = self._attach_writable(timeout)
        try:
            yield con
        except BaseException as exc:
            con.close()
            detail = damage_in(exc)
            if detail and not isinstance(exc, LogDamaged):
                raise LogDamaged(self.path, detail) from exc
            raise
        con.close()
        _COMPLETE[str(self.path.resolve())] = _file_state(self.path)  # as this write left it

    def recover(self) -> Recovery:
        """Ingest the log's segments that are ready (see :mod:`plugins.eventlog.ingest`)."""
        from plugins.eventlog.ingest import ingest_pending

        with self.write(COMMAND_WAIT) as con:
            return ingest_pending(con, self.path, self.retention)

    def _recover_pending(self) -> None:
        """Ingest the segments that are ready before reading, saying so on stderr when they
        are news. A damaged log is reported as such; a log that cannot be written now keeps
        them waiting (and is read as it is)."""
        from plugins.eventlog.ingest import announce_ingested

        try:
            recovery = self.recover()
        except LogDamaged:
            raise
        except EventLogError as exc:
            self._recovery_failed = True
            print(f"rill: warning: {len(ready_spools(self.path))} spooled run(s) wait to be ingested: "
                  f"{reason(exc)}", file=sys.stderr)
            return
        announce_ingested(recovery)
        for problem in recovery.problems:
            print(f"rill: warning: segment {problem}", file=sys.stderr)
        if recovery.failure:
            self._recovery_failed = True
            print(f"rill: warning: {len(ready_spools(self.path))} spooled run(s) wait to be ingested: "
                  f"{recovery.failure}", file=sys.stderr)

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
            except Exception as exc:
                detail = damage_in(exc)
                if detail:
                    raise LogDamaged(self.path, detail) from None
                raise
            finally:
                con.close()

    @contextmanager
    def inspect(self) -> Iterator[Any]:
        """The log as it is, damaged or not, attached read-only as ``rill_log`` to a plain
        in-memory DuckDB (``rill log check`` and ``rill log salvage``, which attaches the new
        file next to it): nothing is ingested, marked or migrated."""
        import duckdb

        drain_buses()
        if not self.path.exists():
            raise EventLogError(f"no event log at {self.path} (no run has been recorded there yet)")
        with self._locked(exclusive=False):
            con = duckdb.connect()
            try:
                try:
                    con.execute(f"ATTACH '{str(self.path).replace(chr(39), chr(39) * 2)}' AS {CATALOG} (READ_ONLY)")
                except duckdb.Error as exc:
                    raise open_error(self.path, exc) from None
                yield con
            finally:
                con.close()

    def mark_crashed_runs(self) -> list[str]:
        """Mark runs of dead processes on this host ``crashed``; returns their ids."""
        host = os.uname().nodename
        with self._locked(exclusive=False):
            con = self._connect(read_only=True)
            try:
                _check_complete(con, self.path)
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
            with self.write(COMMAND_WAIT):  # upgrade a log written by an older rill before reading it
                pass
        if dead:
            try:
                with self.write(COMMAND_WAIT) as con:
                    con.executemany(
                        f"UPDATE {SCHEMA}.runs SET status = 'crashed', ended_at = updated_at "
                        "WHERE run_id = ? AND status = 'running'",
                        [[run_id] for run_id in dead],
                    )
            except LogDamaged:
                raise
            except EventLogError:
                return []  # a log nobody may write is read as it is
        return dead

