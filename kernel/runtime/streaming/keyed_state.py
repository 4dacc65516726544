"""The base of every keyed state object, plain (:mod:`kernel.runtime.streaming.state`) or with
a time-to-live (:mod:`kernel.runtime.streaming.ttl`): a view of one table of the keyed state
backend under the backend's current key and the state's namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol

if TYPE_CHECKING:
    from kernel.datastream import state as api


class KeyedBackend(Protocol):
    """What a state reads of its backend (a ``KeyedStateBackend``): the key it is under, and
    whether a pending snapshot's copy-on-write view shares its tables (then :meth:`own` gives
    a value safe to change in place)."""

    current_key: Any
    shared_views: Any

    def own(self, table: dict, slot: tuple[Any, Any], value: Any, kept: bool = True) -> Any: ...


class KeyedState:
    """A state of the backend's current key in ``namespace`` (which its owner may move). A
    value it changes in place or hands out comes through :meth:`_owned` (copy on write while a
    snapshot's view shares it)."""

    __slots__ = ("backend", "table", "descriptor", "namespace")

    def __init__(self, backend: KeyedBackend, table: dict, descriptor: api.StateDescriptor,
                 namespace: Any = None) -> None:
        self.backend = backend
        self.table = table
        self.descriptor = descriptor
        self.namespace = namespace

    def _slot(self) -> tuple[Any, Any]:
        return self.backend.current_key, self.namespace

    def _owned(self, slot: tuple[Any, Any]) -> Any:
        """The value of ``slot`` (None when there is none), safe to change in place."""
        value = self.table.get(slot)
        if value is not None and self.backend.shared_views:
            return self.backend.own(self.table, slot, value)
        return value

    def _taken(self, slot: tuple[Any, Any]) -> Any:
        """Take the value of ``slot`` out of the table (None when there is none), to move it
        elsewhere: safe to change in place."""
        value = self.table.pop(slot, None)
        if value is not None and self.backend.shared_views:
            return self.backend.own(self.table, slot, value, kept=False)
        return value

    def clear(self) -> None:
        self.table.pop(self._slot(), None)

    def merge(self, target: Any, sources: Iterable[Any]) -> None:
        raise TypeError(f"state {self.descriptor.name!r} cannot be merged")
