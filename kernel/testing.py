"""Helpers for tests of jobs and plugins: capture a run's events in memory."""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from kernel import hookimpl
from kernel.eventbus import EventBatch, drain_buses
from kernel.events import Event


class CapturedEvents:
    """An event observer keeping every event of one run, in sequence order."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self.status: str | None = None
        self._lock = threading.Lock()

    @property
    def events(self) -> list[Event]:
        """Every event delivered so far (waits for runs that ended to deliver the rest)."""
        drain_buses(settle=False)
        return self._events

    def events_emitted(self, batch: EventBatch) -> None:
        with self._lock:
            self._events.extend(batch.events)

    def close(self, status: str) -> None:
        self.status = status

    def of(self, *kinds: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kinds)]

    def comparable(self, exclude: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """Events as dicts without the fields named in ``exclude`` (e.g. wall-clock ones)."""
        out = []
        for event in self.events:
            data = msgspec.to_builtins(event)
            for name in exclude:
                data.pop(name, None)
            out.append(data)
        return out


class EventCapture:
    """A plugin: register it with a session to capture the events of its runs.

    ``capture.runs[run_id]`` is a :class:`CapturedEvents`; ``capture.last`` the latest run's.
    """

    def __init__(self) -> None:
        self.runs: dict[str, CapturedEvents] = {}
        self.last: CapturedEvents | None = None

    @hookimpl
    def create_event_observers(self, run: Any) -> CapturedEvents:
        captured = self.runs[run.id] = CapturedEvents()
        self.last = captured
        return captured
