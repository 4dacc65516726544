"""Plugin ``eventlog.duckdb``: every event of every run lands in one DuckDB file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

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

    def file(self) -> Path:
        if self.path:
            return Path(self.path).expanduser()
        return Path(os.environ.get("RILL_HOME", DEFAULT_HOME)).expanduser() / DEFAULT_FILE

    def resolved(self) -> dict[str, tuple[Any, str]]:
        absolute = os.path.abspath(self.file())
        if self.path:
            return {} if absolute == self.path else {"eventlog.path": (absolute, "made absolute")}
        home = "$RILL_HOME" if "RILL_HOME" in os.environ else f"./{DEFAULT_HOME}"
        return {"eventlog.path": (absolute, f"default: {home}/{DEFAULT_FILE}")}


def log_path(config: Config) -> Path:
    return config.section(EventLogOptions).file()


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
