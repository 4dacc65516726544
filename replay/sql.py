"""Read-only SQL over the event log, and the engines that run it (``rill sql --engine``)."""

from __future__ import annotations

from typing import Any

from kernel.errors import UsageError
from kernel.session import Session

ALLOWED = {"SELECT", "EXPLAIN"}


def check_read_only(con: Any, query: str) -> None:
    """Refuse anything but one read statement, before it runs."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None
    if not statements:
        raise UsageError("no SQL statement given")
    if len(statements) > 1:
        raise UsageError("give one SQL statement at a time")
    kind = statements[0].type.name
    if kind not in ALLOWED:
        raise UsageError(f"rill sql is read-only: {kind} statements are refused (use SELECT)")


def run_query(con: Any, query: str) -> tuple[list[str], list[tuple]]:
    """Columns and rows of one read-only query."""
    import duckdb

    check_read_only(con, query)
    try:
        result = con.execute(query)
        columns = [d[0] for d in result.description or []]
        return columns, result.fetchall()
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None


class DuckDBEngine:
    """The default engine: DuckDB on the event log itself, or on exported Parquet files."""

    def query(self, session: Session, query: str, parquet: str | None) -> tuple[list[str], list[tuple]]:
        from replay.store import event_store
        from replay.views import create_views

        if parquet is None:
            with event_store(session).read() as con:
                create_views(con)
                return run_query(con, query)
        import duckdb

        from kernel.events import tag_of
        from replay.export import attach_export

        con = duckdb.connect()
        try:
            attach_export(con, parquet, {tag_of(event_type): event_type for event_type in session.events.types()})
            create_views(con)
            return run_query(con, query)
        finally:
            con.close()
