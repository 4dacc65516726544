"""The ``runs`` row of a run: what the writer records when a run starts, progresses and ends.

The same statements serve the DuckDB writer and the ingest of spooled runs, so a run that
reached the log through a spool has exactly the row it would have had.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import msgspec

from kernel.eventtables import SCHEMA

if TYPE_CHECKING:
    from kernel.lifecycle.run import Run


def micros(epoch_seconds: float | None) -> int | None:
    return None if epoch_seconds is None else int(epoch_seconds * 1_000_000)


def now_micros() -> int:
    return int(time.time() * 1_000_000)


class RunRow(msgspec.Struct, frozen=True, kw_only=True):
    """What the ``runs`` row holds from a run's start (times in µs since the epoch)."""

    run_id: str
    job_name: str
    clock: str
    seed: int
    config: str  # JSON
    plugins: str  # JSON
    rill_version: str
    started_at: int | None
    pid: int
    pid_start: int | None
    host: str
    metadata: str  # JSON


def run_row(run: Run, pid_start: int | None) -> RunRow:
    info = run.info()
    return RunRow(
        run_id=info["run_id"], job_name=info["job_name"], clock=info["clock"], seed=info["seed"],
        config=json.dumps(info["config"], default=str), plugins=json.dumps(info["plugins"]),
        rill_version=info["rill_version"], started_at=micros(info["started_at"]), pid=info["pid"],
        pid_start=pid_start, host=info["host"], metadata=json.dumps(info["metadata"], default=str),
    )


def register_run(con: Any, row: RunRow, updated_at: int, replace: bool = True) -> None:
    """Insert the run's row with status ``running`` (``replace=False``: keep a row already there)."""
    verb = "INSERT OR REPLACE INTO" if replace else "INSERT INTO"
    conflict = "" if replace else " ON CONFLICT DO NOTHING"
    con.execute(
        f"""{verb} {SCHEMA}.runs (run_id, job_name, status, clock, seed, config, plugins, rill_version,
            started_at, updated_at, pid, pid_start, host, events, metadata)
            VALUES (?, ?, 'running', ?, ?, ?, ?, ?, make_timestamp(?), make_timestamp(?), ?, ?, ?, 0, ?){conflict}""",
        [
            row.run_id, row.job_name, row.clock, row.seed, row.config, row.plugins, row.rill_version,
            row.started_at, updated_at, row.pid, row.pid_start, row.host, row.metadata,
        ],
    )


def record_progress(
    con: Any, run_id: str, events: int, updated_at: int, clock_start: int | None, clock_end: int | None
) -> None:
    """The run's event count (all events so far) and clock range after a batch."""
    con.execute(
        f"""UPDATE {SCHEMA}.runs SET events = ?, updated_at = make_timestamp(?), clock_start = ?,
            clock_end = ? WHERE run_id = ?""",
        [events, updated_at, clock_start, clock_end, run_id],
    )


def record_end(con: Any, run_id: str, status: str, ended_at: int | None, updated_at: int, metadata: str) -> None:
    con.execute(
        f"""UPDATE {SCHEMA}.runs SET status = ?, ended_at = make_timestamp(?), updated_at = make_timestamp(?),
            metadata = ? WHERE run_id = ?""",
        [status, ended_at, updated_at, metadata, run_id],
    )
