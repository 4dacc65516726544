"""``rill metrics RUN``: per job vertex figures of a recorded run."""

from __future__ import annotations

import click

from kernel.cli.common import config_options, format_table, open_session
from replay.jsonout import dumps
from replay.metrics import run_metrics, vertex_metrics
from replay.store import find_run, read_log

COLUMNS = [
    ("vertex", "vertex"), ("p", "parallelism"), ("busy %", "busy_pct"), ("idle %", "idle_pct"),
    ("back pressured %", "back_pressured_pct"), ("level", "level"), ("records in", "records_in"),
    ("records out", "records_out"), ("in/s", "records_in_per_s"), ("out/s", "records_out_per_s"),
    ("watermark lag ms", "watermark_lag_ms"), ("late", "late_records_dropped"), ("failures", "failures"),
    ("restarts", "restarts"),
]


@click.command("metrics")
@click.argument("run_ref", metavar="RUN")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_options
def metrics_command(run_ref: str, as_json: bool, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Per job vertex: parallelism, busy/idle/back-pressured %, level, records, watermark lag,
    failures and restarts of a recorded run (RUN: id, id prefix, or "last")."""
    session = open_session(config_path, sets)
    with read_log(session) as con:
        run = find_run(con, run_ref)
        vertices = vertex_metrics(con, run.run_id)
        totals = run_metrics(con, run.run_id)
    if as_json:
        click.echo(dumps({"run_id": run.run_id, "job_name": run.job_name, "status": run.status,
                          "clock": run.clock, "duration_s": run.duration_s, **totals, "vertices": vertices}))
        return
    click.echo(f"run {run.run_id} ({run.job_name}): {run.status}, {run.duration_s:.3f} s of {run.clock} clock, "
               f"{run.events} events; failures {totals['failures']}, restarts {totals['restarts']}, "
               f"late records dropped {totals['late_records_dropped']}")
    rows = [["-" if row[key] is None else row[key] for _, key in COLUMNS] for row in vertices]
    click.echo(format_table([title for title, _ in COLUMNS], rows))
