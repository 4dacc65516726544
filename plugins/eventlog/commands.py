"""``rill log``: look after the event log — ingest spooled runs, check it, salvage or rebuild it."""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import click

from kernel.cli.common import config_options, format_table, open_session
from kernel.errors import EventLogError, UsageError
from plugins.eventlog.damage import LogDamaged
from plugins.eventlog.options import event_store

if TYPE_CHECKING:
    from plugins.eventlog.rebuild import SegmentRun
    from plugins.eventlog.scan import LogScan, RunState
    from plugins.eventlog.store import EventStore


@click.group("log")
def log_command() -> None:
    """Look after the event log: ingest spooled runs, check it, salvage or rebuild a damaged one."""


@log_command.command("recover")
@config_options
def recover_command(config_path: str | None, sets: tuple[str, ...]) -> None:
    """Ingest the runs whose segments wait for the event log."""
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
    if recovery.failure:
        waiting = len(pending_spools(store.path)) - len(recovery.left)
        raise EventLogError(f"event log {store.path} cannot take the spooled runs ({recovery.failure}); "
                            f"{waiting} wait to be ingested")
    if recovery.failed:
        raise EventLogError(f"{len(recovery.failed)} spooled run(s) could not be ingested (see above)")


def _from_segments(held: SegmentRun | None, in_log: RunState | None) -> bool:
    """Whether a run is to be taken from its segments rather than from the log (whose ``runs``
    row, if readable, is ``in_log``): when they hold it whole and the log has no more of it —
    not more events, nor an end its segments lost — or has it damaged. The segments are the
    source of truth (a log read from an older checkpoint has less); a log run with more events
    than its segments tells that they lost their tail."""
    if held is None or not held.complete:
        return False
    if in_log is None or held.events > in_log.events:
        return True
    return held.events == in_log.events and (held.closed is not None or not in_log.intact)


def _state(run: RunState, segments: dict[str, SegmentRun]) -> str:
    if run.intact:
        return "intact"
    held = segments.get(run.run_id)
    rescue = f"; its segments hold all {held.events:,} events" if _from_segments(held, run) else ""
    return "damaged: " + "; ".join(run.problems) + rescue


def _describe_damage(scan: LogScan) -> list[str]:
    lines = [f"damaged: {note}" for note in scan.notes]
    for name, table in scan.tables.items():
        lines.extend(f"damaged: {name} rows {a:,}-{b - 1:,} cannot be read ({why})" for a, b, why in table.bad)
    if scan.unlisted:
        lines.append(f"damaged: events of runs without a readable runs row: {', '.join(scan.unlisted)}")
    return lines


@contextmanager
def _opened(store: EventStore) -> Iterator[tuple[Any, str]]:
    """A connection with the log as it is attached, for check and salvage, and "" — or one
    without it and why DuckDB cannot open it."""
    import duckdb

    with ExitStack() as stack:
        try:
            con = stack.enter_context(store.inspect())
            detail = ""
        except LogDamaged as exc:
            con = duckdb.connect()
            stack.callback(con.close)
            detail = exc.detail
        yield con, detail


def _cannot_open(store: EventStore, detail: str) -> EventLogError:
    return EventLogError(f"event log {store.path} is damaged ({detail}): no run in it can be read, and no segment "
                         "holds one; move it aside and the next run (or `rill log recover`) starts a new log there")


def _lost_runs(scan: LogScan | None, segments: dict[str, SegmentRun]) -> list[SegmentRun]:
    """Runs whose segments were ingested but that the log's readable ``runs`` rows lack."""
    listed = {run.run_id for run in scan.runs} if scan is not None else set()
    return [run for run in segments.values() if run.ingested and run.run_id not in listed]


