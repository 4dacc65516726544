"""Recorded runs as Parquet files: what ``rill export`` writes and ``rill sql --parquet`` reads.

Layout of an export directory (one subdirectory per run)::

    DIR/<run>/run.parquet                the run's row of rill.runs
    DIR/<run>/events/<kind>.parquet      the run's events of each kind (rows of rill.ev_<kind>)
    DIR/<run>/views/<view>.parquet       the run's rows of each view

A directory holding ``run.parquet`` itself is read as one exported run.
"""

from __future__ import annotations

import glob
import os
import re
from typing import TYPE_CHECKING, Any, Iterable

from kernel.errors import UsageError
from replay.views import event_tables

if TYPE_CHECKING:
    from kernel.lifecycle.session import Session

KIND = re.compile(r"[a-z0-9_]+")


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


def export_log(session: Session, directory: str) -> None:
    """Every recorded run of the session's event log under ``directory``, without the views
    (what an SQL engine that reads only Parquet reads instead of the log)."""
    from replay.store import read_log

    with read_log(session) as con:
        write_parquet(con, directory, None)


def _copy(con: Any, query: str, path: str) -> None:
    target = path.replace("'", "''")
    try:
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT PARQUET)")
    except Exception as exc:
        raise UsageError(f"cannot write {path}: {str(exc).splitlines()[0]}") from None


def run_prefix(directory: str) -> str:
    """The glob prefix of the runs in an export directory (``DIR/*`` or ``DIR`` for one run)."""
    escaped = glob.escape(directory)
    return escaped if os.path.exists(os.path.join(directory, "run.parquet")) else os.path.join(escaped, "*")


def exported_tables(directory: str) -> dict[str, list[str]]:
    """Table name (``runs``, ``ev_<kind>``) -> its Parquet files in a local export, resolved;
    a file that leads outside the directory (a symbolic link) is refused."""
    if not os.path.isdir(directory):
        raise UsageError(f"no directory {directory!r} (write one with `rill export RUN... --parquet DIR`)")
    root = os.path.realpath(directory)
    prefix = run_prefix(root)
    runs = sorted(glob.glob(os.path.join(prefix, "run.parquet")))
    if not runs:
        raise UsageError(f"{directory!r} holds no exported run (no run.parquet; write one with "
                         "`rill export RUN... --parquet DIR`)")
    tables = {"runs": runs}
    for path in sorted(glob.glob(os.path.join(prefix, "events", "*.parquet"))):
        kind = os.path.basename(path)[: -len(".parquet")]
        if not KIND.fullmatch(kind):
            raise UsageError(f"{path}: not an event file of `rill export` (names are [a-z0-9_]+.parquet)")
        tables.setdefault(f"ev_{kind}", []).append(path)
    return {table: [_inside(root, path) for path in paths] for table, paths in tables.items()}


def _inside(root: str, path: str) -> str:
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        raise UsageError(f"{path} leads outside {root} (a symbolic link?); only the export directory is read")
    return real
