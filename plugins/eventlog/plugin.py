"""Plugin ``eventlog.duckdb``: every event of every run lands in one DuckDB file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from kernel import hookimpl
from kernel.config import DEFAULT_HOME, Config, Section, rill_home
from kernel.configtypes import DurationMs

if TYPE_CHECKING:
    from plugins.eventlog.store import EventStore

DEFAULT_FILE = "rill.duckdb"


class EventLogOptions(Section):
    path: Annotated[
        str,
        msgspec.Meta(description="DuckDB file of the event log (default: $RILL_HOME/rill.duckdb, RILL_HOME=./.rill)"),
    ] = msgspec.field(name="eventlog.path", default="")
    lock_timeout: Annotated[
        DurationMs,
        msgspec.Meta(ge=0, description="how long a run waits for a busy event log before it spools its events"),
    ] = msgspec.field(name="eventlog.lock-timeout", default=5000)
    defer: Annotated[
        DurationMs,
        msgspec.Meta(ge=0, description="how long a run keeps its events in a spool before it writes the event log "
                                       "itself (a run that ends sooner is stored after its end, off its path)"),
    ] = msgspec.field(name="eventlog.defer", default=10_000)

    def file(self) -> Path:
        if self.path:
            return Path(self.path).expanduser()
        return rill_home() / DEFAULT_FILE

    def resolved(self) -> dict[str, tuple[Any, str]]:
        absolute = os.path.abspath(self.file())
        if self.path:
            return {} if absolute == self.path else {"eventlog.path": (absolute, "made absolute")}
        home = "$RILL_HOME" if "RILL_HOME" in os.environ else f"./{DEFAULT_HOME}"
        return {"eventlog.path": (absolute, f"default: {home}/{DEFAULT_FILE}")}


def log_path(config: Config) -> Path:
    return config.section(EventLogOptions).file()


def event_store(config: Config) -> EventStore:
    from plugins.eventlog.store import EventStore

    return EventStore(log_path(config), lock_timeout=config.section(EventLogOptions).lock_timeout / 1000)


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
