"""``rill sql``: read-only SQL over every recorded run, within the query's bounds."""

from __future__ import annotations

import os
from typing import Any, Callable

import click

from kernel.cli.common import config_options, open_session
from kernel.contracts.sql import ResultWriter, local_path
from kernel.errors import UsageError
from replay.sqlresult import FileResult, TerminalResult, render


@click.command("sql")
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="How rows are printed (with --output: csv, the default, or json).")
@click.option("-o", "--output", "output", default=None, metavar="FILE",
              help="Write every row to FILE (CSV or JSON) instead of printing at most sql.max-rows of them.")
@click.option("--engine", default="duckdb", show_default=True,
              help="SQL engine: duckdb, or spark (Spark SQL over Parquet, for logs too big for one machine).")
@click.option("--parquet", "parquet", default=None, type=click.Path(file_okay=False),
              help="Query the runs `rill export` wrote to this directory instead of the event log.")
@click.option("--checkpoint", "checkpoint", default=None, metavar="PATH",
              help="Query the keyed state of this checkpoint or savepoint (its directory or _metadata) as the "
                   "table state, instead of the event log.")
@config_options
@click.pass_context
def sql_command(ctx: click.Context, query: str, fmt: str, output: str | None, engine: str, parquet: str | None,
                checkpoint: str | None, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Run one read-only SQL query over the event log (tables in schema rill; views
    task_metrics, backpressure, watermarks, heartbeats, task_timeline, slots, failures, and
    those plugins register), or with --checkpoint over a checkpoint's keyed state (table state:
    operator, operator_id, key_group, key, namespace, state_name, kind, value). A query runs at
    most sql.timeout, in sql.memory-limit, and prints at most sql.max-rows rows."""
    from kernel.sqlbounds import SqlOptions
    from replay.store import open_store

    for option, given in (("--parquet", parquet), ("--checkpoint", checkpoint), ("--output", output)):
        if given == "":
            raise UsageError(f"{option}: give a path")
    if checkpoint is not None and (parquet is not None or engine != "duckdb"):
        raise UsageError("--checkpoint reads one checkpoint with DuckDB: give neither --parquet nor another --engine")
    if output is not None:
        if fmt == "table":
            if ctx.get_parameter_source("fmt") is not click.core.ParameterSource.DEFAULT:
                raise UsageError("--output writes --format csv or json (a table is for reading on the terminal)")
            fmt = "csv"
    session = open_session(config_path, sets)
    bounds = session.config.section(SqlOptions).bounds()
    if checkpoint is None:
        engines: dict[str, Any] = {}
        session.plugin_manager.hook.register_sql_engines(register=engines.__setitem__)
        if engine not in engines:
            raise UsageError(f"unknown SQL engine {engine!r} (available: {', '.join(sorted(engines))})")
    if output is not None:
        from replay.output import check_output

        store = open_store(session)
        if checkpoint is not None:
            read = [os.path.dirname(os.path.abspath(checkpoint)) if os.path.basename(checkpoint) == "_metadata"
                    else checkpoint]
        else:
            read = [path for path in [parquet and local_path(parquet)] if path]
        check_output(output, "--output", files=[store.path] if store is not None else [], directories=read)

    def answer(result: ResultWriter) -> None:
        if checkpoint is not None:
            _query_checkpoint(checkpoint, query, bounds, result)
        else:
            from replay.sql import sql_query

            engines[engine].query(sql_query(session, query, parquet, result, bounds))

    if output is None:
        result = TerminalResult(bounds)
        answer(result)
        click.echo(render(result.names, result.held, fmt))
        if result.more:
            raise bounds.too_many_rows()
        return
    _write_all(output, fmt, bounds, answer)


def _query_checkpoint(checkpoint: str, query: str, bounds: Any, result: ResultWriter) -> None:
    from replay.sql import answer
    from replay.state_table import open_state

    bounds.start()
    con = open_state(checkpoint, bounds)
    try:
        answer(con, query, bounds, result)
    finally:
        con.close()


def _write_all(output: str, fmt: str, bounds: Any, answer: Callable[[ResultWriter], None]) -> None:
    from replay.output import replaced_whole

    with replaced_whole(output, "--output") as handle:
        result = FileResult(handle, output, fmt, bounds)
        answer(result)
        result.finish()
    click.echo(f"{os.path.abspath(output)}: {result.count} row{'' if result.count == 1 else 's'} ({fmt})")
