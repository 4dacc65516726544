"""The SQL engine contract: one read-only query over recorded runs (``rill sql --engine NAME``).

An engine is registered by name (``register_sql_engines``). ``rill sql`` hands it a
:class:`SqlQuery`: the query and everything it may read — the event store, or the Parquet files
of an export; the table of every registered event type; the registered views; a way to export
the event log as Parquet for an engine that reads only files, and the check of an export's
files; the query's bounds (:mod:`kernel.sqlbounds`) and where its rows go. So an engine needs
nothing of the replay package's or of the plugin that stores the runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from kernel.config import Config
    from kernel.sqlbounds import QueryBounds
    from kernel.contracts.eventstore import EventStore
    from kernel.eventtables import EventTable
    from kernel.views import ViewRegistry


@dataclass(frozen=True)
class SqlQuery:
    """One ``rill sql`` query and what answering it may read."""

    #: the SQL text, as the user gave it
    text: str
    #: a directory ``rill export`` wrote, read instead of the event log (None: the event log): a
    #: local path (or ``file:`` URI), or a URI of another file system an engine may read
    parquet: str | None
    config: Config
    #: the table of every registered event type, by kind: an event the runs never recorded
    #: reads as an empty table with these columns
    tables: Mapping[str, EventTable]
    views: ViewRegistry
    #: the event log (None when no plugin provides one)
    store: EventStore | None
    #: ``export_log(directory)`` writes every recorded run of the event log under ``directory``
    #: in ``rill export``'s layout, without the views (within ``bounds``)
    export_log: Callable[[str], None]
    #: ``export_files(directory)``: table name (``runs``, ``ev_<kind>``) -> the Parquet files of a
    #: local export, each a regular file inside it whose schema is the table's; anything else is a
    #: :class:`kernel.errors.UsageError` naming the file
    export_files: Callable[[str], Mapping[str, Sequence[str]]]
    #: how long the query may run, the memory its engine may use, the rows it may print
    bounds: QueryBounds
    #: where the rows go
    result: ResultWriter


class ResultWriter(Protocol):
    """Takes a query's rows as the engine fetches them, chunk by chunk."""

    #: the rows it takes at most (None: all); an engine may fetch one more, to tell there are more
    wanted: int | None

    def columns(self, names: list[str]) -> None:
        """The result's column names, before any row."""

    def rows(self, rows: list[tuple]) -> bool:
        """Take a chunk of rows; False: no more are wanted (the engine stops fetching)."""


class SqlEngine(Protocol):
    """Runs one read-only query within its bounds; a problem (bad SQL, a refused statement, an
    unreadable export) is a :class:`kernel.errors.UsageError` of one line, a bound hit a
    :class:`kernel.errors.BoundExceeded`."""

    def query(self, request: SqlQuery) -> None:
        """Hand the columns and rows of ``request.text`` to ``request.result``."""


def local_path(directory: str) -> str | None:
    """The local path ``directory`` names (a path, or a ``file:`` URI), None for a URI of
    another file system (``hdfs://nn/dir``)."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", directory)
    if match is None:
        return directory
    if match.group(1).lower() != "file":
        return None
    path = directory[match.end():]
    if path.startswith("//"):  # file://host/path: only this machine's
        host, _, tail = path[2:].partition("/")
        return "/" + tail if host in ("", "localhost") else None
    return path
