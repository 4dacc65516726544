"""``rill replay RUN``: the state at an instant, the events in order, or a re-execution."""

from __future__ import annotations

import sys

import click

from kernel.cli.common import config_options, open_session
from kernel.configtypes import parse_duration_ms
from kernel.errors import UsageError
from replay.jsonout import dumps
from replay.store import find_run, read_log


def _seconds(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_duration_ms(value if any(c.isalpha() for c in value) else f"{value} s") / 1000
    except ValueError as exc:
        raise UsageError(f"{option} {value!r}: {exc}") from None
    if seconds < 0:
        raise UsageError(f"{option} {value!r}: must not be negative (a time after the run's start)")
    return seconds


#: the options that mean something with only some of --at, --events, --rerun
OPTION_MODES = {"--kind": ("--events",), "--task": ("--events",), "--from": ("--events",), "--to": ("--events",),
                "--allow-changed": ("--rerun",), "--json": ("--at", "--rerun")}


@click.command("replay")
@click.argument("run_ref", metavar="RUN")
@click.option("--at", "at", metavar="T", help="Show the state T after the run's start (seconds, or e.g. 70s, 1min).")
@click.option("--events", is_flag=True, help="Play the run's events back in order.")
@click.option("--kind", "kinds", multiple=True, help="With --events: only events of this kind (repeatable).")
@click.option("--task", help="With --events: only events mentioning this (a vertex, a TaskExecutor, ...).")
@click.option("--from", "start", metavar="T1", help="With --events: from T1 after the start.")
@click.option("--to", "end", metavar="T2", help="With --events: up to T2 after the start.")
@click.option("--rerun", is_flag=True, help="Execute the run's job again; check the event sequence is the same "
                                            "(or compare, with --set changes).")
@click.option("--allow-changed", is_flag=True, help="With --rerun: execute a job file that changed since.")
@click.option("--json", "as_json", is_flag=True, help="With --at or --rerun: print JSON.")
@config_options
def replay_command(run_ref: str, at: str | None, events: bool, kinds: tuple[str, ...], task: str | None,
                   start: str | None, end: str | None, rerun: bool, allow_changed: bool, as_json: bool,
                   config_path: str | None, sets: tuple[str, ...]) -> None:
    """Replay a recorded run (RUN: id, id prefix, or "last") from the event log.

    --at T prints TaskExecutors and slots, subtask states and attempts, watermarks, back
    pressure and heartbeat health at T; --events plays events back; --rerun executes the run
    again (--set KEY=VALUE changes the re-execution: a what-if)."""
    chosen = [name for name, given in (("--at", at is not None), ("--events", events), ("--rerun", rerun)) if given]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --at T, --events, --rerun")
    (mode,) = chosen
    given = {"--kind": bool(kinds), "--task": task is not None, "--from": start is not None, "--to": end is not None,
             "--allow-changed": allow_changed, "--json": as_json}
    for option, modes in OPTION_MODES.items():
        if given[option] and mode not in modes:
            raise UsageError(f"{option} goes with {' or '.join(modes)}, not with {mode}")
    if task is not None and not task.strip():
        raise UsageError("--task names nothing: give a vertex, a TaskExecutor or another name the events mention")
    if rerun:
        _rerun(run_ref, sets, allow_changed, as_json, config_path)
        return
    instant, first, last = _seconds(at, "--at"), _seconds(start, "--from"), _seconds(end, "--to")
    if first is not None and last is not None and first > last:
        raise UsageError(f"--from {start!r} is after --to {end!r}: nothing lies between them")
    session = open_session(config_path, sets)
    with read_log(session) as con:
        run = find_run(con, run_ref)
        if instant is not None:
            from replay.state import render_state, state_at

            state = state_at(con, run, instant)
            click.echo(dumps(state) if as_json else render_state(state))
            return
        from replay.playback import play
        from replay.views import event_tables

        unknown = sorted(set(kinds) - event_tables(con))
        if unknown:
            raise UsageError(f"unknown event kind(s) {', '.join(unknown)} (kinds in this log: "
                             f"{', '.join(sorted(event_tables(con)))})")
        sys.stdout.flush()
        play(con, run, sys.stdout.buffer, kinds, task, first, last)
        sys.stdout.buffer.flush()


def _rerun(run_ref: str, sets: tuple[str, ...], allow_changed: bool, as_json: bool, config_path: str | None) -> None:
    from kernel.events import environment_fields
    from replay.compare import compare, figures, render_comparison
    from replay.rerun import execute, first_divergence, left_out, prepare

    session = open_session(config_path, ())
    with read_log(session) as con:
        run = find_run(con, run_ref)
        prepared = prepare(con, run, sets, allow_changed)
    result = execute(prepared, run.metadata.get("job_args", []))
    with read_log(session) as con:
        new = find_run(con, result.run_id)
        check = run.clock == "simulated" and not sets
        environment = environment_fields(session.events.types())
        divergence = first_divergence(con, run.run_id, new.run_id, environment) if check else None
        comparison = None if check else compare(figures(con, run), figures(con, new))
    report = {"recorded": run.run_id, "rerun": new.run_id, "status": new.status, "notes": result.notes}
    if check:
        report["identical"] = divergence is None
        report["left_out"] = left_out(environment)
        if divergence is not None:
            report["divergence"] = {"seq": divergence.seq, "expected": divergence.expected, "found": divergence.found}
    else:
        report["comparison"] = comparison
    if as_json:
        click.echo(dumps(report))
    else:
        for note in result.notes:
            click.echo(f"note: {note}")
        if comparison is not None:
            click.echo(render_comparison(comparison))
        elif divergence is None:
            click.echo(f"re-execution {new.run_id} reproduced run {run.run_id}: {new.events} events, identical sequence")
        else:
            click.echo(f"re-execution {new.run_id} diverged from run {run.run_id} at event {divergence.seq}:\n"
                       f"  expected: {divergence.expected}\n  found:    {divergence.found}")
        if check:
            click.echo(f"compared without the fields that describe the environment: {', '.join(left_out(environment))}")
    if check and divergence is not None:
        raise SystemExit(1)
