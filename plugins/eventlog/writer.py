"""The event observer that stores batches in the DuckDB event log, or spools them.

Runs on the event bus's flusher thread: the conversion to columns, the insert and the spool
never touch the runtime's thread. Each batch is one transaction, so a crash leaves whole batches.

For its first ``eventlog.defer`` of wall time a run defers the log: the batches of its periodic
flushes go to a deferred spool file (fsynced like any spool), so a run shorter than that never
pays the log's fixed cost (DuckDB, Arrow, the file's lock and schema) on its path. A later batch,
or one flushed on request (``bus.flush()``), goes to the log, after the deferred spool. A run
that ended while deferring is stored when its events are settled
(:mod:`plugins.eventlog.handover`): by whoever waits for them, or by a background process when
the run's process exits.

When the log cannot be written — damaged, a directory, in a directory rill may not write,
held by another process longer than ``eventlog.lock-timeout`` — the batch goes to the run's
spool file instead (fsynced: a crash keeps it, see :mod:`plugins.eventlog.spool`). At every
later flush the writer tries the log again; once it can write it, it first ingests its own
spool, then writes the log again. A spool still there when the run ends is
named in one line on stderr; the next command that can write the log ingests it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from kernel.errors import EventLogError
from kernel.eventbus import EventBatch
from kernel.eventtables import EventTable, table_for
from plugins.eventlog.damage import reason
from plugins.eventlog.migrations import SchemaConflict, stored_columns, sync_event_table
from plugins.eventlog.runs import RunRow, micros, now_micros, record_end, record_progress, register_run, run_row
from plugins.eventlog.schema import TableSpec, column_values, group_by_type, to_arrow
from plugins.eventlog.spool import (
    BatchSpooled,
    Frame,
    RunClosed,
    SpoolOpened,
    SpoolWriter,
    TableRows,
    absolute,
    remove_spool,
    spool_notice,
)
from plugins.eventlog.store import EventStore, process_start

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


class DuckDBEventWriter:
    def __init__(self, store: EventStore, run: Run, defer: float = 0.0) -> None:
        self.store = store
        self.run = run
        #: until this ``time.monotonic()`` the run's periodic batches go to a deferred spool
        self.defer_until = time.monotonic() + defer
        #: events of the run delivered so far (stored or spooled)
        self.events = 0
        self._tables: dict[type, tuple[EventTable, TableSpec]] = {}
        self._stored: dict[str, dict[str, str]] | None = None
        self._registered = False
        self._row: RunRow | None = None
        self._clock_start: int | None = None
        self._clock_end: int | None = None
        #: the spool file batches go to while the log cannot be written (or is deferred)
        self.spool: SpoolWriter | None = None
        #: the spool is deferred (the log was not tried yet)
        self.deferring = False
        #: a run that ended deferring: its closed spool waits to be settled
        self.unsettled: Path | None = None
        #: why the log could not be written, the last time it could not
        self.problem = ""

    def _table(self, event_type: type) -> tuple[EventTable, TableSpec]:
        known = self._tables.get(event_type)
        if known is None:
            table = table_for(event_type)
            known = self._tables[event_type] = (table, TableSpec.of(table))
        return known

    def _run_row(self) -> RunRow:
        if self._row is None:
            self._row = run_row(self.run, process_start(os.getpid()))
        return self._row

    def _all_tables(self) -> list[TableSpec]:
        """Every table a view may read, so each exists once the run is in the log."""
        return [self._table(event_type)[1] for event_type in self.run.session.events.types()]

    # -- batches ------------------------------------------------------------------------------

    def events_emitted(self, batch: EventBatch) -> None:
        tables = []
        for kind, events in group_by_type(batch.events).items():
            table, spec = self._table(kind)
            tables.append((spec, column_values(table, events)))
        if self._clock_start is None:
            self._clock_start = batch.events[0].time
        self._clock_end = max(self._clock_end or batch.events[-1].time, batch.events[-1].time)
        self.events += len(batch.events)
        updated_at = now_micros()
        frame = BatchSpooled(
            first_seq=batch.first_seq, count=len(batch.events), events_total=self.events,
            clock_start=self._clock_start, clock_end=self._clock_end, updated_at=updated_at,
            tables=[TableRows(spec, columns) for spec, columns in tables],
        )
        if batch.deferrable and not self._registered and (self.spool is None or self.deferring) \
                and time.monotonic() < self.defer_until:
            self._to_spool(frame, batch.first_seq, deferred=True)
            return
        if self._to_log(lambda con: self._insert(con, tables, updated_at)):
            return
        self._to_spool(frame, batch.first_seq)

    def _insert(self, con: Any, tables: list[tuple[TableSpec, list[list[Any]]]], updated_at: int) -> None:
        if self._stored is None:
            self._stored = stored_columns(con)
        con.execute("BEGIN TRANSACTION")
        if not self._registered:
            register_run(con, self._run_row(), updated_at)
            for spec in self._all_tables():
                sync_event_table(con, spec, self._stored)
        for spec, columns in tables:
            sync_event_table(con, spec, self._stored)
            con.register("rill_batch", to_arrow(spec, columns))
            con.execute(
                f"INSERT INTO {spec.qualified} BY NAME SELECT ?::VARCHAR AS run_id, * FROM rill_batch", [self.run.id]
            )
            con.unregister("rill_batch")
        record_progress(con, self.run.id, self.events, updated_at, self._clock_start, self._clock_end)
        con.execute("COMMIT")
        self._registered = True

    def close(self, status: str) -> None:
        if not self._registered and self.spool is None:
            return
        ended = RunClosed(
            status=status, ended_at=micros(self.run.ended_at), updated_at=now_micros(),
            metadata=json.dumps(self.run.metadata, default=str),
        )
        if self.deferring:
            assert self.spool is not None
            self._to_spool(ended, self.events, deferred=True)
            self.spool.close()
            self.unsettled, self.spool = self.spool.path, None
            return
        if not self._to_log(
            lambda con: record_end(con, self.run.id, ended.status, ended.ended_at, ended.updated_at, ended.metadata),
            self.store.lock_timeout,
        ):
            self._to_spool(ended, self.events)
        if self.spool is not None:
            self.spool.close()
            print(spool_notice(self.run.id, self.store.path, self.problem, self.spool.events, self.spool.first_seq,
                               self.spool.path), file=sys.stderr, flush=True)

    def settle(self, background: bool) -> None:
        """Store the run that ended deferring: here, or in a background process."""
        from plugins.eventlog.handover import hand_over, store_deferred

        path, self.unsettled = self.unsettled, None
        if path is None:
            return
        if not background or not hand_over(self.store, path):
            store_deferred(self.store, path, self.run.id)

    # -- the log or the spool ---------------------------------------------------------------

    def _to_log(self, action: Callable[[Any], None], wait: float | None = None) -> bool:
        """Do ``action`` on the log, after ingesting what is pending; False when the log
        cannot be written now. Waits for a busy log up to ``wait`` seconds: by default
        ``eventlog.lock-timeout``, and no longer than a flush interval while spooling (each
        batch is then stored within about one flush interval, in the spool)."""
        import duckdb

        if wait is None:
            wait = self.store.lock_timeout
            if self.spool is not None:
                wait = min(wait, self.run.bus.flush_interval)
        try:
            with self.store.write(wait) as con:
                if self.spool is not None:
                    self._ingest_own_spool(con)
                elif not self._registered:
                    self._ingest_others(con)
                action(con)
            return True
        except SchemaConflict:
            raise
        except (EventLogError, OSError, duckdb.Error) as exc:
            self._stored = None  # a rolled-back transaction may have created tables
            self.problem = reason(exc)
            return False

    def _ingest_own_spool(self, con: Any) -> None:
        from plugins.eventlog.ingest import ingest_spool  # loaded when the log is written, not by a deferred run

        assert self.spool is not None
        ingest_spool(con, self.spool.path)
        remove_spool(self.spool.path)
        self.spool.close()
        self.spool = None
        self.deferring = False
        self._registered = True
        self._stored = None

    def _ingest_others(self, con: Any) -> None:
        from plugins.eventlog.ingest import announce_ingested, ingest_pending

        announce_ingested(ingest_pending(con, self.store.path))

    def _to_spool(self, frame: Frame, first_seq: int, deferred: bool = False) -> None:
        try:
            if self.spool is None:
                opened = SpoolOpened(
                    log=str(absolute(self.store.path)), run_id=self.run.id, created_ns=time.time_ns(),
                    run=self._run_row(), tables=self._all_tables(),
                )
                self.spool = SpoolWriter.create(self.store.path, opened, first_seq, deferred)
                self.deferring = deferred
            elif self.deferring and not deferred:  # the log was tried and cannot be written
                self.spool.announce()
                self.deferring = False
            self.spool.append(frame)
        except (EventLogError, OSError) as exc:
            raise EventLogError(
                f"run {self.run.id}: event log {self.store.path} cannot be written ({self.problem}) and its events "
                f"cannot be spooled ({exc}): events from seq {first_seq} on are lost"
            ) from None
