"""Telling a damaged event log from one that is only busy or cannot be written.

A damaged log (not a DuckDB file, empty, a directory, truncated, corrupt blocks) is one error
whatever the damage, naming the file and the way out; rill never writes to it. A log locked
by another process is busy; one that is intact but cannot be written (its file or directory
read-only, immutable, on a read-only or full file system) is unwritable and is read as it is.
Neither is damaged: runs keep their events in their segments until it can be written again.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any

from kernel.errors import EventLogError

#: DuckDB's file header: the main header and two database headers of 4 KiB each
HEADER_BYTES = 3 * 4096

_LOCKED = ("Could not set lock on file", "Conflicting lock")
_OUT_OF_REACH = ("Permission denied", "Read-only file system", "No space left", "Too many open files",
                 "No such file or directory", "Disk quota exceeded")
_DAMAGED = ("not a valid DuckDB database file", "Could not read enough bytes", "Corrupt database file",
            "checksum", "Is a directory", "Serialization Error", "failed to deserialize")


class LogDamaged(EventLogError):
    """The event log is damaged: readers stop, writers spool, ``rill log salvage`` copies."""

    def __init__(self, path: str | os.PathLike, detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(
            f"event log {path} is damaged ({detail}); rill leaves it as it is: `rill log check` lists "
            "the intact runs, `rill log salvage OUT.duckdb` copies them into a new file"
        )


class LogLocked(EventLogError):
    """Another process holds the event log longer than a writer waits for it."""


class LogUnwritable(EventLogError):
    """The event log is intact but cannot be written here: readers read it as it is."""

    def __init__(self, path: str | os.PathLike, detail: str) -> None:
        self.path = Path(path)
        self.detail = detail
        super().__init__(f"event log {path} cannot be written ({detail})")


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def reason(exc: BaseException) -> str:
    """Why the log could not be written, in a few words (never none)."""
    if isinstance(exc, LogDamaged):
        return f"it is damaged: {exc.detail}"
    if isinstance(exc, LogLocked):
        return "another process holds it"
    if isinstance(exc, LogUnwritable):
        return exc.detail
    return _first_line(exc)


def _os_reason(message: str) -> str:
    """The operating system's words at the end of DuckDB's message about a file, if any."""
    found = re.search(r'"[^"]*":\s*(.+)$', message)
    return found[1] if found else message


def probe(path: Path) -> str:
    """Why the log at ``path`` cannot be written, as far as can be told without opening it
    with DuckDB ("" if nothing is wrong that way): it is a directory, empty, not a DuckDB
    file, its metadata lies past its end, or it (or its lock files) cannot be opened for
    writing. Nothing is written."""
    for lock in (path.with_name(path.name + ".queue"), path.with_name(path.name + ".lock")):
        try:
            os.close(os.open(lock, os.O_RDWR | os.O_CREAT, 0o644))
        except OSError as exc:
            return f"cannot create {lock} ({exc.strerror or exc})"
    if path.is_dir():
        return "it is damaged: a directory, not a DuckDB file"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot open it for writing: {exc.strerror or exc}"
    try:
        size = os.fstat(fd).st_size
        headers = os.pread(fd, HEADER_BYTES, 0)
    finally:
        os.close(fd)
    if size == 0:
        return "it is damaged: an empty file (0 bytes), not a DuckDB file"
    if len(headers) < HEADER_BYTES or headers[8:12] != b"DUCK":
        return "it is damaged: not a DuckDB file"
    needed = _blocks_needed(headers)
    if needed > size:
        return f"it is damaged: truncated: {size:,} bytes, its blocks need {needed:,}"
    return ""


def _blocks_needed(headers: bytes) -> int:
    """The bytes the current database header's metadata and free list need (their blocks)."""
    current = max((struct.unpack_from("<6Q", headers, offset) for offset in (4096, 8192)), key=lambda h: h[1])
    _, _, meta, free, _, block_size = current
    blocks = [pointer & ((1 << 56) - 1) for pointer in (meta, free) if pointer != (1 << 64) - 1]
    return HEADER_BYTES + (max(blocks) + 1) * block_size if blocks and block_size else 0


