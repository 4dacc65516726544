"""``rill metrics RUN``: per job vertex figures of a recorded run."""

from __future__ import annotations

import click

from kernel.cli.common import config_options, format_table, open_session
from replay.backpressure import judgement
from replay.checkpoints import describe_completed, run_checkpoints
from replay.jsonout import dumps
from replay.metrics import run_metrics, vertex_metrics
from replay.store import find_run, read_log
from replay.user_metrics import describe_values, user_metrics_at

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
    failures and restarts of a recorded run (RUN: id, id prefix, or "last"); its user metrics
    (PyFlink's MetricGroup API) per subtask as they ended; its checkpoints and the last
    completed checkpoint and savepoint. A run recorded with
    another back-pressure measure than mailbox timing (plugins.backpressure) is judged by it:
    its level, and the worst subtask's share of back-pressured samples (sampled %)."""
    session = open_session(config_path, sets)
    with read_log(session) as con:
        run = find_run(con, run_ref)
        vertices = vertex_metrics(con, run.run_id)
        totals = run_metrics(con, run.run_id)
        judged = judgement(con, run.run_id)
        checkpoints = run_checkpoints(con, run.run_id, run.clock_end)
        user_metrics = user_metrics_at(con, run.run_id)
    if as_json:
        click.echo(dumps({"run_id": run.run_id, "job_name": run.job_name, "status": run.status,
                          "clock": run.clock, "duration_s": run.duration_s, **totals,
                          "back_pressure_measure": judged.measure, "vertices": vertices,
                          "user_metrics": user_metrics, "checkpoints": checkpoints}))
        return
    click.echo(f"run {run.run_id} ({run.job_name}): {run.status}, {run.duration_s:.3f} s of {run.clock} clock, "
               f"{run.events} events; failures {totals['failures']}, restarts {totals['restarts']}, "
               f"late records dropped {totals['late_records_dropped']}")
    if judged.note:
        click.echo(f"note: {judged.note}")
    columns = COLUMNS
    if judged.measured:
        click.echo(f"back pressure judged by {judged.measure}")
        at = columns.index(("level", "level"))
        columns = [*columns[:at], ("sampled %", "sampled_pct"), *columns[at:]]
    rows = [["-" if row[key] is None else row[key] for _, key in columns] for row in vertices]
    click.echo(format_table([title for title, _ in columns], rows))
    if user_metrics:
        click.echo("user metrics")
        click.echo(format_table(["vertex", "subtask", "attempt", "operator", "metric", "kind", "value"], [
            [row["vertex"], row["subtask"], row["attempt"], row["operator"], row["metric"], row["kind"],
             describe_values(row)] for row in user_metrics]))
    if checkpoints is not None:
        counts = checkpoints["counts"]
        click.echo(f"checkpoints: {counts['completed']} completed, {counts['failed']} failed, {counts['in_progress']} "
                   f"in progress, {counts['restored']} restored")
        for title, key in (("last completed checkpoint", "latest_completed"), ("last savepoint", "latest_savepoint")):
            if checkpoints[key] is not None:
                click.echo(f"{title} {describe_completed(checkpoints[key])}")
