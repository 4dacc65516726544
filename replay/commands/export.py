"""``rill export RUN... --parquet DIR``: a run's events and views as Parquet files."""

from __future__ import annotations

import os

import click

from kernel.cli.common import config_options, open_session
from kernel.errors import UsageError
from replay.export import write_parquet
from replay.store import find_run, read_log
from replay.views import temporary_views


@click.command("export")
@click.argument("run_refs", metavar="RUN...", nargs=-1, required=True)
@click.option("--parquet", "directory", required=True, type=click.Path(file_okay=False),
              help="Directory to write DIR/<run>/events/<kind>.parquet, DIR/<run>/views/<view>.parquet, DIR/<run>/run.parquet.")
@config_options
def export_command(run_refs: tuple[str, ...], directory: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Export recorded runs (ids, prefixes, or "last") as Parquet, for Spark, pandas, ...
    (`rill sql --parquet DIR` queries them)."""
    if not directory:
        raise UsageError("--parquet: give a directory")
    session = open_session(config_path, sets)
    with read_log(session) as con:
        runs = [find_run(con, ref) for ref in run_refs]
        views = temporary_views(con)
        for run in runs:
            base = os.path.join(directory, run.run_id)
            files = write_parquet(con, base, run.run_id, views)
            click.echo(f"{run.run_id}: {files} Parquet files in {base}")
