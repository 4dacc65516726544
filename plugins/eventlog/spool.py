"""Segments: the durable files every run writes its events to first.

A segment holds one run's batches as msgspec (MessagePack) frames, each prefixed by its length
and CRC-32, appended and fsynced per flush, so a crash keeps every batch flushed before it:
first :class:`SpoolOpened` (the log it belongs to, the run's ``runs`` row, the tables its views
read), then one :class:`BatchSpooled` per flushed batch, then :class:`RunClosed` when the run
ends. While the run goes it holds an exclusive ``flock`` of the file, so nothing ingests it
before it is complete (the run's own writer ingests it as it goes). A run's segment is rotated
at :data:`SEGMENT_BYTES`: the next one starts at the next batch's seq.

The segments are the source of truth on the way in; the DuckDB log is derived from them. They
live next to the log, in ``<log>.spool/``, or — when that directory cannot be written — under
``$RILL_HOME/spool/<hash of the log's path>/``; both are looked at by :func:`pending_spools`.
A segment is ``<run>-<seq>.rillseg``; one whose run could not write the log (and said so)
is renamed ``<run>-<seq>.rillspool``, announced, as are the spools of earlier versions. Once
ingested a segment moves to ``kept/`` in its directory and stays there for
``eventlog.retention``, so a log DuckDB can no longer read can be rebuilt from them
(:mod:`plugins.eventlog.rebuild`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import msgspec

from kernel.errors import EventLogError
from kernel.config import rill_home
from plugins.eventlog.runs import RunRow
from plugins.eventlog.schema import TableSpec

SEGMENT = ".rillseg"
SUFFIX = ".rillspool"  # announced: the run said its log could not be written
DEFERRED = ".deferred"  # before SUFFIX: a deferred spool of an earlier rill (ingested silently)
KEPT = "kept"
#: a run's segment is closed and the next one started once it holds this many bytes
SEGMENT_BYTES = 64 << 20
_FRAME_HEAD = struct.Struct("<II")  # payload length, CRC-32 of the payload


class Frame(msgspec.Struct, frozen=True, kw_only=True, tag_field="frame"):
    """Base of the frames of a segment (the tag is part of the file format)."""


class SpoolOpened(Frame, tag="opened"):
    log: str  # absolute path of the event log these events belong to
    run_id: str
    created_ns: int  # wall clock: segments of one log are ingested in this order
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
    """Where segments of ``log`` live: next to it, else under ``$RILL_HOME/spool``."""
    log = absolute(log)
    key = hashlib.sha256(str(log).encode()).hexdigest()[:16]
    return [log.with_name(log.name + ".spool"), absolute(rill_home()) / "spool" / key]


def is_segment(name: str) -> bool:
    return name.endswith((SEGMENT, SUFFIX))


def is_announced(path: Path) -> bool:
    """The run said its log could not be written (its ingest is news to the user)."""
    return path.name.endswith(SUFFIX) and not path.name.endswith(DEFERRED + SUFFIX)


def announce(path: Path) -> Path:
    """Give a segment the announced name; returns the new path."""
    if not path.name.endswith(SEGMENT):
        return path
    announced = path.with_name(path.name[: -len(SEGMENT)] + SUFFIX)
    os.replace(path, announced)
    _fsync_dir(path.parent)
    return announced


def spooled_events(path: Path) -> tuple[int, int]:
    """(events, first seq) of the batches a segment holds."""
    events, first = 0, None
    for frame in read_frames(path):
        if isinstance(frame, BatchSpooled):
            events += frame.count
            first = frame.first_seq if first is None else first
    return events, first or 0


def spool_notice(run_id: str, log: Path, problem: str, events: int, first_seq: int, path: Path) -> str:
    """The line that tells the user a run's events wait in a segment for a log that cannot be
    written."""
    return (f"rill: warning: run {run_id}: event log {log} cannot be written ({problem}); its {events:,} events "
            f"since seq {first_seq} are spooled in {path}, and the next command that can write the log ingests "
            "them (`rill log recover`)")


def _listed(directory: Path) -> list[Path]:
    try:
        return [directory / name for name in sorted(os.listdir(directory)) if is_segment(name)]
    except OSError:
        return []


def pending_spools(log: Path) -> list[Path]:
    """The segments of ``log`` not ingested yet (those of runs still going included)."""
    return [path for directory in spool_dirs(log) for path in _listed(directory)]


def ready_spools(log: Path) -> list[Path]:
    """The pending segments of ``log`` whose run no longer writes them (ready to be ingested)."""
    ready = []
    for path in pending_spools(log):
        fd = lock_spool(path)
        if fd is not None:
            os.close(fd)
            ready.append(path)
    return ready


def kept_segments(log: Path) -> list[Path]:
    """The segments of ``log`` ingested and kept for ``eventlog.retention``."""
    return [path for directory in spool_dirs(log) for path in _listed(directory / KEPT)]


def keep(path: Path, retention: float) -> None:
    """An ingested segment moves to ``kept/`` for ``retention`` seconds (0: removed now)."""
    if retention <= 0:
        remove_spool(path)
        return
    kept = path.parent / KEPT
    kept.mkdir(exist_ok=True)
    target = kept / path.name
    os.replace(path, target)
    os.utime(target)  # retention counts from the ingest
    _fsync_dir(kept)
    _fsync_dir(path.parent)


def expire_kept(log: Path, retention: float) -> None:
    """Remove the kept segments of ``log`` ingested more than ``retention`` seconds ago."""
    horizon = time.time() - retention
    for path in kept_segments(log):
        try:
            if path.stat().st_mtime < horizon:
                path.unlink()
        except OSError:
            continue


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


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class SpoolWriter:
    """One segment being written by its run (on the event bus's flusher thread)."""

    def __init__(self, path: Path, fd: int, first_seq: int, size: int) -> None:
        self.path = path
        self._fd = fd
        #: sequence number of the first event of this segment
        self.first_seq = first_seq
        self.events = 0
        #: bytes written (all of them whole frames)
        self.size = size

    @classmethod
    def create(cls, log: Path, opened: SpoolOpened, first: BatchSpooled) -> SpoolWriter:
        """A new segment for the run, next to the log or else under ``$RILL_HOME``, holding
        ``opened`` and the batch ``first`` (written and synced together)."""
        problems = []
        head = encode_frame(opened)
        data = head + encode_frame(first)
        for directory in spool_dirs(log):
            path = directory / f"{opened.run_id}-{first.first_seq:012d}{SEGMENT}"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except OSError as exc:
                problems.append(f"{directory}: {_reason(exc)}")
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _write_all(fd, data)
                os.fsync(fd)
                _fsync_dir(directory)
            except OSError as exc:
                os.close(fd)
                path.unlink(missing_ok=True)
                problems.append(f"{directory}: {_reason(exc)}")
                continue
            writer = cls(path, fd, first.first_seq, len(data))
            writer.events = first.count
            return writer
        raise EventLogError("; ".join(problems))

    def append(self, frame: Frame) -> None:
        """Append one frame and sync it; on failure the segment is cut back to its whole
        frames (and :class:`EventLogError` says why)."""
        data = encode_frame(frame)
        try:
            _write_all(self._fd, data)
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, self.size)
            except OSError:
                pass
            raise EventLogError(f"{self.path}: {_reason(exc)}") from None
        self.size += len(data)
        if isinstance(frame, BatchSpooled):
            self.events += frame.count

    def announce(self) -> None:
        """The segment gets the announced name (the log could not be written)."""
        self.path = announce(self.path)

    def close(self) -> None:
        """Release the file: from now on a command may ingest it."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass
class SpoolRead:
    """What could be read of a segment."""

    opened: SpoolOpened | None
    problem: str = ""  # set when bytes after the last good frame could not be read
    torn: bool = False  # the last frame is incomplete (a crash while it was written)
    offset: int = 0  # where the bytes after the last good frame start


def read_frames(path: Path, result: SpoolRead | None = None, start: int = 0) -> Iterator[Frame]:
    """The complete frames of a segment from byte ``start``, in order. ``result`` records
    what stopped the reading early — an incomplete last frame (``torn``) or unreadable bytes
    (``problem``) — and where the last good frame ends (``offset``)."""
    result = SpoolRead(None) if result is None else result
    result.offset = start
    with open(path, "rb") as file:
        file.seek(start)
        offset = start
        while True:
            head = file.read(_FRAME_HEAD.size)
            if not head:
                return
            if len(head) < _FRAME_HEAD.size:
                result.torn = True
                return
            length, crc = _FRAME_HEAD.unpack(head)
            payload = file.read(length)
            if len(payload) < length:
                result.torn = True
                return
            if zlib.crc32(payload) != crc:
                result.problem = f"the frame at byte {offset} fails its checksum"
                return
            try:
                frame = _decoder.decode(payload)
            except msgspec.DecodeError as exc:
                result.problem = f"the frame at byte {offset} cannot be decoded: {exc}"
                return
            offset += _FRAME_HEAD.size + length
            result.offset = offset
            yield frame


def read_opened(path: Path) -> SpoolOpened | None:
    """The first frame of a segment (None if it has none yet or it is unreadable)."""
    try:
        for frame in read_frames(path):
            return frame if isinstance(frame, SpoolOpened) else None
    except OSError:
        return None
    return None


def lock_spool(path: Path) -> int | None:
    """An fd holding the segment's exclusive lock, or None when its run still writes it
    (or it is gone from ``path``: another command ingested it, or its run renamed it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(path).st_ino != os.fstat(fd).st_ino:
            raise BlockingIOError
    except OSError:
        os.close(fd)
        return None
    return fd


def remove_spool(path: Path) -> None:
    path.unlink(missing_ok=True)
    _fsync_dir(path.parent)
