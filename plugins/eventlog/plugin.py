"""Plugin ``eventlog.duckdb``: every event of every run lands in one DuckDB file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import msgspec

from kernel import hookimpl
from kernel.config import Config, Section

DEFAULT_HOME = ".rill"
DEFAULT_FILE = "rill.duckdb"


class EventLogOptions(Section):
    path: Annotated[
        str,
        msgspec.Meta(description="DuckDB file of the event log (default: $RILL_HOME/rill.duckdb, RILL_HOME=./.rill)"),
    ] = msgspec.field(name="eventlog.path", default="")


def log_path(config: Config) -> Path:
    configured = config.section(EventLogOptions).path
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("RILL_HOME", DEFAULT_HOME)).expanduser() / DEFAULT_FILE


@hookimpl
def register_config(register):
    register(EventLogOptions)


@hookimpl
def create_event_observers(run):
    from plugins.eventlog.store import EventStore
    from plugins.eventlog.writer import DuckDBEventWriter

    return DuckDBEventWriter(EventStore(log_path(run.config)), run)


@hookimpl
def open_event_store(config):
    from plugins.eventlog.store import EventStore

    return EventStore(log_path(config))
