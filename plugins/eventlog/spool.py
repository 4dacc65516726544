"""The spool: where a run's events go while its event log cannot be written.

A spool file holds one run's batches as msgspec (MessagePack) frames, each prefixed by its
length and CRC-32 and fsynced when written, so a crash keeps every batch flushed before it:
first :class:`SpoolOpened` (the log it belongs to, the run's ``runs`` row, the tables its
views read), then one :class:`BatchSpooled` per flushed batch, then :class:`RunClosed` when
the run ends. While the run goes it holds an exclusive ``flock`` of the file, so nothing
ingests a spool before it is complete.

Spool files live next to the log, in ``<log>.spool/``, or — when that directory cannot be
written — under ``$RILL_HOME/spool/<hash of the log's path>/``. Both are looked at by
:func:`pending_spools`. A run deferring its log (see :mod:`plugins.eventlog.writer`) writes a
*deferred* spool, ``<run>-<seq>.deferred.rillspool``: ingested like any other, but without a
word to the user; it is renamed to the plain name (announced) once the log was tried and could
not be written.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import msgspec

from kernel.errors import EventLogError
from kernel.config import rill_home
from plugins.eventlog.runs import RunRow
from plugins.eventlog.schema import TableSpec

SUFFIX = ".rillspool"
DEFERRED = ".deferred"  # before SUFFIX: a deferred spool
_FRAME_HEAD = struct.Struct("<II")  # payload length, CRC-32 of the payload


class Frame(msgspec.Struct, frozen=True, kw_only=True, tag_field="frame"):
    """Base of the frames of a spool file (the tag is part of the file format)."""


class SpoolOpened(Frame, tag="opened"):
    log: str  # absolute path of the event log these events belong to
    run_id: str
    created_ns: int  # wall clock: spools of one log are ingested in this order
    run: RunRow
    tables: list[TableSpec]  # every table the run's views read


class TableRows(msgspec.Struct, frozen=True, array_like=True):
    table: TableSpec
    columns: list[list[Any]]  # values column by column, as ``schema.column_values`` gives them


class BatchSpooled(Frame, tag="batch"):
    first_seq: int
    count: int
    events_total: int  # the run's events so far, this batch included
    clock_start: int | None
    clock_end: int | None
    updated_at: int  # µs since the epoch
    tables: list[TableRows]


class RunClosed(Frame, tag="closed"):
    status: str
    ended_at: int | None
    updated_at: int
    metadata: str  # JSON


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Union[SpoolOpened, BatchSpooled, RunClosed])


def absolute(log: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(log)))


def spool_dirs(log: Path) -> list[Path]:
    """Where spools of ``log`` live: next to it, else under ``$RILL_HOME/spool``."""
    log = absolute(log)
    key = hashlib.sha256(str(log).encode()).hexdigest()[:16]
    return [log.with_name(log.name + ".spool"), absolute(rill_home()) / "spool" / key]


def is_deferred(path: Path) -> bool:
    return path.name.endswith(DEFERRED + SUFFIX)


def announce(path: Path) -> Path:
    """Give a deferred spool its plain name; returns the new path."""
    announced = path.with_name(path.name[: -len(DEFERRED + SUFFIX)] + SUFFIX)
    os.replace(path, announced)
    _fsync_dir(path.parent)
    return announced


def spooled_events(path: Path) -> tuple[int, int]:
    """(events, first seq) of the batches a spool file holds."""
    events, first = 0, None
    for frame in read_frames(path):
        if isinstance(frame, BatchSpooled):
            events += frame.count
            first = frame.first_seq if first is None else first
    return events, first or 0


def spool_notice(run_id: str, log: Path, problem: str, events: int, first_seq: int, path: Path) -> str:
    """The line that tells the user a run's events wait in a spool."""
    return (f"rill: warning: run {run_id}: event log {log} cannot be written ({problem}); its {events:,} events "
            f"since seq {first_seq} are spooled in {path}, and the next command that can write the log ingests "
            "them (`rill log recover`)")


