"""``rill export RUN... --parquet DIR``: a run's events and views as Parquet files."""

from __future__ import annotations

import os

import click

from kernel.cli.common import config_options, open_session
from kernel.errors import UsageError
from replay.store import find_run, read_log
from replay.views import VIEWS, create_views, event_tables


@click.command("export")
@click.argument("run_refs", metavar="RUN...", nargs=-1, required=True)
@click.option("--parquet", "directory", required=True, type=click.Path(file_okay=False),
              help="Directory to write DIR/<run>/events/<kind>.parquet, DIR/<run>/views/<view>.parquet, DIR/<run>/run.parquet.")
@config_options
def export_command(run_refs: tuple[str, ...], directory: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Export recorded runs (ids, prefixes, or "last") as Parquet, for Spark, pandas, ..."""
    session = open_session(config_path, sets)
    with read_log(session) as con:
        runs = [find_run(con, ref) for ref in run_refs]
        missing = create_views(con)
        for run in runs:
            base = os.path.join(directory, run.run_id)
            for sub in ("events", "views"):
                os.makedirs(os.path.join(base, sub), exist_ok=True)
            files = 0
            for kind in sorted(event_tables(con)):
                (count,) = con.execute(f"SELECT count(*) FROM rill.ev_{kind} WHERE run_id = $run",
                                       {"run": run.run_id}).fetchone()
                if count:
                    _copy(con, f"SELECT * FROM rill.ev_{kind} WHERE run_id = '{run.run_id}' ORDER BY seq",
                          os.path.join(base, "events", f"{kind}.parquet"))
                    files += 1
            for view in VIEWS:
                if view not in missing:
                    _copy(con, f"SELECT * FROM {view} WHERE run_id = '{run.run_id}'",
                          os.path.join(base, "views", f"{view}.parquet"))
                    files += 1
            _copy(con, f"SELECT * FROM rill.runs WHERE run_id = '{run.run_id}'", os.path.join(base, "run.parquet"))
            click.echo(f"{run.run_id}: {files + 1} Parquet files in {base}")


def _copy(con, query: str, path: str) -> None:
    target = path.replace("'", "''")
    try:
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT PARQUET)")
    except Exception as exc:
        raise UsageError(f"cannot write {path}: {str(exc).splitlines()[0]}") from None
