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
from typing import Any

from kernel.errors import UsageError
from replay.views import VIEWS, event_tables


def write_parquet(con: Any, base: str, run_id: str | None, views: bool = True) -> int:
    """Write one run (every run when ``run_id`` is None) under ``base``; returns the number of
    files. ``views`` needs the views created on ``con``."""
    where = "" if run_id is None else f" WHERE run_id = '{run_id}'"
    os.makedirs(os.path.join(base, "events"), exist_ok=True)
    files = 0
    for kind in sorted(event_tables(con)):
        (count,) = con.execute(f"SELECT count(*) FROM rill.ev_{kind}{where}").fetchone()
        if count:
            _copy(con, f"SELECT * FROM rill.ev_{kind}{where} ORDER BY seq", os.path.join(base, "events", f"{kind}.parquet"))
            files += 1
    if views:
        os.makedirs(os.path.join(base, "views"), exist_ok=True)
        for view in VIEWS:
            _copy(con, f"SELECT * FROM {view}{where}", os.path.join(base, "views", f"{view}.parquet"))
            files += 1
    _copy(con, f"SELECT * FROM rill.runs{where}", os.path.join(base, "run.parquet"))
    return files + 1


def _copy(con: Any, query: str, path: str) -> None:
    target = path.replace("'", "''")
    try:
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT PARQUET)")
    except Exception as exc:
        raise UsageError(f"cannot write {path}: {str(exc).splitlines()[0]}") from None


def run_prefix(directory: str) -> str:
    """The glob prefix of the runs in an export directory (``DIR/*`` or ``DIR`` for one run)."""
    return directory if os.path.exists(os.path.join(directory, "run.parquet")) else os.path.join(directory, "*")


def exported_tables(directory: str) -> dict[str, str]:
    """Table name (``runs``, ``ev_<kind>``) -> glob of its Parquet files in a local export."""
    if not os.path.isdir(directory):
        raise UsageError(f"no directory {directory!r} (write one with `rill export RUN... --parquet DIR`)")
    prefix = run_prefix(directory)
    if not glob.glob(os.path.join(prefix, "run.parquet")):
        raise UsageError(f"{directory!r} holds no exported run (no run.parquet; write one with "
                         "`rill export RUN... --parquet DIR`)")
    tables = {"runs": os.path.join(prefix, "run.parquet")}
    for path in sorted(glob.glob(os.path.join(prefix, "events", "*.parquet"))):
        kind = os.path.basename(path)[: -len(".parquet")]
        tables[f"ev_{kind}"] = os.path.join(prefix, "events", f"{kind}.parquet")
    return tables


def attach_export(con: Any, directory: str, types: dict[str, type]) -> None:
    """The tables of a local export on a DuckDB connection, as the event log has them: views
    ``rill.runs``, ``rill.ev_<kind>`` and ``rill.events`` over its Parquet files (an empty
    ``rill.ev_<kind>`` for each event type of ``types``, tag -> type, the export has no file of),
    ``rill`` first on the search path (names read unqualified too)."""
    from replay.views import empty_relation

    con.execute("CREATE SCHEMA rill")
    tables = exported_tables(directory)
    for table, pattern in tables.items():
        path = pattern.replace("'", "''")
        con.execute(f"CREATE VIEW rill.{table} AS SELECT * FROM read_parquet('{path}', union_by_name = true)")
    for tag in sorted(set(types) - {table[3:] for table in tables}):
        con.execute(f"CREATE VIEW rill.ev_{tag} AS SELECT * FROM {empty_relation(tag, types)}")
    columns: dict[str, list[str]] = {}
    for table, column in con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'rill' "
            "AND starts_with(table_name, 'ev_') ORDER BY table_name, ordinal_position").fetchall():
        columns.setdefault(table, []).append(column)
    parts = []
    for table, names in columns.items():
        fields = [name for name in names if name not in ("run_id", "seq", "time")]
        packed = ", ".join(f'"{name}" := "{name}"' for name in fields)
        payload = f"to_json(struct_pack({packed}))" if fields else "'{}'::JSON"
        parts.append(f"SELECT run_id, seq, time, '{table[3:]}' AS kind, {payload} AS payload FROM rill.{table}")
    empty = ("SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS seq, NULL::BIGINT AS time, NULL::VARCHAR AS kind, "
             "NULL::JSON AS payload WHERE false")
    con.execute("CREATE VIEW rill.events AS " + (" UNION ALL ".join(parts) or empty))
    con.execute("SET search_path = 'memory.rill,memory.main'")