def describe(message: str) -> str:
    """A short description of DuckDB's words for a damaged file."""
    if "not a valid DuckDB database file" in message:
        return "not a DuckDB file"
    found = re.search(r"Could not read enough bytes.*location (\d+)", message)
    if found:
        return f"truncated: the data at byte {found[1]} is missing"
    found = re.search(r"checksum.*location (\d+)", message)
    if found:
        return f"corrupt data at byte {found[1]}"
    if "Is a directory" in message:
        return "a directory, not a DuckDB file"
    return message


def damage_in(exc: BaseException) -> str | None:
    """The damage an error (or the error it was raised from) reports, if any."""
    seen = exc
    while seen is not None:
        if isinstance(seen, LogDamaged):
            return seen.detail
        message = _first_line(seen)
        if type(seen).__module__.startswith(("duckdb", "_duckdb")) and any(m in message for m in _DAMAGED):
            return describe(message)
        seen = seen.__cause__ or seen.__context__
    return None


def open_error(path: Path, exc: BaseException, readable: bool = False) -> EventLogError:
    """The error for a log DuckDB could not attach (``readable``: it could attach it read-only,
    so the log is intact but cannot be written)."""
    message = _first_line(exc)
    if any(marker in message for marker in _LOCKED):
        return LogLocked(f"event log {path} is in use by another process: {message}")
    if readable:
        return LogUnwritable(path, f"cannot open it for writing: {_os_reason(message)}")
    if path.is_dir():
        return LogDamaged(path, "a directory, not a DuckDB file")
    if path.is_file() and path.stat().st_size == 0:
        return LogDamaged(path, "an empty file (0 bytes), not a DuckDB file")
    if any(marker in message for marker in _OUT_OF_REACH) or "version number" in message:
        return EventLogError(f"cannot open event log {path}: {message}")
    return LogDamaged(path, _truncated_metadata(path, message) or describe(message))


def _truncated_metadata(path: Path, message: str) -> str | None:
    """The damage when DuckDB could not attach a file because the block holding its metadata
    lies past the end of the file (as :func:`check_complete` words a truncated file)."""
    found = re.search(r"Could not read enough bytes.*location (\d+)", message)
    if found is None or not path.is_file():
        return None
    size = path.stat().st_size
    with open(path, "rb") as stream:
        headers = stream.read(HEADER_BYTES)
    if int(found[1]) < size or len(headers) < HEADER_BYTES:
        return None
    # the database header with the higher iteration is the current one: (checksum, iteration,
    # meta block, free list, block count, block allocation size, ...)
    current = max((struct.unpack_from("<6Q", headers, offset) for offset in (4096, 8192)), key=lambda h: h[1])
    return f"truncated: {size:,} bytes, its blocks need {int(found[1]) + current[5]:,}"


def check_complete(con: Any, catalog: str, path: Path) -> None:
    """Raise :class:`LogDamaged` if the file is shorter than the blocks its metadata, its
    tables and its free list use (a truncated log DuckDB would still open, and fill with new
    blocks on the next write)."""
    block_size = con.execute(
        "SELECT block_size FROM pragma_database_size() WHERE database_name = ?", [catalog]
    ).fetchone()[0]
    highest = con.execute(f"SELECT coalesce(max(block_id), -1) FROM pragma_metadata_info('{catalog}')").fetchone()[0]
    tables = con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ?", [catalog]
    ).fetchall()
    for schema, table in tables:
        used = con.execute(
            f"""SELECT max(greatest(block_id, coalesce(list_max(additional_block_ids), -1)))
                FROM pragma_storage_info('{catalog}.{schema}.{table}') WHERE persistent"""
        ).fetchone()[0]
        highest = max(highest, -1 if used is None else used)
    needed = HEADER_BYTES + (highest + 1) * block_size
    with open(path, "rb") as stream:
        headers = stream.read(HEADER_BYTES)
    if len(headers) == HEADER_BYTES:
        needed = max(needed, _blocks_needed(headers))  # the free list, too
    size = path.stat().st_size
    if size < needed:
        raise LogDamaged(path, f"truncated: {size:,} bytes, its blocks need {needed:,}")
