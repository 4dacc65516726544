"""``rill sql``: read-only SQL over every recorded run."""

from __future__ import annotations

import csv
import io
import json

import click

from kernel.cli.common import config_options, format_table, open_session
from replay.sql import run_query
from replay.store import event_store
from replay.views import create_views


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(columns, row)) for row in rows], indent=2, default=str)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    return format_table(columns, rows)


@click.command("sql")
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@config_options
def sql_command(query: str, fmt: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Run one read-only SQL query over the event log (tables in schema rill; views
    task_metrics, backpressure, watermarks, heartbeats, task_timeline, slots, failures)."""
    session = open_session(config_path, sets)
    with event_store(session).read() as con:
        create_views(con)
        columns, rows = run_query(con, query)
    click.echo(render(columns, rows, fmt))
