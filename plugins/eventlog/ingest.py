"""Ingesting spooled runs into the event log: in order, exactly once.

Each spool file is ingested in one transaction (its run's ``runs`` row, every batch, the
run's end), and removed once that transaction committed; a deferred spool of a run storing
its own events is replayed as the run's writer would have written it
(:func:`plugins.eventlog.handover.replay_spool`).
A batch is skipped when the run's ``runs.events`` already counts it (``events_total`` of the
batch ≤ ``events``): a spool ingested again after a crash between the commit and the removal
changes nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.eventtables import SCHEMA
from plugins.eventlog.damage import damage_in
from plugins.eventlog.migrations import stored_columns, sync_event_table
from plugins.eventlog.runs import record_end, record_progress, register_run
from plugins.eventlog.schema import to_arrow
from plugins.eventlog.spool import (
    BatchSpooled,
    RunClosed,
    SpoolOpened,
    SpoolRead,
    absolute,
    is_deferred,
    lock_spool,
    pending_spools,
    read_frames,
    read_opened,
    remove_spool,
)


@dataclass
class IngestedRun:
    run_id: str
    job_name: str
    status: str  # the run's status in the log afterwards
    events: int  # events this spool added
    spool: Path

    @property
    def deferred(self) -> bool:
        """From a deferred spool (a run that put off the log, not one that could not write it)."""
        return is_deferred(self.spool)


@dataclass
class Recovery:
    """What one recovery ingested, and which spools it left (and why)."""

    log: Path
    ingested: list[IngestedRun] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    @property
    def events(self) -> int:
        return sum(run.events for run in self.ingested)

    @property
    def runs(self) -> int:
        return len({run.run_id for run in self.ingested})


def announce_ingested(recovery: Recovery) -> None:
    """Say on stderr what was recovered of runs that could not write the log (deferred runs
    reaching it are no news)."""
    announced = Recovery(recovery.log, [run for run in recovery.ingested if not run.deferred])
    if announced.ingested:
        print(f"rill: ingested {announced.runs} spooled run(s), {announced.events:,} events, into {recovery.log}",
              file=sys.stderr, flush=True)


def insert_batch(con: Any, run_id: str, batch: BatchSpooled, stored: dict[str, dict[str, str]]) -> None:
    """Insert the rows of a spooled batch (in the caller's transaction)."""
    for rows in batch.tables:
        sync_event_table(con, rows.table, stored)
        con.register("rill_batch", to_arrow(rows.table, rows.columns))
        con.execute(
            f"INSERT INTO {rows.table.qualified} BY NAME SELECT ?::VARCHAR AS run_id, * FROM rill_batch", [run_id]
        )
        con.unregister("rill_batch")


def ingest_spool(con: Any, path: Path, stored: dict[str, dict[str, str]] | None = None) -> tuple[IngestedRun, str]:
    """Ingest one spool file through a write connection, in one transaction. Returns the
    run and a problem found in the file ("" if none); the caller removes the file."""
    stored = stored_columns(con) if stored is None else stored
    result = SpoolRead(None)
    frames = read_frames(path, result)
    opened = next(frames, None)
    if not isinstance(opened, SpoolOpened):
        raise ValueError(f"spool {path} has no readable header")
    run_id = opened.run_id
    added = 0
    con.execute("BEGIN TRANSACTION")
    try:
        # fetchall: a result left unfinished keeps ``register`` below from running
        present = con.execute(f"SELECT events FROM {SCHEMA}.runs WHERE run_id = ?", [run_id]).fetchall()
        if not present:
            register_run(con, opened.run, opened.created_ns // 1000, replace=False)
        present_events = (present[0][0] or 0) if present else 0
        for spec in opened.tables:
            sync_event_table(con, spec, stored)
        last: BatchSpooled | None = None
        closed: RunClosed | None = None
        for frame in frames:
            if isinstance(frame, RunClosed):
                closed = frame
            if not isinstance(frame, BatchSpooled) or frame.events_total <= present_events:
                continue  # already in the log
            insert_batch(con, run_id, frame, stored)
            added += frame.count
            last = frame
        if last is not None:
            record_progress(con, run_id, last.events_total, last.updated_at, last.clock_start, last.clock_end)
        if closed is not None:
            record_end(con, run_id, closed.status, closed.ended_at, closed.updated_at, closed.metadata)
        ((status,),) = con.execute(f"SELECT status FROM {SCHEMA}.runs WHERE run_id = ?", [run_id]).fetchall()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return IngestedRun(run_id, opened.run.job_name, status, added, path), result.problem


def ingest_pending(con: Any, log: Path) -> Recovery:
    """Ingest every complete spool of ``log`` (oldest first) through ``con``, an exclusive
    write connection to it. Spools still written by their run are left; a spool that cannot
    be ingested is left and named; a damaged log stops the recovery (its error is raised)."""
    recovery = Recovery(log)
    ready = []
    for path in pending_spools(log):
        fd = lock_spool(path)
        if fd is None:
            if path.exists():
                recovery.left.append(f"{path}: its run is still writing it")
            continue
        opened = read_opened(path)
        if opened is None and os.fstat(fd).st_size == 0:
            remove_spool(path)  # created by a run killed before it wrote anything into it
            os.close(fd)
        elif opened is None:
            os.close(fd)
            recovery.left.append(f"{path}: its first frame cannot be read")
        elif absolute(Path(opened.log)) != absolute(log):
            os.close(fd)
            recovery.left.append(f"{path}: a spool of another event log, {opened.log}")
        else:
            ready.append((opened.created_ns, str(path), path, fd))
    stored = stored_columns(con)
    try:
        for _, _, path, fd in sorted(ready, key=lambda item: item[:2]):
            try:
                run, problem = ingest_spool(con, path, stored)
            except Exception as exc:
                if damage_in(exc):
                    raise
                recovery.left.append(f"{path}: cannot be ingested: {exc}")
                stored = stored_columns(con)  # forget tables the rolled-back transaction created
                continue
            if problem:
                os.replace(path, path.with_name(path.name + ".unreadable"))
                recovery.left.append(f"{path}: ingested up to where {problem} (kept as {path.name}.unreadable)")
            else:
                remove_spool(path)
            recovery.ingested.append(run)
    finally:
        for *_, fd in ready:
            os.close(fd)
    return recovery
