"""``rill runs``: the catalogue of recorded runs."""

from __future__ import annotations

import click

from kernel.cli.common import config_options, open_session
from replay.sqlresult import render
from replay.sql import run_query
from replay.store import event_store

RUNS_QUERY = """
SELECT run_id, job_name AS job, status, clock, seed,
       strftime(started_at, '%Y-%m-%d %H:%M:%S') AS started,
       round(epoch(coalesce(ended_at, updated_at) - started_at), 3) AS wall_s,
       round((clock_end - clock_start) / 1e9, 3) AS clock_s,
       events
FROM rill.runs ORDER BY started_at DESC LIMIT {limit}
"""


@click.command("runs")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, (1 << 63) - 1),
              help="Show at most this many runs (newest first).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@config_options
def runs_command(limit: int, fmt: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """List recorded runs, newest first."""
    session = open_session(config_path, sets)
    store = event_store(session)
    if not store.exists():
        click.echo(f"no runs recorded yet ({store.path})")
        return
    with store.read() as con:
        columns, rows = run_query(con, RUNS_QUERY.format(limit=int(limit)))
    click.echo(render(columns, rows, fmt))
