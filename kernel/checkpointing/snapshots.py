"""How an operator's state becomes bytes in a checkpoint and comes back.

Snapshot: an operator adds its keyed states (:meth:`OperatorSnapshot.add_keyed`) — entries
are sorted into key groups by their key — and its operator list states
(:meth:`OperatorSnapshot.add_list`); :meth:`OperatorSnapshot.encode` turns that into the
frames of :mod:`kernel.checkpointing.format`. Restore: :class:`RestoredOperatorState` reads the
frames of the key groups a subtask owns from the handles it was assigned, and its share of
the operator list states.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Iterable

from kernel.checkpointing.format import (
    KeyGroupState,
    OperatorListState,
    OperatorStateFrame,
    StateHandle,
    StateTable,
    decode_key_group,
    decode_operator_state,
    encode,
)

Entry = tuple[Any, Any, Any]  # (key, namespace, value)


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


class OperatorSnapshot:
    """What one operator of one subtask puts into a checkpoint; ``key_group_of(key)`` is the
    key group of a key of its keyed state (None for a non-keyed operator)."""

    def __init__(self, key_group_of: Callable[[Any], int] | None) -> None:
        self._key_group_of = key_group_of
        #: key group -> (name, kind, ttl) -> entries
        self.keyed: dict[int, dict[tuple[str, str, bool], list[Entry]]] = {}
        self.lists: list[tuple[str, str, list]] = []

    def add_keyed(self, name: str, kind: str, entries: Iterable[Entry], ttl: bool = False) -> None:
        """Keyed state entries (key, namespace, value) of one state."""
        table = (name, kind, ttl)
        by_group: dict[int, list[Entry]] = {}
        key_group_of = self._key_group_of
        for entry in entries:
            group = key_group_of(entry[0])
            found = by_group.get(group)
            if found is None:
                by_group[group] = [entry]
            else:
                found.append(entry)
        keyed = self.keyed
        for group, grouped in by_group.items():
            tables = keyed.get(group)
            if tables is None:
                keyed[group] = {table: grouped}
            else:
                tables.setdefault(table, []).extend(grouped)

    def add_list(self, name: str, elements: list, mode: str = "split") -> None:
        """An operator list state (``split`` or ``union``)."""
        self.lists.append((name, mode, list(elements)))

    @property
    def empty(self) -> bool:
        return not self.keyed and not self.lists

    def encode(self) -> tuple[bytes, list[tuple[int, int, int]], tuple[int, int] | None]:
        """(frames, (key group, offset, length) per key group, (offset, length) of the
        operator state frame)."""
        parts: list[bytes] = []
        offset = 0
        key_groups = []
        for group in sorted(self.keyed):
            tables = [StateTable(name=name, kind=kind, ttl=ttl, entries=_dumps(entries))
                      for (name, kind, ttl), entries in self.keyed[group].items()]
            frame = encode(KeyGroupState(key_group=group, tables=tables))
            key_groups.append((group, offset, len(frame)))
            parts.append(frame)
            offset += len(frame)
        operator_state = None
        if self.lists:
            frame = encode(OperatorStateFrame(states=[
                OperatorListState(name=name, mode=mode, elements=_dumps(elements)) for name, mode, elements in self.lists]))
            operator_state = (offset, len(frame))
            parts.append(frame)
        return b"".join(parts), key_groups, operator_state


def read_handle(handle: StateHandle, directory: str | None) -> bytes:
    """The bytes of a state handle (inline, or its file in ``directory``)."""
    if handle.data is not None:
        return handle.data
    if directory is None or handle.file is None:
        raise ValueError("a state handle without data or file")
    with open(os.path.join(directory, handle.file), "rb") as stream:
        return stream.read()


class RestoredOperatorState:
    """The state one operator of a restored subtask gets: its key groups' entries per state
    (in key-group order) and its share of each operator list state."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, str, bool], list[Entry]] = {}
        self.lists: dict[str, list] = {}

    @classmethod
    def read(cls, handles: list[tuple[int, StateHandle]], directory: str | None, key_groups: tuple[int, int],
             subtask: int, parallelism: int, old_parallelism: int) -> RestoredOperatorState:
        """From the handles of the old subtasks (old index, handle): the key groups in
        ``key_groups`` (inclusive range); operator list states as Flink's round-robin
        repartitioner divides them (unchanged parallelism: each subtask its own)."""
        restored = cls()
        first, last = key_groups
        frames: list[tuple[int, bytes]] = []
        split: dict[str, list] = {}
        for old_subtask, handle in sorted(handles, key=lambda h: h[0]):
            data = read_handle(handle, directory)
            for group, offset, length in handle.key_groups:
                if first <= group <= last:
                    frames.append((group, data[offset:offset + length]))
            if handle.operator_state is not None:
                offset, length = handle.operator_state
                for state in decode_operator_state(data[offset:offset + length]).states:
                    elements = pickle.loads(state.elements)
                    if state.mode == "union" or parallelism == old_parallelism:
                        if state.mode == "union" or old_subtask == subtask:
                            restored.lists.setdefault(state.name, []).extend(elements)
                    else:
                        split.setdefault(state.name, []).extend(elements)
        for name, elements in split.items():
            restored.lists.setdefault(name, []).extend(elements[subtask::parallelism])
        for _, frame in sorted(frames, key=lambda f: f[0]):
            for table in decode_key_group(frame).tables:
                restored.tables.setdefault((table.name, table.kind, table.ttl), []).extend(pickle.loads(table.entries))
        return restored

    def pop_keyed(self, name: str) -> list[Entry]:
        """Take the entries of the keyed state ``name`` (an operator restores what is its own,
        its keyed state backend the rest)."""
        taken = [table for table in self.tables if table[0] == name]
        return [entry for table in taken for entry in self.tables.pop(table)]
