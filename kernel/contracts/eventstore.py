"""The event store contract: where recorded runs are read back from (the ``eventlog``
concern's product, :func:`~kernel.hookspecs.open_event_store`).

Writing is the business of the store's event observer (``create_event_observers``); readers —
``rill runs``, ``rill sql``, replay — only need a read-only connection.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol


class EventStore(Protocol):
    """Recorded runs, as tables ``runs``, ``events`` and ``ev_<kind>`` (:mod:`kernel.eventtables`)."""

    #: where the runs are stored (named in messages)
    path: Path

    def exists(self) -> bool:
        """Whether a run has been recorded, once this process's runs are stored."""

    def read(self) -> AbstractContextManager[Any]:
        """A read-only DuckDB connection to the recorded runs while the context lasts, schema
        ``rill`` first on its search path; raises :class:`kernel.errors.EventLogError` when
        nothing has been recorded or the store cannot be read."""
