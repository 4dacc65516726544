"""Ingesting segments into the event log: in order, exactly once, without a gap.

A segment is ingested in one transaction (its run's ``runs`` row, every batch the log does not
have yet, the run's end) and then kept (``kept/``, for ``eventlog.retention``) once that
transaction committed; a run's writer ingests its own segment as it goes, from where it got to
(:func:`ingest_from`). A batch is skipped when the run's ``runs.events`` already counts it
(``events_total`` ≤ ``events``), and stored only right after the events the log has
(``first_seq`` = ``events``): a segment ingested again after a crash between the commit and
its move changes nothing, and one whose earlier events are in no readable segment stops at
the gap instead of leaving a hole in the run.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from kernel.errors import EventLogError
from kernel.eventtables import SCHEMA
from plugins.eventlog.damage import damage_in, reason
from plugins.eventlog.migrations import SchemaConflict, stored_columns, sync_event_table
from plugins.eventlog.runs import record_end, record_progress, register_run
from plugins.eventlog.schema import to_arrow
from plugins.eventlog.spool import (
    BatchSpooled,
    Frame,
    RunClosed,
    SpoolOpened,
    SpoolRead,
    absolute,
    expire_kept,
    is_announced,
    keep,
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
    events: int  # events this segment added
    spool: Path

    @property
    def announced(self) -> bool:
        """From a segment whose run said its log could not be written (news to the user)."""
        return is_announced(self.spool)


@dataclass
class Recovery:
    """What one recovery ingested, which segments it left (and why), and what stopped it."""

    log: Path
    ingested: list[IngestedRun] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    #: segments that could not be ingested at all (a subset of ``left``)
    failed: list[str] = field(default_factory=list)
    #: why the log could not take the segments (the recovery stopped there), "" if it could
    failure: str = ""

    @property
    def events(self) -> int:
        return sum(run.events for run in self.ingested)

    @property
    def runs(self) -> int:
        return len({run.run_id for run in self.ingested})

    @property
    def problems(self) -> list[str]:
        """Segments left for another reason than their run still writing them."""
        return [problem for problem in self.left if not problem.endswith(STILL_WRITING)]


STILL_WRITING = ": its run is still writing it"


def announce_ingested(recovery: Recovery) -> None:
    """Say on stderr what was recovered of runs that could not write the log (runs reaching it
    from their segments as usual are no news)."""
    announced = Recovery(recovery.log, [run for run in recovery.ingested if run.announced])
    if announced.ingested:
        print(f"rill: ingested {announced.runs} spooled run(s), {announced.events:,} events, into {recovery.log}",
              file=sys.stderr, flush=True)


def insert_batch(con: Any, run_id: str, batch: BatchSpooled, stored: dict[str, dict[str, str]]) -> None:
    """Insert the rows of a batch (in the caller's transaction)."""
    for rows in batch.tables:
        sync_event_table(con, rows.table, stored)
        con.register("rill_batch", to_arrow(rows.table, rows.columns))
        con.execute(
            f"INSERT INTO {rows.table.qualified} BY NAME SELECT ?::VARCHAR AS run_id, * FROM rill_batch", [run_id]
        )
        con.unregister("rill_batch")


@dataclass
class Applied:
    added: int = 0  # events stored
    status: str = ""  # the run's status in the log afterwards
    gap: str = ""  # why the frames stopped being stored: events missing before them


def apply_frames(con: Any, opened: SpoolOpened, frames: Iterable[Frame], stored: dict[str, dict[str, str]]) -> Applied:
    """Store a run's frames that the log does not have (in the caller's transaction)."""
    run_id = opened.run_id
    # fetchall: a result left unfinished keeps ``register`` below from running
    present = con.execute(f"SELECT events FROM {SCHEMA}.runs WHERE run_id = ?", [run_id]).fetchall()
    if not present:
        register_run(con, opened.run, opened.created_ns // 1000, replace=False)
    have = (present[0][0] or 0) if present else 0
    for spec in opened.tables:
        sync_event_table(con, spec, stored)
    applied = Applied()
    last: BatchSpooled | None = None
    for frame in frames:
        if isinstance(frame, RunClosed):
            record_end(con, run_id, frame.status, frame.ended_at, frame.updated_at, frame.metadata)
            continue
        if not isinstance(frame, BatchSpooled) or frame.events_total <= have:
            continue  # already in the log
        if frame.first_seq != have:
            applied.gap = f"events from seq {have} to {frame.first_seq - 1} are in no segment ingested before it"
            break
        insert_batch(con, run_id, frame, stored)
        applied.added += frame.count
        have = frame.events_total
        last = frame
    if last is not None:
        record_progress(con, run_id, last.events_total, last.updated_at, last.clock_start, last.clock_end)
    ((applied.status,),) = con.execute(f"SELECT status FROM {SCHEMA}.runs WHERE run_id = ?", [run_id]).fetchall()
    return applied


def transaction(con: Any, work: Callable[[], Any]) -> Any:
    """``work()`` in one transaction, rolled back if it raises (its error, not the rollback's, is raised)."""
    con.execute("BEGIN TRANSACTION")
    try:
        result = work()
        con.execute("COMMIT")
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except Exception:  # the failed statement ended the transaction (or invalidated the database)
            pass
        raise
    return result


def ingest_from(con: Any, opened: SpoolOpened, path: Path, start: int, stored: dict[str, dict[str, str]]) -> int:
    """Store the frames of a segment from byte ``start`` on, in one transaction (a run's writer
    storing its own segment as it goes); returns where the frames it stored end."""
    result = SpoolRead(opened)
    frames = list(read_frames(path, result, start))
    if result.problem:
        raise EventLogError(f"segment {path}: {result.problem}")
    applied = transaction(con, lambda: apply_frames(con, opened, frames, stored))
    if applied.gap:
        raise EventLogError(f"segment {path}: {applied.gap}")
    return result.offset


def ingest_spool(con: Any, path: Path, stored: dict[str, dict[str, str]] | None = None) -> tuple[IngestedRun, str]:
    """Ingest one segment through a write connection, in one transaction. Returns the run and
    a problem found in the file or the run ("" if none); the caller keeps or renames the file."""
    stored = stored_columns(con) if stored is None else stored
    result = SpoolRead(None)
    frames = read_frames(path, result)
    opened = next(frames, None)
    if not isinstance(opened, SpoolOpened):
        raise ValueError(f"segment {path} has no readable header")
    applied = transaction(con, lambda: apply_frames(con, opened, frames, stored))
    problem = applied.gap or result.problem
    return IngestedRun(opened.run_id, opened.run.job_name, applied.status, applied.added, path), problem


def ingest_pending(con: Any, log: Path, retention: float) -> Recovery:
    """Ingest every complete segment of ``log`` (oldest first) through ``con``, an exclusive
    write connection to it, keeping each for ``retention`` seconds. Segments still written by
    their run are left; one that cannot be ingested is left and named; a damaged log stops the
    recovery (its error is raised), as does one that cannot take them (``failure``)."""
    import duckdb

    recovery = Recovery(log)
    ready = []
    for path in pending_spools(log):
        fd = lock_spool(path)
        if fd is None:
            if path.exists():
                recovery.left.append(f"{path}{STILL_WRITING}")
            continue
        opened = read_opened(path)
        if opened is None and os.fstat(fd).st_size == 0:
            remove_spool(path)  # created by a run killed before it wrote anything into it
            os.close(fd)
        elif opened is None:
            os.close(fd)
            recovery.left.append(f"{path}: its first frame cannot be read")
            recovery.failed.append(str(path))
        elif absolute(Path(opened.log)) != absolute(log):
            os.close(fd)
            recovery.left.append(f"{path}: a segment of another event log, {opened.log}")
        else:
            ready.append((opened.created_ns, str(path), path, fd))
    stored = stored_columns(con)
    try:
        for _, _, path, fd in sorted(ready, key=lambda item: item[:2]):
            try:
                run, problem = ingest_spool(con, path, stored)
            except SchemaConflict:
                raise
            except duckdb.Error as exc:
                if damage_in(exc):
                    raise
                recovery.failure = reason(exc)  # the log cannot take it: nor the next ones
                break
            except Exception as exc:
                if damage_in(exc):
                    raise
                recovery.left.append(f"{path}: cannot be ingested: {reason(exc)}")
                recovery.failed.append(str(path))
                stored = stored_columns(con)  # forget tables the rolled-back transaction created
                continue
            recovery.ingested.append(run)
            try:
                if problem:
                    os.replace(path, path.with_name(path.name + ".unreadable"))
                    recovery.left.append(f"{path}: ingested up to where {problem} (kept as {path.name}.unreadable)")
                else:
                    keep(path, retention)
            except OSError as exc:  # ingested all the same: the next ingest finds nothing new in it
                recovery.left.append(f"{path}: ingested, but it cannot be moved: {reason(exc)}")
    finally:
        for *_, fd in ready:
            os.close(fd)
    expire_kept(log, retention)
    return recovery
