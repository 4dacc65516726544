"""The event observer that stores batches in the DuckDB event log.

Runs on the event bus's flusher thread: the conversion to Arrow columns and the insert never
touch the runtime's thread. Each batch is one transaction, so a crash leaves whole batches.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from kernel.eventbus import EventBatch
from plugins.eventlog.migrations import stored_columns, sync_event_table
from plugins.eventlog.schema import SCHEMA, EventTable, group_by_type, table_for, to_arrow
from plugins.eventlog.store import EventStore, process_start

if TYPE_CHECKING:
    from kernel.run import Run


def _micros(epoch_seconds: float | None) -> int | None:
    return None if epoch_seconds is None else int(epoch_seconds * 1_000_000)


class DuckDBEventWriter:
    def __init__(self, store: EventStore, run: Run) -> None:
        self.store = store
        self.run = run
        self.events = 0
        self._tables: dict[type, EventTable] = {}
        self._stored: dict[str, dict[str, str]] | None = None
        self._registered = False
        self._clock_start: int | None = None
        self._clock_end: int | None = None

    def _table(self, event_type: type) -> EventTable:
        table = self._tables.get(event_type)
        if table is None:
            table = self._tables[event_type] = table_for(event_type)
        return table

    def _register_run(self, con) -> None:
        info = self.run.info()
        con.execute(
            f"""INSERT OR REPLACE INTO {SCHEMA}.runs (run_id, job_name, status, clock, seed, config, plugins,
                rill_version, started_at, updated_at, pid, pid_start, host, events, metadata)
                VALUES (?, ?, 'running', ?, ?, ?, ?, ?, make_timestamp(?), make_timestamp(?), ?, ?, ?, 0, ?)""",
            [
                info["run_id"], info["job_name"], info["clock"], info["seed"],
                json.dumps(info["config"], default=str), json.dumps(info["plugins"]), info["rill_version"],
                _micros(info["started_at"]), _micros(time.time()), info["pid"], process_start(info["pid"]),
                info["host"], json.dumps(info["metadata"], default=str),
            ],
        )
        self._registered = True

    def events_emitted(self, batch: EventBatch) -> None:
        converted = [(self._table(kind), events) for kind, events in group_by_type(batch.events).items()]
        converted = [(table, to_arrow(table, events)) for table, events in converted]
        if self._clock_start is None:
            self._clock_start = batch.events[0].time
        self._clock_end = max(self._clock_end or batch.events[-1].time, batch.events[-1].time)
        with self.store.write() as con:
            if self._stored is None:
                self._stored = stored_columns(con)
            con.execute("BEGIN TRANSACTION")
            if not self._registered:
                self._register_run(con)
                for event_type in self.run.session.events.types():  # every table a view may read exists
                    sync_event_table(con, self._table(event_type), self._stored)
            for table, data in converted:
                sync_event_table(con, table, self._stored)
                con.register("rill_batch", data)
                con.execute(
                    f"INSERT INTO {table.qualified} BY NAME SELECT ?::VARCHAR AS run_id, * FROM rill_batch",
                    [batch.run_id],
                )
                con.unregister("rill_batch")
            self.events += len(batch.events)
            con.execute(
                f"""UPDATE {SCHEMA}.runs SET events = ?, updated_at = make_timestamp(?), clock_start = ?,
                    clock_end = ? WHERE run_id = ?""",
                [self.events, _micros(time.time()), self._clock_start, self._clock_end, batch.run_id],
            )
            con.execute("COMMIT")

    def close(self, status: str) -> None:
        if not self._registered:
            return
        with self.store.write() as con:
            con.execute(
                f"""UPDATE {SCHEMA}.runs SET status = ?, ended_at = make_timestamp(?), updated_at = make_timestamp(?),
                    metadata = ? WHERE run_id = ?""",
                [
                    status, _micros(self.run.ended_at), _micros(time.time()),
                    json.dumps(self.run.metadata, default=str), self.run.id,
                ],
            )
