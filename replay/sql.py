"""``rill sql`` on DuckDB: one query over the event log, or over the Parquet files of an
export, in the sandbox of :mod:`replay.sandbox`, within the query's bounds
(:mod:`kernel.sqlbounds`: DuckDB's ``memory_limit``, ``interrupt()`` when the time is up, rows
fetched in chunks until the result writer has enough). Both expose the same names unqualified
and in schema ``rill``: ``runs``, ``events``, every ``ev_<kind>`` table, and the views."""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from kernel.contracts.sql import ResultWriter, SqlQuery, local_path
from kernel.errors import EventLogError, UsageError
from replay.bounds import bounded, limit_memory

if TYPE_CHECKING:
    from kernel.eventtables import EventTable
    from kernel.lifecycle.session import Session
    from kernel.sqlbounds import QueryBounds

SANDBOXED = "rill sql is sandboxed: it reads the tables and views of the event log (or of --parquet DIR), no file"
#: rows fetched from DuckDB at a time
CHUNK = 2048


def run_query(con: Any, query: str) -> tuple[list[str], list[tuple]]:
    """Columns and rows of one of rill's own queries (``rill runs``), checked by
    :func:`replay.sandbox.check_statement` first."""
    import duckdb

    from replay.sandbox import check_statement

    check_statement(con, query)
    try:
        result = con.execute(query)
        columns = [d[0] for d in result.description or []]
        return columns, result.fetchall()
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None


def answer(con: Any, text: str, bounds: QueryBounds, result: ResultWriter) -> None:
    """Seal ``con`` (with the query's memory limit) and hand the rows of the user's query
    ``text`` to ``result``, chunk by chunk, within ``bounds``."""
    import duckdb

    from replay.sandbox import check_statement, seal

    limit_memory(con, bounds.memory_bytes)
    seal(con)
    check_statement(con, text)
    with bounded(con, bounds):
        try:
            fetched = con.execute(text)
            result.columns([d[0] for d in fetched.description or []])
            while True:
                rows = fetched.fetchmany(CHUNK)
                if not rows or not result.rows(rows):
                    break
        except duckdb.PermissionException as exc:
            raise UsageError(f"{SANDBOXED}: {str(exc).splitlines()[0]}") from None
        except (duckdb.InterruptException, duckdb.OutOfMemoryException):
            raise
        except duckdb.Error as exc:
            raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None


def sql_query(session: Session, text: str, parquet: str | None, result: ResultWriter,
              bounds: QueryBounds) -> SqlQuery:
    """``rill sql``'s request to an engine: the query, what the session may read, its bounds (one
    clock for the engine and for ``result``) and where its rows go."""
    from kernel.eventtables import tables_by_kind
    from replay.export import export_log
    from replay.exported import ExportFiles, checked_export
    from replay.store import open_store

    tables = tables_by_kind(session.events.types())

    def export_files(directory: str) -> dict[str, list[str]]:
        with ExportFiles(directory) as files:
            checked_export(files, tables, bounds)
            return files.tables

    return SqlQuery(text=text, parquet=parquet, config=session.config, tables=tables, store=open_store(session),
                    views=session.views, export_log=partial(export_log, session, bounds=bounds),
                    export_files=export_files, bounds=bounds, result=result)


class DuckDBEngine:
    """The default engine: DuckDB on the event log itself, or on exported Parquet files."""

    def query(self, request: SqlQuery) -> None:
        from replay.views import create_views

        if request.parquet is None:
            from replay.store import NO_STORE

            if request.store is None:
                raise EventLogError(NO_STORE)
            with request.store.read() as con:
                create_views(con, request.views, request.tables)
                answer(con, request.text, request.bounds, request.result)
            return
        directory = local_path(request.parquet)
        if directory is None:
            raise UsageError(f"--parquet {request.parquet}: DuckDB reads an export on this machine (Spark reads other "
                             "file systems: --engine spark)")
        with open_export(directory, request.tables, request.bounds) as con:
            create_views(con, request.views, request.tables)
            answer(con, request.text, request.bounds, request.result)


@contextmanager
def open_export(directory: str, tables: Mapping[str, EventTable], bounds: QueryBounds | None = None) -> Iterator[Any]:
    """An in-memory DuckDB over an export, for the block: each table an Arrow dataset over
    exactly its Parquet files, opened and checked first (:mod:`replay.exported`: read through
    the files opened when they were checked, and by Arrow, so the sealed connection needs no
    file system), registered unqualified and as ``rill.<table>``; an event table (by kind) the
    export has no file for is an empty ``rill.ev_<kind>`` with its columns; ``rill.events``
    over them, as in the log. The connection and the files are closed after the block."""
    import duckdb
    import pyarrow.dataset as ds
    import pyarrow.parquet  # noqa: F401  (loaded before the export's files take the descriptors left)

    from replay.exported import ExportFiles, checked_export
    from replay.views import empty_relation

    with ExportFiles(directory) as files:
        checked = checked_export(files, tables, bounds)
        columns: dict[str, list[str]] = {}
        con = duckdb.connect()
        try:
            con.execute("CREATE SCHEMA rill")
            for table, (sources, schema) in checked.items():
                con.register(table, ds.dataset(sources, schema=schema, format="parquet"))
                con.execute(f"CREATE VIEW rill.{table} AS SELECT * FROM temp.main.{table}")
                if table.startswith("ev_"):
                    columns[table[3:]] = [name for name in schema.names if name not in ("run_id", "seq", "time")]
            for kind in sorted(set(tables) - set(columns)):
                con.execute(f"CREATE VIEW rill.ev_{kind} AS SELECT * FROM {empty_relation(tables[kind])}")
            if columns:
                con.execute(f"CREATE VIEW rill.events AS {events_select(columns)}")
            con.execute("SET search_path = 'rill,main'")
            yield con
        finally:
            con.close()


def events_select(columns: dict[str, list[str]]) -> str:
    """Every event as (run_id, seq, time, kind, payload JSON), from kind -> its fields (the
    ``events`` view of the log, over other tables)."""
    parts = []
    for kind in sorted(columns):
        fields = ", ".join(f"{_quoted(name)} := {_quoted(name)}" for name in columns[kind])
        payload = f"to_json(struct_pack({fields}))" if fields else "'{}'::JSON"
        parts.append(f"SELECT run_id, seq, time, '{kind}' AS kind, {payload} AS payload FROM rill.ev_{kind}")
    return " UNION ALL ".join(parts)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
