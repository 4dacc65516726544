"""Storing a run that ended while deferring its event log (see :mod:`plugins.eventlog.writer`).

Its events wait, complete and durable, in its deferred spool. They are stored — with every
other spool of the log that is ready — either where the run's events are waited for
(:func:`store_deferred`, from the event bus's ``settle``), or, when the run's process exits, by
a background process (:func:`hand_over`) that keeps the exiting process's stderr, so what it
has to say reaches the same place (and whoever reads that stream to its end waits for it).
Readers never miss the run: they ingest pending spools first, waiting for a background
process that holds the log. When the log cannot be written the spool is announced: renamed
to its plain name, with the warning a run gives when its log cannot be written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kernel.errors import EventLogError
from kernel.eventtables import SCHEMA
from plugins.eventlog.damage import reason
from plugins.eventlog.migrations import SchemaConflict, stored_columns, sync_event_table
from plugins.eventlog.runs import record_end, record_progress, register_run
from plugins.eventlog.spool import (BatchSpooled, RunClosed, SpoolOpened, announce, lock_spool, read_frames,
                                    remove_spool, spool_notice, spooled_events)
from plugins.eventlog.store import COMMAND_WAIT, EventStore

#: the directory holding the ``plugins`` package (the background process imports it from there)
_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def store_deferred(store: EventStore, spool: Path, run_id: str) -> None:
    """Store the deferred spool (and the log's other ready spools) in the log, waiting for it
    as long as a command does (nothing is held up meanwhile but whoever waits for the events);
    announce the spool when the log cannot be written."""
    import duckdb

    try:
        replay_spool(store, spool, COMMAND_WAIT)
        return
    except SchemaConflict:
        raise
    except (EventLogError, OSError, duckdb.Error) as exc:
        problem = reason(exc)
    if not spool.exists():
        return
    events, first_seq = spooled_events(spool)
    announced = announce(spool)
    print(spool_notice(run_id, store.path, problem, events, first_seq, announced), file=sys.stderr, flush=True)


def replay_spool(store: EventStore, path: Path, timeout: float) -> bool:
    """Store a deferred spool as its run's writer would have: the log's other ready spools and
    the first batch in one write, each further batch in its own, then the run's end — so the
    log is the file the run would have left — holding the log throughout (a reader waits and
    then sees the whole run), and exactly once (batches the log counts are skipped). False
    when the spool is not there to be stored (another command has it). Waits up to
    ``timeout`` seconds for the log, and takes the spool only once it holds the log: a spool
    taken while its storer waited would look to a reader holding the log like one its run is
    still writing, and the reader would read the log without the run."""
    from plugins.eventlog.ingest import announce_ingested, ingest_pending, insert_batch

    with store.write_sessions(timeout) as session:
        fd = lock_spool(path)
        if fd is None:
            return False
        try:
            frames = list(read_frames(path))
            opened = frames[0] if frames and isinstance(frames[0], SpoolOpened) else None
            if opened is None:
                raise ValueError(f"spool {path} has no readable header")
            run_id = opened.run_id
            batches = [frame for frame in frames if isinstance(frame, BatchSpooled)]
            closed = next((frame for frame in frames if isinstance(frame, RunClosed)), None)
            for index, batch in enumerate(batches):
                with session() as con:
                    if index == 0:
                        announce_ingested(ingest_pending(con, store.path))
                    stored = stored_columns(con)
                    present = con.execute(f"SELECT events FROM {SCHEMA}.runs WHERE run_id = ?", [run_id]).fetchall()
                    con.execute("BEGIN TRANSACTION")
                    if not present:
                        register_run(con, opened.run, batch.updated_at)
                        for spec in opened.tables:
                            sync_event_table(con, spec, stored)
                    if batch.events_total > ((present[0][0] or 0) if present else 0):
                        insert_batch(con, run_id, batch, stored)
                        record_progress(con, run_id, batch.events_total, batch.updated_at, batch.clock_start,
                                        batch.clock_end)
                    con.execute("COMMIT")
            if closed is not None:
                with session() as con:
                    record_end(con, run_id, closed.status, closed.ended_at, closed.updated_at, closed.metadata)
            remove_spool(path)
        finally:
            os.close(fd)
    return True


def hand_over(store: EventStore, spool: Path) -> bool:
    """Start a background process storing the deferred spool; False if it could not start."""
    request = json.dumps({"log": str(store.path), "lock_timeout": store.lock_timeout, "spool": str(spool),
                          "run_id": spool.name.split("-", 1)[0]})
    code = f"import sys; sys.path.insert(0, {_ROOT!r}); from plugins.eventlog.handover import main; main()"
    try:
        process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   start_new_session=True)
        process.stdin.write(request.encode())
        process.stdin.close()
    except OSError:
        return False
    return True


def main() -> None:
    """The background process: store the deferred spool the request on stdin names."""
    request = json.loads(sys.stdin.read())
    store = EventStore(request["log"], lock_timeout=request["lock_timeout"])
    try:
        store_deferred(store, Path(request["spool"]), request["run_id"])
    except Exception as exc:
        print(f"rill: warning: run {request['run_id']}: its events wait in {request['spool']}: {exc}",
              file=sys.stderr, flush=True)
        raise SystemExit(1) from None
