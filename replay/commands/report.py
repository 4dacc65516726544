"""``rill report RUN [-o FILE] [--compare OTHER]``: a recorded run as one HTML page."""

from __future__ import annotations

import os

import click

from kernel.cli.common import config_options, open_session
from kernel.errors import UsageError
from replay.output import check_output, replaced_whole
from replay.store import event_store, find_run, read_log


@click.command("report")
@click.argument("run_ref", metavar="RUN")
@click.option("-o", "--output", "output", default=None, type=click.Path(dir_okay=False),
              help="The HTML file to write (default: rill-report-<run>.html).")
@click.option("--compare", "other_ref", default=None, metavar="OTHER",
              help="Show another run side by side (e.g. a what-if re-execution).")
@config_options
def report_command(run_ref: str, output: str | None, other_ref: str | None, config_path: str | None,
                   sets: tuple[str, ...]) -> None:
    """Write a self-contained HTML report of a recorded run (RUN: id, id prefix, or "last"): the job
    graph coloured by back pressure, per-vertex charts, the task timeline with faults and
    restarts, heartbeat health, configuration."""
    from replay.compare import compare, figures
    from replay.report.data import report_data
    from replay.report.html import render_report

    session = open_session(config_path, sets)
    if output is not None:
        check_output(output, "--output", files=[event_store(session).path])
    with read_log(session) as con:
        runs = [find_run(con, run_ref)] + ([find_run(con, other_ref)] if other_ref else [])
        reports = [report_data(con, run) for run in runs]
        comparison = compare(figures(con, runs[0]), figures(con, runs[1])) if other_ref else None
    path = output or f"rill-report-{'-vs-'.join(run.run_id for run in runs)}.html"
    if output is None:
        check_output(path, "--output", files=[event_store(session).path])
    try:
        with replaced_whole(path, "--output") as handle:
            handle.write(render_report(reports, comparison))
    except OSError as exc:
        raise UsageError(f"cannot write the report to {path}: {exc.strerror}") from None
    click.echo(f"{os.path.abspath(path)}: report of run {' and '.join(run.run_id for run in runs)}")
