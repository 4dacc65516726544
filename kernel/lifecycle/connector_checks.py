"""What a job's connectors need before its run starts: the wall clock (a source or sink that
talks to a broker over the network declares ``realtime_only``, the reason) and their client
library (``client_module``, with the extra that installs it)."""

from __future__ import annotations

import importlib
from typing import Any

from kernel.errors import UsageError

#: the client module of each connector library, and how to install it
CLIENTS = {"confluent_kafka": "confluent-kafka (pip install 'rill[kafka]')"}


def check_connectors(nodes: list[Any], clock: str) -> None:
    """Refuse, in one line, a job whose connectors cannot run under ``clock`` or whose client
    library is not installed."""
    for node in nodes:
        connector = node.operator.function if node.operator is not None else None
        reason = getattr(connector, "realtime_only", None)
        if not isinstance(reason, str):
            continue
        name = connector.describe() if hasattr(connector, "describe") else type(connector).__name__
        if clock == "simulated":
            raise UsageError(f"{node.name!r} ({name}) needs rill.clock=realtime: {reason}; a simulated run's "
                             "virtual time cannot wait for it")
        module = getattr(connector, "client_module", None)
        if module is not None:
            try:
                importlib.import_module(module)
            except ImportError:
                raise UsageError(f"{node.name!r} ({name}) needs {CLIENTS.get(module, module)}") from None
