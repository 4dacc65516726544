"""Schema of the event log: numbered migrations for the fixed tables, derived tables for events.

Migrations are append-only: never edit one that shipped, add the next number. Event tables
are derived from the Structs (:mod:`kernel.eventtables`); a new event type creates its
table and a new field adds its column, both recorded in ``rill.event_tables``.
"""

from __future__ import annotations

import json
from typing import Any

from kernel.errors import EventLogError
from kernel.eventtables import SCHEMA
from plugins.eventlog.schema import TableSpec

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "runs, migrations and the catalogue of event tables",
        [
            f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.migrations (
                version INTEGER PRIMARY KEY, description VARCHAR, applied_at TIMESTAMP)""",
            f"""CREATE TABLE {SCHEMA}.runs (
                run_id VARCHAR PRIMARY KEY,
                job_name VARCHAR,
                status VARCHAR,
                clock VARCHAR,
                seed BIGINT,
                config JSON,
                plugins JSON,
                rill_version VARCHAR,
                started_at TIMESTAMP,
                ended_at TIMESTAMP,
                updated_at TIMESTAMP,
                pid INTEGER,
                pid_start BIGINT,
                host VARCHAR,
                events BIGINT,
                clock_start BIGINT,
                clock_end BIGINT,
                metadata JSON)""",
            f"""CREATE TABLE {SCHEMA}.event_tables (
                tag VARCHAR PRIMARY KEY, table_name VARCHAR, event_class VARCHAR, columns JSON)""",
        ],
    ),
]

LATEST = MIGRATIONS[-1][0]


class SchemaConflict(EventLogError):
    """An event's Struct no longer matches its table (a retyped field): a bug, not a
    problem of the file, so its events are not spooled either."""


def schema_version(con: Any) -> int:
    """The highest applied migration (0 for an empty database)."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = current_database() "
        "AND table_schema = ? AND table_name = 'migrations'",
        [SCHEMA],
    ).fetchone()[0]
    if not exists:
        return 0
    return con.execute(f"SELECT coalesce(max(version), 0) FROM {SCHEMA}.migrations").fetchone()[0]


def check_version(version: int, path: str) -> None:
    if version > LATEST:
        raise EventLogError(
            f"event log {path} has schema version {version}, newer than this rill understands "
            f"({LATEST}); upgrade rill to read it"
        )


def migrate(con: Any, path: str) -> int:
    """Apply the migrations not yet applied; returns the resulting version."""
    version = schema_version(con)
    check_version(version, path)
    for number, description, statements in MIGRATIONS:
        if number <= version:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in statements:
                con.execute(statement)
            con.execute(
                f"INSERT INTO {SCHEMA}.migrations VALUES (?, ?, now()::TIMESTAMP)", [number, description]
            )
            con.execute("COMMIT")
        except Exception as exc:
            con.execute("ROLLBACK")
            raise EventLogError(f"event log {path}: migration {number} failed: {exc}") from exc
        version = number
    return version


def stored_columns(con: Any) -> dict[str, dict[str, str]]:
    """tag -> {column: sql type} of every event table in the log."""
    rows = con.execute(f"SELECT tag, columns FROM {SCHEMA}.event_tables").fetchall()
    return {tag: json.loads(columns) for tag, columns in rows}


def sync_event_table(con: Any, table: TableSpec, stored: dict[str, dict[str, str]]) -> None:
    """Create the table of an event type, or add the columns its Struct gained."""
    wanted = dict(table.columns)
    have = stored.get(table.tag)
    if have == wanted:
        return
    if have is None:
        con.execute(table.ddl())
    else:
        for name, sql_type in wanted.items():
            if name not in have:
                con.execute(f'ALTER TABLE {table.qualified} ADD COLUMN "{name}" {sql_type}')
            elif have[name] != sql_type:
                raise SchemaConflict(
                    f"event {table.tag}.{name} changed type from {have[name]} to {sql_type}; "
                    "a field is never retyped: add a new field instead"
                )
        wanted = {**have, **wanted}
    con.execute(
        f"INSERT OR REPLACE INTO {SCHEMA}.event_tables VALUES (?, ?, ?, ?)",
        [table.tag, table.name, table.event_class, json.dumps(wanted)],
    )
    stored[table.tag] = wanted
    refresh_events_view(con, stored)


def refresh_events_view(con: Any, stored: dict[str, dict[str, str]]) -> None:
    """``rill.events``: every event of every run as (run_id, seq, time, kind, payload JSON)."""
    parts = []
    for tag in sorted(stored):
        fields = [name for name in stored[tag] if name not in ("seq", "time")]
        packed = ", ".join(f'"{name}" := "{name}"' for name in fields)
        payload = f"to_json(struct_pack({packed}))" if fields else "'{}'::JSON"
        parts.append(
            f"SELECT run_id, seq, time, '{tag}' AS kind, {payload} AS payload FROM {SCHEMA}.ev_{tag}"
        )
    con.execute(f"CREATE OR REPLACE VIEW {SCHEMA}.events AS " + " UNION ALL ".join(parts))
