"""Access to the event store through the ``open_event_store`` hook, and finding runs in it."""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from kernel.errors import EventLogError, UsageError
from kernel.lifecycle.session import Session

if TYPE_CHECKING:
    from kernel.contracts.eventstore import EventStore

NO_STORE = "no plugin provides an event store (is the eventlog plugin disabled?)"


def open_store(session: Session) -> EventStore | None:
    """The session's event store, None when no plugin provides one."""
    return session.plugin_manager.hook.open_event_store(config=session.config)


def event_store(session: Session) -> EventStore:
    store = open_store(session)
    if store is None:
        raise EventLogError(NO_STORE)
    return store


@contextmanager
def read_log(session: Session) -> Iterator[Any]:
    """A read-only connection to the event log with the registered views created."""
    from kernel.eventtables import tables_by_kind
    from replay.views import create_views

    store = event_store(session)
    if not store.exists():
        raise EventLogError(f"no event log at {store.path} (no run has been recorded there yet)")
    with store.read() as con:
        create_views(con, session.views, tables_by_kind(session.events.types()))
        yield con


@dataclass
class RunRecord:
    run_id: str
    job_name: str
    status: str
    clock: str
    seed: int
    config: dict[str, Any]
    plugins: dict[str, str]
    metadata: dict[str, Any]
    clock_start: int
    clock_end: int
    events: int

    @property
    def duration_s(self) -> float:
        return (self.clock_end - self.clock_start) / 1e9

    def at(self, seconds: float) -> int:
        """The absolute clock time (ns) ``seconds`` after the run's start."""
        return self.clock_start + int(round(seconds * 1e9))


def find_run(con: Any, ref: str) -> RunRecord:
    """A recorded run by id, unique id prefix, or ``last``: the last run executed (``rill plan``
    records runs ``planned``, which an id or prefix still finds)."""
    if not ref.strip():
        raise UsageError("give a run: its id, a unique prefix of one, or last (`rill runs` lists them)")
    columns = "run_id, job_name, status, clock, seed, config, plugins, metadata, clock_start, clock_end, events"
    last = ref in ("last", "latest")
    if last:
        rows = con.execute(f"SELECT {columns} FROM rill.runs WHERE status <> 'planned' "
                           "ORDER BY started_at DESC LIMIT 1").fetchall()
    else:
        rows = con.execute(f"SELECT {columns} FROM rill.runs WHERE starts_with(run_id, ?)", [ref]).fetchall()
    if len(rows) != 1:
        recent = [r[0] for r in con.execute(
            "SELECT run_id FROM rill.runs ORDER BY started_at DESC LIMIT 5").fetchall()]
        if last:
            problem = "no executed run (only runs planned by `rill plan`)" if recent else "no recorded run"
        else:
            problem = f"several runs start with {ref!r}" if rows else f"no recorded run {ref!r}"
        raise UsageError(f"{problem} (recent runs: {', '.join(recent) or 'none'}; `rill runs` lists them)")
    (run_id, job_name, status, clock, seed, config, plugins, metadata, start, end, events) = rows[0]
    return RunRecord(run_id, job_name, status, clock, seed, json.loads(config or "{}"), json.loads(plugins or "{}"),
                     json.loads(metadata or "{}"), start or 0, end or start or 0, events or 0)
