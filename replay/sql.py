"""``rill sql`` on DuckDB: one query over the event log, or over the Parquet files of an
export, in the sandbox of :mod:`replay.sandbox`. Both expose the same names unqualified and in
schema ``rill``: ``runs``, ``events``, every ``ev_<kind>`` table, and the views."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Mapping

from kernel.contracts.sql import SqlQuery
from kernel.errors import EventLogError, UsageError

if TYPE_CHECKING:
    from kernel.eventtables import EventTable
    from kernel.lifecycle.session import Session

SANDBOXED = "rill sql is sandboxed: it reads the tables and views of the event log (or of --parquet DIR), no file"


def run_query(con: Any, query: str) -> tuple[list[str], list[tuple]]:
    """Columns and rows of one query, checked by :func:`replay.sandbox.check_statement` first."""
    import duckdb

    from replay.sandbox import check_statement

    check_statement(con, query)
    try:
        result = con.execute(query)
        columns = [d[0] for d in result.description or []]
        return columns, result.fetchall()
    except duckdb.PermissionException as exc:
        raise UsageError(f"{SANDBOXED}: {str(exc).splitlines()[0]}") from None
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None


def sql_query(session: Session, text: str, parquet: str | None) -> SqlQuery:
    """``rill sql``'s request to an engine: the query and what the session may read."""
    from kernel.eventtables import tables_by_kind
    from replay.export import export_log
    from replay.store import open_store

    return SqlQuery(text=text, parquet=parquet, config=session.config, tables=tables_by_kind(session.events.types()),
                    store=open_store(session), views=session.views, export_log=partial(export_log, session))


class DuckDBEngine:
    """The default engine: DuckDB on the event log itself, or on exported Parquet files."""

    def query(self, request: SqlQuery) -> tuple[list[str], list[tuple]]:
        from replay.sandbox import seal
        from replay.views import create_views

        if request.parquet is None:
            from replay.store import NO_STORE

            if request.store is None:
                raise EventLogError(NO_STORE)
            with request.store.read() as con:
                create_views(con, request.views, request.tables)
                seal(con)
                return run_query(con, request.text)
        con = open_export(request.parquet, request.tables)
        try:
            create_views(con, request.views, request.tables)
            seal(con)
            return run_query(con, request.text)
        finally:
            con.close()


def open_export(directory: str, tables: Mapping[str, EventTable]) -> Any:
    """An in-memory DuckDB over an export: each table an Arrow dataset over exactly its Parquet
    files (read by Arrow, so the sealed connection needs no file system), registered
    unqualified and as ``rill.<table>``; an event table (by kind) the export has no file for
    is an empty ``rill.ev_<kind>`` with its columns; ``rill.events`` over them, as in the log."""
    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from replay.export import exported_tables
    from replay.views import empty_relation

    columns: dict[str, list[str]] = {}
    con = duckdb.connect()
    try:
        con.execute("CREATE SCHEMA rill")
        for table, files in exported_tables(directory).items():
            schema = pa.unify_schemas([pq.read_schema(path) for path in files])
            con.register(table, ds.dataset(files, schema=schema, format="parquet"))
            con.execute(f"CREATE VIEW rill.{table} AS SELECT * FROM temp.main.{table}")
            if table.startswith("ev_"):
                columns[table[3:]] = [name for name in schema.names if name not in ("run_id", "seq", "time")]
        for kind in sorted(set(tables) - set(columns)):
            con.execute(f"CREATE VIEW rill.ev_{kind} AS SELECT * FROM {empty_relation(tables[kind])}")
        if columns:
            con.execute(f"CREATE VIEW rill.events AS {events_select(columns)}")
        con.execute("SET search_path = 'rill,main'")
    except Exception:
        con.close()
        raise
    return con


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
