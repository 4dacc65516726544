"""``rill log``: look after the event log — ingest spooled runs, check it, salvage it."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import click

from kernel.cli.common import config_options, format_table, open_session
from kernel.errors import EventLogError, UsageError
from plugins.eventlog.damage import LogDamaged
from plugins.eventlog.plugin import event_store

if TYPE_CHECKING:
    from plugins.eventlog.store import EventStore


@click.group("log")
def log_command() -> None:
    """Look after the event log: ingest spooled runs, check it, salvage a damaged one."""


@log_command.command("recover")
@config_options
def recover_command(config_path: str | None, sets: tuple[str, ...]) -> None:
    """Ingest the runs spooled while the event log could not be written."""
    from plugins.eventlog.spool import pending_spools

    store = event_store(open_session(config_path, sets).config)
    if not pending_spools(store.path):
        click.echo(f"nothing to recover: no spooled runs wait for {store.path}")
        return
    recovery = store.recover()
    for run in recovery.ingested:
        click.echo(f"ingested run {run.run_id} ({run.job_name}, {run.status}): {run.events:,} events from {run.spool}")
    for problem in recovery.left:
        click.echo(f"left {problem}")
    click.echo(f"recovered {recovery.runs} run(s), {recovery.events:,} events, into {store.path}")


def _state(run) -> str:
    return "intact" if run.intact else "damaged: " + "; ".join(run.problems)


def _describe_damage(scan) -> list[str]:
    lines = [f"damaged: {note}" for note in scan.notes]
    for name, table in scan.tables.items():
        lines.extend(f"damaged: {name} rows {a:,}-{b - 1:,} cannot be read ({why})" for a, b, why in table.bad)
    if scan.unlisted:
        lines.append(f"damaged: events of runs without a readable runs row: {', '.join(scan.unlisted)}")
    return lines


@contextmanager
def _opened(store: EventStore) -> Iterator[Any]:
    """The log as it is, for check and salvage; a file DuckDB cannot open has no run to give."""
    try:
        with store.inspect() as con:
            yield con
    except LogDamaged as exc:
        raise EventLogError(f"event log {store.path} is damaged ({exc.detail}): no run in it can be read; move it "
                            "aside and the next run (or `rill log recover`) starts a new log there") from None


@log_command.command("check")
@config_options
def check_command(config_path: str | None, sets: tuple[str, ...]) -> None:
    """Read every row of the event log: which runs are intact, what is damaged."""
    from plugins.eventlog.scan import scan_log
    from plugins.eventlog.spool import pending_spools
    from plugins.eventlog.store import CATALOG

    store = event_store(open_session(config_path, sets).config)
    with _opened(store) as con:
        scan = scan_log(con, CATALOG, store.path)
    rows = [(r.run_id, r.job_name, r.status, f"{r.events:,}", _state(r)) for r in scan.runs]
    click.echo(format_table(["run_id", "job", "status", "events", "state"], rows))
    for line in _describe_damage(scan):
        click.echo(line)
    waiting = pending_spools(store.path)
    if waiting:
        click.echo(f"{len(waiting)} spooled run(s) wait to be ingested (`rill log recover`)")
    intact = len(scan.intact)
    if scan.damaged:
        raise EventLogError(
            f"event log {store.path} is damaged: {intact} of {len(scan.runs)} runs intact; "
            "`rill log salvage OUT.duckdb` copies them into a new file"
        )
    click.echo(f"event log {store.path}: {len(scan.runs)} runs, all intact")


@log_command.command("salvage")
@click.argument("out", type=click.Path(dir_okay=False))
@config_options
def salvage_command(out: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Copy every readable run of the event log into the new DuckDB file OUT (the log is
    left as it is)."""
    from plugins.eventlog.scan import salvage, scan_log
    from plugins.eventlog.store import CATALOG

    store = event_store(open_session(config_path, sets).config)
    target = Path(out).expanduser()
    if target.exists() or Path(str(target) + ".wal").exists():
        raise UsageError(f"{target} exists: give salvage a new file (it never overwrites one)")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with _opened(store) as con:
        scan = scan_log(con, CATALOG, store.path)
        try:
            result = salvage(con, CATALOG, scan, partial)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    partial.rename(target)
    events = sum(run.events for run in result.copied)
    click.echo(f"copied {len(result.copied)} run(s), {events:,} events, into {target}")
    for run in result.copied:
        click.echo(f"  {run.run_id}  {run.job_name}  {run.status}  {run.events:,} events")
    if result.left:
        click.echo(f"could not copy {len(result.left)} run(s):")
        for run in result.left:
            click.echo(f"  {run.run_id}  {run.job_name}  {run.status}  {'; '.join(run.problems)}")
    for line in _describe_damage(scan):
        click.echo(line)
    click.echo(f"{store.path} is left as it is; to use the copy instead: mv {target} {store.path}")
