"""Plugin ``eventlog.duckdb``: every event of every run lands in one DuckDB file."""

from __future__ import annotations

from kernel import hookimpl
from plugins.eventlog.options import EventLogOptions, event_store


@hookimpl
def register_config(register):
    register(EventLogOptions)


@hookimpl
def register_commands(register):
    from plugins.eventlog.commands import log_command

    register(log_command)


@hookimpl
def create_event_observers(run):
    from plugins.eventlog.writer import DuckDBEventWriter

    return DuckDBEventWriter(event_store(run.config), run, defer=run.config.section(EventLogOptions).defer / 1000)


@hookimpl
def open_event_store(config):
    return event_store(config)
