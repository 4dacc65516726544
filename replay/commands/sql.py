"""``rill sql``: read-only SQL over every recorded run."""

from __future__ import annotations

import csv
import io

import click

from kernel.cli.common import config_options, format_table, open_session
from kernel.errors import UsageError
from replay.jsonout import dumps
from replay.sql import sql_query


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    if fmt == "json":
        return dumps([dict(zip(columns, row)) for row in rows])
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
@click.option("--engine", default="duckdb", show_default=True,
              help="SQL engine: duckdb, or spark (Spark SQL over Parquet, for logs too big for one machine).")
@click.option("--parquet", "parquet", default=None, type=click.Path(file_okay=False),
              help="Query the runs `rill export` wrote to this directory instead of the event log.")
@click.option("--checkpoint", "checkpoint", default=None, metavar="PATH",
              help="Query the keyed state of this checkpoint or savepoint (its directory or _metadata) as the "
                   "table state, instead of the event log.")
@config_options
def sql_command(query: str, fmt: str, engine: str, parquet: str | None, checkpoint: str | None,
                config_path: str | None, sets: tuple[str, ...]) -> None:
    """Run one read-only SQL query over the event log (tables in schema rill; views
    task_metrics, backpressure, watermarks, heartbeats, task_timeline, slots, failures, and
    those plugins register), or with --checkpoint over a checkpoint's keyed state (table state:
    operator, operator_id, key_group, key, namespace, state_name, kind, value)."""
    if checkpoint is not None:
        if parquet is not None or engine != "duckdb":
            raise UsageError("--checkpoint reads one checkpoint with DuckDB: give neither --parquet nor another "
                             "--engine")
        from replay.sql import run_query
        from replay.state_table import open_state

        con = open_state(checkpoint)
        try:
            columns, rows = run_query(con, query)
        finally:
            con.close()
        click.echo(render(columns, rows, fmt))
        return
    session = open_session(config_path, sets)
    engines: dict[str, object] = {}
    session.plugin_manager.hook.register_sql_engines(register=engines.__setitem__)
    if engine not in engines:
        raise UsageError(f"unknown SQL engine {engine!r} (available: {', '.join(sorted(engines))})")
    columns, rows = engines[engine].query(sql_query(session, query, parquet))
    click.echo(render(columns, rows, fmt))
