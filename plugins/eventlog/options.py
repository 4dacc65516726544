"""The event log's config section, and the event log it names (``eventlog.path``, under ``RILL_HOME``
by default)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import msgspec

from kernel.config import DEFAULT_HOME, Config, Section, rill_home
from kernel.configtypes import DurationMs
from kernel.errors import ConfigError

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
        msgspec.Meta(ge=0, description="how long an explicit flush waits for a busy event log (a run's periodic "
                                       "flushes wait at most a flush interval; their segments keep the rest)"),
    ] = msgspec.field(name="eventlog.lock-timeout", default=5000)
    defer: Annotated[
        DurationMs,
        msgspec.Meta(ge=0, description="how long a run keeps its events only in its segments before its writer "
                                       "stores them in the event log too (a run that ends sooner is stored by "
                                       "the next command that reads the log, off its path)"),
    ] = msgspec.field(name="eventlog.defer", default=10_000)
    retention: Annotated[
        DurationMs,
        msgspec.Meta(ge=0, description="how long a run's segments are kept after they were ingested, so that "
                                       "`rill log rebuild` and `rill log salvage` can rebuild the runs a damaged "
                                       "log loses (0: removed once ingested)"),
    ] = msgspec.field(name="eventlog.retention", default=7 * 86_400_000)

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


def _check_directory(directory: Path, label: str) -> None:
    """Refuse a directory rill keeps its files in (named by ``label``) when it, or the nearest
    of its parents that exists, is not a directory."""
    existing = directory
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ConfigError(f"{label} is not a directory" if existing == directory and label.endswith(str(directory))
                          else f"{label}: {existing} is not a directory")


def event_store(config: Config) -> EventStore:
    """The event log of ``config``; a ``RILL_HOME`` or log directory that is a file is refused."""
    from plugins.eventlog.store import EventStore

    options = config.section(EventLogOptions)
    if "RILL_HOME" in os.environ:
        _check_directory(rill_home(), f"RILL_HOME {rill_home()}")
    path = options.file()
    _check_directory(path.parent, f"eventlog.path {path}")
    return EventStore(path, lock_timeout=options.lock_timeout / 1000, retention=options.retention / 1000)
