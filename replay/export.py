"""Recorded runs as Parquet files: what ``rill export`` writes (and ``rill sql --parquet`` reads,
:mod:`replay.exported`).

Layout of an export directory (one subdirectory per run)::

    DIR/<run>/run.parquet                the run's row of rill.runs
    DIR/<run>/events/<kind>.parquet      the run's events of each kind (rows of rill.ev_<kind>)
    DIR/<run>/views/<view>.parquet       the run's rows of each view

A directory holding ``run.parquet`` itself is read as one exported run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable

from kernel.errors import UsageError
from replay.views import event_tables

if TYPE_CHECKING:
    from kernel.lifecycle.session import Session
    from kernel.sqlbounds import QueryBounds


def write_parquet(con: Any, base: str, run_id: str | None, views: Iterable[str] = ()) -> int:
    """Write one run (every run when ``run_id`` is None) under ``base``, with the rows of the
    ``views`` created on ``con``; returns the number of files."""
    where = "" if run_id is None else f" WHERE run_id = '{run_id}'"
    os.makedirs(os.path.join(base, "events"), exist_ok=True)
    files = 0
    for kind in sorted(event_tables(con)):
        (count,) = con.execute(f"SELECT count(*) FROM rill.ev_{kind}{where}").fetchone()
        if count:
            _copy(con, f"SELECT * FROM rill.ev_{kind}{where} ORDER BY seq", os.path.join(base, "events", f"{kind}.parquet"))
            files += 1
    views = list(views)
    if views:
        os.makedirs(os.path.join(base, "views"), exist_ok=True)
        for view in views:
            _copy(con, f"SELECT * FROM {view}{where}", os.path.join(base, "views", f"{view}.parquet"))
            files += 1
    _copy(con, f"SELECT * FROM rill.runs{where}", os.path.join(base, "run.parquet"))
    return files + 1


def export_log(session: Session, directory: str, bounds: QueryBounds) -> None:
    """Every recorded run of the session's event log under ``directory``, without the views
    (what an SQL engine that reads only Parquet reads instead of the log), within the bounds of
    the query it is for."""
    from replay.bounds import bounded, limit_memory
    from replay.store import read_log

    with read_log(session) as con:
        limit_memory(con, bounds.memory_bytes)
        with bounded(con, bounds):
            write_parquet(con, directory, None)


def _copy(con: Any, query: str, path: str) -> None:
    import duckdb

    target = path.replace("'", "''")
    try:
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT PARQUET)")
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except Exception as exc:
        raise UsageError(f"cannot write {path}: {str(exc).splitlines()[0]}") from None