@log_command.command("check")
@config_options
def check_command(config_path: str | None, sets: tuple[str, ...]) -> None:
    """Read every row of the event log: which runs are intact, what is damaged, and what its
    segments can give back."""
    from plugins.eventlog.rebuild import segment_runs
    from plugins.eventlog.scan import scan_log
    from plugins.eventlog.spool import pending_spools
    from plugins.eventlog.store import CATALOG

    store = event_store(open_session(config_path, sets).config)
    segments, _ = segment_runs(store.path)
    with _opened(store) as (con, detail):
        scan = None if detail else scan_log(con, CATALOG, store.path)
    lost = _lost_runs(scan, segments)
    rows = [(r.run_id, r.job_name, r.status, f"{r.events:,}", _state(r, segments)) for r in (scan.runs if scan else [])]
    for run in lost:
        rescue = f"its segments hold all {run.events:,} events" if run.complete else "; ".join(run.problems)
        rows.append((run.run_id, run.job_name, run.status, f"{run.events:,}", f"missing from the log: {rescue}"))
    listed = {row[0] for row in rows}
    unlisted = [run_id for run_id in (scan.unlisted if scan is not None else []) if run_id not in listed]
    for run_id in unlisted:
        readable = sum(table.rows.get(run_id, 0) for table in scan.tables.values())
        rows.append((run_id, "?", "?", "?", f"damaged: its runs row cannot be read ({readable:,} events can)"))
    if rows:
        click.echo(format_table(["run_id", "job", "status", "events", "state"], rows))
    for line in _describe_damage(scan) if scan is not None else []:
        click.echo(line)
    waiting = pending_spools(store.path)
    if waiting:
        click.echo(f"{len(waiting)} spooled run(s) wait to be ingested (`rill log recover`)")
    rescued = [run for run in segments.values() if run.complete]
    if scan is None:
        if not rescued:
            raise _cannot_open(store, detail)
        raise EventLogError(f"event log {store.path} is damaged ({detail}): DuckDB cannot read it; its segments "
                            f"hold {len(rescued)} complete run(s): `rill log rebuild OUT.duckdb` writes them into a "
                            "new file")
    total = len(scan.runs) + len(lost) + len(unlisted)
    if scan.damaged or lost:
        damaged = {run.run_id for run in scan.runs if not run.intact} | {run.run_id for run in lost} | set(unlisted)
        listed = {run.run_id: run for run in scan.runs}
        more = sum(1 for run_id in damaged if _from_segments(segments.get(run_id), listed.get(run_id)))
        intact = f"event log {store.path} is damaged: {len(scan.intact)} of {total} runs intact"
        if not scan.intact and not more:
            raise EventLogError(f"{intact}, and no segment holds one of the others: no run can be salvaged")
        others = f"; its segments hold {more} of the others" if more else ""
        raise EventLogError(f"{intact}{others}; `rill log salvage OUT.duckdb` copies them into a new file")
    click.echo(f"event log {store.path}: {total} runs, all intact")


def _new_file(out: str, command: str) -> tuple[Path, Path]:
    """The new file a command writes (never an existing one) and its partial name meanwhile."""
    target = Path(out).expanduser()
    if target.exists() or Path(str(target) + ".wal").exists():
        raise UsageError(f"{target} exists: give {command} a new file (it never overwrites one)")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    return target, partial


def _finish(partial: Path, target: Path) -> None:
    """Put the written file in its place, unless a file got there meanwhile."""
    try:
        os.link(partial, target)
    except FileExistsError:
        raise EventLogError(f"{target} was created meanwhile: the new file is left as {partial}") from None
    partial.unlink()


def _keep_waiting(store: EventStore, runs: list[SegmentRun]) -> None:
    """Keep the waiting segments of ``runs`` (those their runs no longer write), as an ingest
    would."""
    from plugins.eventlog.spool import keep, lock_spool, pending_spools, read_opened

    rebuilt = {run.run_id for run in runs}
    for path in pending_spools(store.path):
        fd = lock_spool(path)
        if fd is None:
            continue
        try:
            opened = read_opened(path)
            if opened is not None and opened.run_id in rebuilt:
                keep(path, store.retention)
        finally:
            os.close(fd)


def _run_line(run_id: str, job: str, status: str, events: int, note: str = "") -> str:
    return f"  {run_id}  {job}  {status}  {events:,} events{note}"


