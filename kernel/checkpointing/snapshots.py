"""How an operator's state becomes bytes in a checkpoint and comes back.

Snapshot: an operator adds its keyed states (:meth:`OperatorSnapshot.add_keyed`) — entries
are sorted into key groups by their key — and its operator list states
(:meth:`OperatorSnapshot.add_list`); :meth:`OperatorSnapshot.encode` turns that into the
frames of :mod:`kernel.checkpointing.format`, to which :func:`add_channel_state` appends the
in-flight data of an unaligned checkpoint (it is complete only once every input delivered
the barrier). Restore: :class:`RestoredOperatorState` reads the frames of the key groups a
subtask owns from the handles it was assigned, its share of the operator list states, and
its own in-flight data.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Iterable, NamedTuple

from kernel.checkpointing.format import (
    ChannelState,
    ChannelStateFrame,
    KeyGroupState,
    OperatorListState,
    OperatorStateFrame,
    StateHandle,
    StateTable,
    decode_channel_state,
    decode_key_group,
    decode_operator_state,
    encode,
)

Entry = tuple[Any, Any, Any]  # (key, namespace, value)


class EncodedState(NamedTuple):
    """An operator subtask's frames: (key group, offset, length) per key group, (offset,
    length) of the operator state and channel state frames."""

    data: bytes
    key_groups: list[tuple[int, int, int]]
    operator_state: tuple[int, int] | None
    channel_state: tuple[int, int] | None = None


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
        groups, key_group_of = self.keyed, self._key_group_of
        for entry in entries:
            groups.setdefault(key_group_of(entry[0]), {}).setdefault(table, []).append(entry)

    def add_list(self, name: str, elements: list, mode: str = "split") -> None:
        """An operator list state: ``split`` or ``union`` (Flink's list states), or ``broadcast``
        (every subtask's full copy; a restored subtask takes one)."""
        self.lists.append((name, mode, list(elements)))

    @property
    def empty(self) -> bool:
        return not self.keyed and not self.lists

    def encode(self) -> EncodedState:
        """The frames of this snapshot."""
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
        return EncodedState(b"".join(parts), key_groups, operator_state)


def add_channel_state(encoded: EncodedState | None, channels: list[ChannelState]) -> EncodedState:
    """``encoded`` (None: the operator has no state of its own) with a frame of in-flight data."""
    if encoded is None:
        encoded = EncodedState(b"", [], None)
    frame = encode(ChannelStateFrame(channels=channels))
    return encoded._replace(data=encoded.data + frame, channel_state=(len(encoded.data), len(frame)))


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
    (in key-group order), its share of each operator list state, and the in-flight data its
    own subtask persisted (``channels``, for a head operator after an unaligned checkpoint)."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, str, bool], list[Entry]] = {}
        self.lists: dict[str, list] = {}
        self.channels: list[ChannelState] = []

    @classmethod
    def read(cls, handles: list[tuple[int, StateHandle]], directory: str | None, key_groups: tuple[int, int],
             subtask: int, parallelism: int, old_parallelism: int) -> RestoredOperatorState:
        """From the handles of the old subtasks (old index, handle): the key groups in
        ``key_groups`` (inclusive range); operator list states as Flink's round-robin
        repartitioner divides them (unchanged parallelism: each subtask its own); a broadcast
        state of new subtask ``i`` is old subtask ``i % old_parallelism``'s."""
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
                    if state.mode == "broadcast":
                        if old_subtask == subtask % old_parallelism:
                            restored.lists[state.name] = elements
                    elif state.mode == "union" or parallelism == old_parallelism:
                        if state.mode == "union" or old_subtask == subtask:
                            restored.lists.setdefault(state.name, []).extend(elements)
                    else:
                        split.setdefault(state.name, []).extend(elements)
            if handle.channel_state is not None and old_subtask == subtask:
                offset, length = handle.channel_state
                restored.channels.extend(decode_channel_state(data[offset:offset + length]).channels)
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
