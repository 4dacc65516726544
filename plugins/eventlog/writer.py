"""The event observer that keeps a run's events: in its segments first, then in the DuckDB log.

Runs on the event bus's flusher thread (the run's first batch on the thread that starts the
run): the conversion to columns, the segment and the insert never touch the runtime's thread.

Every batch is appended to the run's segment and synced (:mod:`plugins.eventlog.spool`): the
segments are the source of truth on the way in, so a crash keeps every batch flushed, and the
run's first batch — its ``runs`` row and ``run_started`` — is durable before the job's user
code runs. The log is derived from them: for its first ``eventlog.defer`` of wall time a run
leaves it alone (a run shorter than that never pays the log's fixed cost — DuckDB, Arrow, the
file's lock and schema — on its path); after that, and at an explicit ``bus.flush()``, the
writer stores in the log what its segments hold and the log does not, one transaction each
time. It waits for a busy log at most half a flush interval (a tenth at the run's end), and
not again within a flush interval once it found the log busy, so a reader holding the log
never makes the run wait longer than that, and never makes it an error. What it could not
store waits in its segments: a run that ended while deferring is stored by whoever waits for
its events (``settle``), else by the next command that reads or writes the log; so is a run
whose log was busy. Nothing outlives the run's process.

When the log cannot be written (damaged, unwritable) the run says so at its end, in one line
naming its segment; when no segment can take a batch either, the batch goes straight to the
log, and if that fails too the run ends with an error naming both reasons.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kernel.errors import EventLogError
from kernel.eventbus import EventBatch
from kernel.eventtables import EventTable, table_for
from plugins.eventlog.damage import LogLocked, probe, reason
from plugins.eventlog.migrations import SchemaConflict
from plugins.eventlog.runs import RunRow, micros, now_micros, run_row
from plugins.eventlog.schema import TableSpec, column_values, group_by_type
from plugins.eventlog.spool import (
    SEGMENT_BYTES,
    BatchSpooled,
    Frame,
    RunClosed,
    SpoolOpened,
    SpoolWriter,
    TableRows,
    absolute,
    announce,
    keep,
    spool_notice,
    spooled_events,
)
from plugins.eventlog.store import COMMAND_WAIT, EventStore, process_start

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


class DuckDBEventWriter:
    def __init__(self, store: EventStore, run: Run, defer: float = 0.0) -> None:
        self.store = store
        self.run = run
        #: until this ``time.monotonic()`` the run's periodic batches stay in its segments only
        self.defer_until = time.monotonic() + defer
        #: events of the run delivered so far
        self.events = 0
        self._tables: dict[type, tuple[EventTable, TableSpec]] = {}
        self._opened: SpoolOpened | None = None
        self._clock_start: int | None = None
        self._clock_end: int | None = None
        #: the segment being written
        self.segment: SpoolWriter | None = None
        #: where the frames of ``segment`` the log does not have yet start
        self._stored_to = 0
        #: the run's segments (closed or being written), oldest first
        self.segments: list[Path] = []
        #: the writer stores in the log (the log was tried)
        self.writing = False
        #: the run's segments have all been stored in the log
        self.stored = False
        #: the log was written at least once (the log's other ready segments were ingested)
        self._joined = False
        #: a run that ended deferring: its segments wait to be settled
        self.unsettled = False
        #: why the log could not be written, the last time it could not ("" if it could, or was busy)
        self.problem = ""
        #: why no segment could take a batch, the last time one could not
        self.spool_problem = ""
        #: the user was told the log cannot be written
        self._noticed = False
        #: a batch could be kept nowhere: the run's later events are not taken either
        self.lost = False
        #: ``time.monotonic()`` until which the log is taken to be busy (it was a moment ago)
        self._busy_until = 0.0

    def _table(self, event_type: type) -> tuple[EventTable, TableSpec]:
        known = self._tables.get(event_type)
        if known is None:
            table = table_for(event_type)
            known = self._tables[event_type] = (table, TableSpec.of(table))
        return known

    def _opened_frame(self) -> SpoolOpened:
        if self._opened is None:
            row: RunRow = run_row(self.run, process_start(os.getpid()))
            tables = [self._table(event_type)[1] for event_type in self.run.session.events.types()]
            self._opened = SpoolOpened(log=str(absolute(self.store.path)), run_id=self.run.id,
                                       created_ns=time.time_ns(), run=row, tables=tables)
        return self._opened

    def _lock_wait(self, share: float) -> float | None:
        """How long the run's writer waits for a busy log: ``share`` of a flush interval (at
        most ``eventlog.lock-timeout``); None while the log was found busy less than a flush
        interval ago (the segment keeps the batches meanwhile)."""
        if time.monotonic() < self._busy_until:
            return None
        return min(self.store.lock_timeout, share * self.run.bus.flush_interval)

    # -- batches ------------------------------------------------------------------------------

    def events_emitted(self, batch: EventBatch) -> None:
        if batch.events:
            frame = self._frame(batch)
            if not self._to_segment(frame):
                self._straight_to_log(frame, batch.first_seq)
                return
        if batch.deferrable and (batch.first_seq == 0 or not self.writing and time.monotonic() < self.defer_until):
            return  # kept in the segment (the run's first batch: in the log from the next flush on)
        self.writing = True
        wait = self._lock_wait(0.5) if batch.deferrable else self.store.lock_timeout
        if wait is not None:
            self._to_log(wait)

    def _frame(self, batch: EventBatch) -> BatchSpooled:
        tables = []
        for kind, events in group_by_type(batch.events).items():
            table, spec = self._table(kind)
            tables.append(TableRows(spec, column_values(table, events)))
        if self._clock_start is None:
            self._clock_start = batch.events[0].time
        self._clock_end = max(self._clock_end or batch.events[-1].time, batch.events[-1].time)
        self.events += len(batch.events)
        return BatchSpooled(
            first_seq=batch.first_seq, count=len(batch.events), events_total=self.events,
            clock_start=self._clock_start, clock_end=self._clock_end, updated_at=now_micros(), tables=tables,
        )

    def close(self, status: str) -> None:
        if self._opened is None or self.lost:
            return  # no event was ever delivered, or the error that lost them was reported
        ended = RunClosed(
            status=status, ended_at=micros(self.run.ended_at), updated_at=now_micros(),
            metadata=json.dumps(self.run.metadata, default=str),
        )
        try:
            if not self._to_segment(ended):
                self._straight_to_log(ended, self.events)
            elif self.writing and (wait := self._lock_wait(0.1)) is not None:
                self._to_log(wait)
        finally:
            self._close_segment()
        if self.stored:
            self._keep_segments()
        elif not self.writing:
            self.unsettled = True
            self.problem = probe(self.store.path)  # what can be told without loading DuckDB
        if self.problem:
            self._notice()

    def settle(self) -> None:
        """Store the run that ended deferring, here (waiting for the log as a command does)."""
        if not self.unsettled:
            return
        self.unsettled = False
        self._to_log(COMMAND_WAIT)
        if self.problem:
            self._notice()

    # -- the segment ---------------------------------------------------------------------------

    def _to_segment(self, frame: Frame) -> bool:
        """Append ``frame`` to the run's segment (a new one if needed); False when no segment
        can take it (the segment written so far stays whole and is closed)."""
        try:
            if self.segment is not None:
                self.segment.append(frame)
            else:
                first = frame if isinstance(frame, BatchSpooled) else BatchSpooled(
                    first_seq=self.events, count=0, events_total=self.events, clock_start=self._clock_start,
                    clock_end=self._clock_end, updated_at=now_micros(), tables=[])
                self.segment = SpoolWriter.create(self.store.path, self._opened_frame(), first)
                self._stored_to = 0
                self.segments.append(self.segment.path)
                if first is not frame:
                    self.segment.append(frame)
        except EventLogError as exc:
            self.spool_problem = str(exc)
            self._close_segment()
            return False
        self.stored = False
        if self.segment.size >= SEGMENT_BYTES:
            self._close_segment()
        return True

    def _close_segment(self) -> None:
        """Close the segment being written; the next frame starts a new one."""
        if self.segment is not None:
            self.segment.close()
            self.segment = None

    def _keep_segments(self) -> None:
        """The run is in the log: its segments are kept for ``eventlog.retention``."""
        for path in self.segments:
            try:
                keep(path, self.store.retention)
            except OSError:
                continue  # left pending: the next ingest finds nothing new in it and keeps it
        self.segments = []

    # -- the log -------------------------------------------------------------------------------

    def _to_log(self, wait: float, extra: tuple[Frame, ...] = ()) -> bool:
        """Store in the log what the run's segments hold and the log does not (then ``extra``,
        frames no segment could take); False when the log cannot be written now."""
        import duckdb

        from plugins.eventlog.ingest import announce_ingested, apply_frames, ingest_from, ingest_pending, transaction
        from plugins.eventlog.migrations import stored_columns

        current = self.segment.path if self.segment is not None else None
        try:
            with self.store.write(wait) as con:
                if not self._joined or any(path != current for path in self.segments):
                    recovery = ingest_pending(con, self.store.path, self.store.retention)  # its closed ones too
                    announce_ingested(recovery)
                    if recovery.failure:
                        raise EventLogError(recovery.failure)
                    self._joined = True
                    self.segments = [path for path in self.segments if path.exists()]  # the others are kept
                stored = stored_columns(con)
                if self.segment is not None:
                    self._stored_to = ingest_from(con, self._opened_frame(), self.segment.path, self._stored_to,
                                                  stored)
                if extra:
                    transaction(con, lambda: apply_frames(con, self._opened_frame(), extra, stored))
        except SchemaConflict:
            raise
        except LogLocked:
            self._busy_until = time.monotonic() + self.run.bus.flush_interval
            return False  # busy: the segments keep the batches until the log is free
        except (EventLogError, OSError, duckdb.Error) as exc:
            self.problem = reason(exc)
            return False
        self.problem = ""
        self.stored = all(path == current for path in self.segments) and (
            self.segment is None or self._stored_to == self.segment.size)
        return True

    def _straight_to_log(self, frame: Frame, first_seq: int) -> None:
        """No segment could take ``frame``: the log must, now."""
        self.writing = True
        if self._to_log(self.store.lock_timeout, (frame,)):
            return
        problem = self.problem or "another process holds it"
        self.lost = True
        raise EventLogError(
            f"run {self.run.id}: event log {self.store.path} cannot be written ({problem}) and its events cannot "
            f"be spooled ({self.spool_problem}): events from seq {first_seq} on are lost"
        )

    def _notice(self) -> None:
        """Tell the user, once, that the run's events wait in its segment for a log that cannot
        be written (the segment is renamed so its ingest is news too)."""
        if self._noticed or not self.segments:
            return
        self._noticed = True
        path = self.segments[-1]
        try:
            if self.segment is None:
                path = announce(path)
            else:
                self.segment.announce()
                path = self.segment.path
        except OSError:
            pass
        self.segments[-1] = path
        events, first_seq = spooled_events(path)
        print(spool_notice(self.run.id, self.store.path, self.problem, events, first_seq, path), file=sys.stderr,
              flush=True)