def pending_spools(log: Path) -> list[Path]:
    found = []
    for directory in spool_dirs(log):
        try:
            found.extend(directory / name for name in sorted(os.listdir(directory)) if name.endswith(SUFFIX))
        except OSError:
            continue
    return found


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def encode_frame(frame: Frame) -> bytes:
    payload = _encoder.encode(frame)
    return _FRAME_HEAD.pack(len(payload), zlib.crc32(payload)) + payload


class SpoolWriter:
    """One spool file being written by its run (on the event bus's flusher thread)."""

    def __init__(self, path: Path, fd: int, first_seq: int) -> None:
        self.path = path
        self._fd = fd
        #: sequence number of the first event spooled here
        self.first_seq = first_seq
        self.events = 0

    @classmethod
    def create(cls, log: Path, opened: SpoolOpened, first_seq: int, deferred: bool = False) -> SpoolWriter:
        """A new spool file for the run (``deferred``: a deferred spool), next to the log or else
        under ``$RILL_HOME``."""
        problems = []
        for directory in spool_dirs(log):
            path = directory / f"{opened.run_id}-{first_seq:012d}{DEFERRED if deferred else ''}{SUFFIX}"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except OSError as exc:
                problems.append(f"{directory}: {exc.strerror or exc}")
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _write_all(fd, encode_frame(opened))
                os.fsync(fd)
                _fsync_dir(directory)
            except OSError as exc:
                os.close(fd)
                path.unlink(missing_ok=True)
                problems.append(f"{directory}: {exc.strerror or exc}")
                continue
            return cls(path, fd, first_seq)
        raise EventLogError(f"cannot spool either ({'; '.join(problems)})")

    def append(self, frame: Frame) -> None:
        _write_all(self._fd, encode_frame(frame))
        os.fsync(self._fd)
        if isinstance(frame, BatchSpooled):
            self.events += frame.count

    def announce(self) -> None:
        """A deferred spool becomes a plain one (the log could not be written)."""
        self.path = announce(self.path)

    def close(self) -> None:
        """Release the file: from now on a command may ingest it."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass
class SpoolRead:
    """What could be read of a spool file."""

    opened: SpoolOpened | None
    problem: str = ""  # set when bytes after the last good frame could not be read
    torn: bool = False  # the last frame is incomplete (a crash while it was written)


def read_frames(path: Path, result: SpoolRead | None = None) -> Iterator[Frame]:
    """The complete frames of a spool file, in order. ``result`` records what stopped the
    reading early: an incomplete last frame (``torn``) or unreadable bytes (``problem``)."""
    with open(path, "rb") as file:
        offset = 0
        while True:
            head = file.read(_FRAME_HEAD.size)
            if not head:
                return
            if len(head) < _FRAME_HEAD.size:
                if result is not None:
                    result.torn = True
                return
            length, crc = _FRAME_HEAD.unpack(head)
            payload = file.read(length)
            if len(payload) < length:
                if result is not None:
                    result.torn = True
                return
            if zlib.crc32(payload) != crc:
                if result is not None:
                    result.problem = f"the frame at byte {offset} fails its checksum"
                return
            try:
                frame = _decoder.decode(payload)
            except msgspec.DecodeError as exc:
                if result is not None:
                    result.problem = f"the frame at byte {offset} cannot be decoded: {exc}"
                return
            offset += _FRAME_HEAD.size + length
            yield frame


def read_opened(path: Path) -> SpoolOpened | None:
    """The first frame of a spool file (None if it has none yet or it is unreadable)."""
    try:
        for frame in read_frames(path):
            return frame if isinstance(frame, SpoolOpened) else None
    except OSError:
        return None
    return None


def lock_spool(path: Path) -> int | None:
    """An fd holding the spool file's exclusive lock, or None when its run still writes it
    (or it is gone: another command ingested it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink == 0:
            raise BlockingIOError
    except OSError:
        os.close(fd)
        return None
    return fd


def remove_spool(path: Path) -> None:
    path.unlink(missing_ok=True)
    _fsync_dir(path.parent)
