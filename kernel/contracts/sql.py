"""The SQL engine contract: one read-only query over recorded runs (``rill sql --engine NAME``).

An engine is registered by name (``register_sql_engines``). ``rill sql`` hands it a
:class:`SqlQuery`: the query and everything it may read — the event store, or the Parquet files
of an export; the table of every registered event type; the registered views; and a way to
export the event log as Parquet for an engine that reads only files. So an engine needs nothing
of the replay package's or of the plugin that stores the runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Protocol

if TYPE_CHECKING:
    from kernel.config import Config
    from kernel.contracts.eventstore import EventStore
    from kernel.eventtables import EventTable
    from kernel.views import ViewRegistry


@dataclass(frozen=True)
class SqlQuery:
    """One ``rill sql`` query and what answering it may read."""

    #: the SQL text, as the user gave it
    text: str
    #: a directory ``rill export`` wrote, read instead of the event log (None: the event log)
    parquet: str | None
    config: Config
    #: the table of every registered event type, by kind: an event the runs never recorded
    #: reads as an empty table with these columns
    tables: Mapping[str, EventTable]
    views: ViewRegistry
    #: the event log (None when no plugin provides one)
    store: EventStore | None
    #: ``export_log(directory)`` writes every recorded run of the event log under ``directory``
    #: in ``rill export``'s layout, without the views
    export_log: Callable[[str], None]


class SqlEngine(Protocol):
    """Runs one read-only query; a problem (bad SQL, a refused statement, an unreadable export)
    is a :class:`kernel.errors.UsageError` of one line."""

    def query(self, request: SqlQuery) -> tuple[list[str], list[tuple]]:
        """The columns and rows of ``request.text``."""
