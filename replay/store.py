"""Access to the event store through the ``open_event_store`` hook."""

from __future__ import annotations

from typing import Any

from kernel.errors import EventLogError
from kernel.session import Session


def event_store(session: Session) -> Any:
    store = session.plugin_manager.hook.open_event_store(config=session.config)
    if store is None:
        raise EventLogError("no plugin provides an event store (is the eventlog plugin disabled?)")
    return store