@log_command.command("salvage")
@click.argument("out", type=click.Path(dir_okay=False))
@config_options
def salvage_command(out: str, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Copy every run that can still be read — from the event log, or from its segments — into
    the new DuckDB file OUT (the log is left as it is)."""
    from plugins.eventlog.rebuild import segment_runs
    from plugins.eventlog.scan import salvage, scan_log
    from plugins.eventlog.store import CATALOG

    store = event_store(open_session(config_path, sets).config)
    target, partial = _new_file(out, "salvage")
    segments, _ = segment_runs(store.path)
    with _opened(store) as (con, detail):
        scan = None if detail else scan_log(con, CATALOG, store.path)
        in_log = {run.run_id: run for run in scan.runs} if scan is not None else {}
        from_segments = [run for run in segments.values() if _from_segments(run, in_log.get(run.run_id))]
        taken = {run.run_id for run in from_segments}
        keep = [run for run in in_log.values() if run.intact and run.run_id not in taken]
        if scan is None and not from_segments:
            raise _cannot_open(store, detail)
        uncopied = _uncopied(scan, in_log, segments, taken | {run.run_id for run in keep})
        if uncopied and not keep and not from_segments:
            _report_uncopied(uncopied, scan, detail)
            raise EventLogError(f"no run of event log {store.path} can be copied: nothing written")
        try:
            salvage(con, CATALOG, scan, partial, [run.run_id for run in keep], from_segments)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    _finish(partial, target)
    copied = [(r.run_id, r.job_name, r.status, r.events, "") for r in keep]
    copied += [(r.run_id, r.job_name, r.status, r.events, "  (from its segments)") for r in from_segments]
    click.echo(f"copied {len(copied)} run(s), {sum(row[3] for row in copied):,} events, into {target}")
    for row in copied:
        click.echo(_run_line(*row))
    _report_uncopied(uncopied, scan, detail)
    click.echo(f"{store.path} is left as it is; to use the copy instead: mv {target} {store.path}")


def _uncopied(scan: LogScan | None, in_log: dict[str, RunState], segments: dict[str, SegmentRun],
              copied: set[str]) -> list[str]:
    """One line per run salvage cannot copy: damaged in the log and not whole in its segments,
    missing from the log with damaged segments, or with only its events left in the log."""
    lines = []
    for run in in_log.values():
        if run.intact or run.run_id in copied:
            continue
        held = segments.get(run.run_id)
        also = "" if held is None else f"; its segments: {'; '.join(held.problems)}" if held.problems else \
            f"; its segments hold {held.events:,} of them"
        lines.append(f"  {run.run_id}  {run.job_name}  {run.status}  {'; '.join(run.problems)}{also}")
    named = copied | set(in_log)
    for segment_run in _lost_runs(scan, segments):
        if segment_run.run_id not in named:
            named.add(segment_run.run_id)
            lines.append(f"  {segment_run.run_id}  {segment_run.job_name}  {segment_run.status}  missing from the "
                         f"log; its segments: {'; '.join(segment_run.problems)}")
    for run_id in scan.unlisted if scan is not None else []:
        if run_id not in named:
            readable = sum(table.rows.get(run_id, 0) for table in scan.tables.values())
            lines.append(f"  {run_id}  ?  ?  its runs row cannot be read ({readable:,} events can)")
    return lines


def _report_uncopied(uncopied: list[str], scan: LogScan | None, detail: str) -> None:
    if uncopied:
        click.echo(f"could not copy {len(uncopied)} run(s):")
        for line in uncopied:
            click.echo(line)
    if scan is None:
        click.echo(f"damaged: DuckDB cannot read the log ({detail}): every run comes from its segments")
    else:
        for line in _describe_damage(scan):
            click.echo(line)


@log_command.command("rebuild")
@click.argument("out", required=False, type=click.Path(dir_okay=False))
@config_options
def rebuild_command(out: str | None, config_path: str | None, sets: tuple[str, ...]) -> None:
    """Write every run the event log's segments hold into the new DuckDB file OUT (default: the
    log's own path, once the damaged log is moved aside)."""
    import duckdb

    from plugins.eventlog.locking import log_lock
    from plugins.eventlog.rebuild import segment_runs, write_runs
    from plugins.eventlog.store import COMMAND_WAIT

    store = event_store(open_session(config_path, sets).config)
    if out is None and (store.path.exists() or Path(str(store.path) + ".wal").exists()):
        raise UsageError(f"event log {store.path} exists: give rebuild a new file (`rill log rebuild OUT.duckdb`, "
                         f"then `mv OUT.duckdb {store.path}`), or move the log aside first")
    target, partial = _new_file(out or str(store.path), "rebuild")
    segments, unusable = segment_runs(store.path)
    complete = sorted((run for run in segments.values() if run.complete), key=lambda run: run.opened.created_ns)
    if not complete:
        raise EventLogError(f"no segment of event log {store.path} holds a complete run "
                            f"({len(segments)} run(s) in {len(unusable) + sum(1 for _ in segments)} segment(s) "
                            "read): nothing to rebuild")
    with log_lock(store.path, exclusive=True, timeout=COMMAND_WAIT):
        con = duckdb.connect()
        try:
            con.execute(f"ATTACH '{str(partial).replace(chr(39), chr(39) * 2)}' AS rill_rebuild")
            con.execute("USE rill_rebuild")
            write_runs(con, complete)
            con.execute("USE memory")
            con.execute("DETACH rill_rebuild")
        except BaseException:
            con.close()
            partial.unlink(missing_ok=True)
            raise
        con.close()
        _finish(partial, target)
        if out is None:  # the rebuilt log is the log: the segments waiting for it are in it now
            _keep_waiting(store, complete)
    click.echo(f"rebuilt {len(complete)} run(s), {sum(run.events for run in complete):,} events, into {target}")
    for run in complete:
        click.echo(_run_line(run.run_id, run.job_name, run.status, run.events))
    incomplete = [run for run in segments.values() if not run.complete]
    if incomplete:
        click.echo(f"could not rebuild {len(incomplete)} run(s):")
        for run in incomplete:
            click.echo(f"  {run.run_id}  {run.job_name}  {run.status}  {'; '.join(run.problems)}")
    for problem in unusable:
        click.echo(f"left {problem}")
    if out is not None:
        click.echo(f"to use it as the event log: mv {target} {store.path}")
