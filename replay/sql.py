"""``rill sql`` on DuckDB: one query over the event log, or over the Parquet files of an
export, in the sandbox of :mod:`replay.sandbox`. Both expose the same names unqualified and in
schema ``rill``: ``runs``, ``events``, every ``ev_<kind>`` table, and the views."""

from __future__ import annotations

from typing import Any

from kernel.errors import UsageError
from kernel.session import Session

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


class DuckDBEngine:
    """The default engine: DuckDB on the event log itself, or on exported Parquet files."""

    def query(self, session: Session, query: str, parquet: str | None) -> tuple[list[str], list[tuple]]:
        from replay.sandbox import seal
        from replay.views import create_views

        if parquet is None:
            from replay.store import event_store

            with event_store(session).read() as con:
                create_views(con)
                seal(con)
                return run_query(con, query)
        from kernel.events import tag_of

        con = open_export(parquet, {tag_of(event_type): event_type for event_type in session.events.types()})
        try:
            create_views(con)
            seal(con)
            return run_query(con, query)
        finally:
            con.close()


def open_export(directory: str, types: dict[str, type]) -> Any:
    """An in-memory DuckDB over an export: each table an Arrow dataset over exactly its Parquet
    files (read by Arrow, so the sealed connection needs no file system), registered
    unqualified and as ``rill.<table>``; an event type (tag -> type) the export has no file for
    is an empty ``rill.ev_<tag>`` with its columns; ``rill.events`` over them, as in the log."""
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
        for tag in sorted(set(types) - set(columns)):
            con.execute(f"CREATE VIEW rill.ev_{tag} AS SELECT * FROM {empty_relation(tag, types)}")
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
