"""Broadcast state: the operator state of one operator instance, on the heap.

Flink keeps broadcast state as operator state of mode BROADCAST: per parallel instance, one map
per state name (several names allowed), always on the heap, each instance checkpointing its
full copy. Here an :class:`OperatorStateBackend` holds them as plain dicts,
``broadcast_states[name] -> {key: value}``: what a checkpoint of the subtask carries
(:meth:`OperatorStateBackend.snapshot`) and what a restore replaces
(:meth:`OperatorStateBackend.restore`).

The state objects user code gets carry PyFlink's names (its process-mode runtime's), so that
misuse fails as in PyFlink: ``put`` on the read-only view raises
``AttributeError: 'SynchronousReadOnlyBroadcastRuntimeState' object has no attribute 'put'``.
"""

from __future__ import annotations

import copy
from typing import Any, Iterator

from kernel.datastream import state as api


class SynchronousReadOnlyBroadcastRuntimeState(api.ReadOnlyBroadcastState):
    """The read-only view the non-broadcast side gets. As in PyFlink it can ``clear`` the
    state (``clear`` belongs to every State), a key mapped to None is not "contained", and
    ``items``/``keys``/``values`` are iterators (over the entries when called)."""

    __slots__ = ("_name", "_entries")

    def __init__(self, name: str, entries: dict) -> None:
        self._name = name
        self._entries = entries

    def get(self, key: Any) -> Any:
        return self._entries.get(key)

    def contains(self, key: Any) -> bool:
        return self._entries.get(key) is not None

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._entries.items()))

    def keys(self) -> Iterator[Any]:
        return iter(list(self._entries))

    def values(self) -> Iterator[Any]:
        return iter(list(self._entries.values()))

    def is_empty(self) -> bool:
        return not self._entries

    def clear(self) -> None:
        self._entries.clear()


class SynchronousBroadcastRuntimeState(SynchronousReadOnlyBroadcastRuntimeState, api.BroadcastState):
    """The read-write state the broadcast side gets. ``put_all`` takes a dict or, as PyFlink's
    process mode does, an iterable of (key, value) pairs."""

    __slots__ = ()

    def put(self, key: Any, value: Any) -> None:
        self._entries[key] = value

    def put_all(self, dict_value: Any) -> None:
        self._entries.update(dict_value)

    def remove(self, key: Any) -> None:
        self._entries.pop(key, None)

    def to_read_only_broadcast_state(self) -> SynchronousReadOnlyBroadcastRuntimeState:
        return SynchronousReadOnlyBroadcastRuntimeState(self._name, self._entries)


class OperatorStateBackend(api.OperatorStateStore):
    """The operator state of one operator instance (Flink's DefaultOperatorStateBackend):
    broadcast states, by name. A descriptor's state is created on first use (PyFlink does not
    restrict it to the descriptors given to ``broadcast``); the same name with other types is
    refused as PyFlink refuses it."""

    def __init__(self) -> None:
        #: name -> entries, per parallel instance: what a snapshot carries
        self.broadcast_states: dict[str, dict] = {}
        self._states: dict[str, SynchronousBroadcastRuntimeState] = {}
        self._types: dict[str, Any] = {}

    def get_broadcast_state(self, state_descriptor: api.MapStateDescriptor) -> SynchronousBroadcastRuntimeState:
        name = state_descriptor.name
        state = self._states.get(name)
        if state is None:
            entries = self.broadcast_states.setdefault(name, {})
            state = self._states[name] = SynchronousBroadcastRuntimeState(name, entries)
            self._types[name] = state_descriptor.type_info
        elif self._types[name] != state_descriptor.type_info:
            raise Exception(f"State name corrupted: {name}")
        return state

    def snapshot(self) -> dict[str, dict]:
        """A copy of every broadcast state of this instance (later changes do not reach it)."""
        return copy.deepcopy(self.broadcast_states)

    def restore(self, broadcast_states: dict[str, dict]) -> None:
        """Replace the entries of every broadcast state with ``broadcast_states`` (a snapshot of
        this or another instance); states it does not name end up empty. State objects already
        handed out see the restored entries."""
        for name in self.broadcast_states.keys() - broadcast_states.keys():
            self.broadcast_states[name].clear()
        for name, entries in copy.deepcopy(broadcast_states).items():
            table = self.broadcast_states.setdefault(name, {})
            table.clear()
            table.update(entries)
