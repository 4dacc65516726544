"""The base of every keyed state object, plain (:mod:`kernel.runtime.streaming.state`) or with
a time-to-live (:mod:`kernel.runtime.streaming.ttl`): a view of one table of the keyed state
backend under the backend's current key and the state's namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol

if TYPE_CHECKING:
    from kernel.datastream import state as api


class KeyedBackend(Protocol):
    """What a state reads of its backend (a ``KeyedStateBackend``): the key it is under."""

    current_key: Any


class KeyedState:
    """A state of the backend's current key in ``namespace`` (which its owner may move)."""

    __slots__ = ("backend", "table", "descriptor", "namespace")

    def __init__(self, backend: KeyedBackend, table: dict, descriptor: api.StateDescriptor,
                 namespace: Any = None) -> None:
        self.backend = backend
        self.table = table
        self.descriptor = descriptor
        self.namespace = namespace

    def _slot(self) -> tuple[Any, Any]:
        return self.backend.current_key, self.namespace

    def clear(self) -> None:
        self.table.pop(self._slot(), None)

    def merge(self, target: Any, sources: Iterable[Any]) -> None:
        raise TypeError(f"state {self.descriptor.name!r} cannot be merged")
