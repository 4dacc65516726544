"""How an operator's state becomes bytes in a checkpoint and comes back.

Snapshot, as Flink's heap backend takes it: in the synchronous part an operator takes
copy-on-write views of its keyed state (:mod:`kernel.runtime.streaming.copy_on_write`) and defers
making their entries (:meth:`OperatorSnapshot.defer`), and adds its operator list states
(:meth:`OperatorSnapshot.add_list`), which :meth:`OperatorSnapshot.freeze` encodes before the
task goes on. In the asynchronous part, off the task's thread, :meth:`OperatorSnapshot.encode`
makes the keyed entries (:meth:`OperatorSnapshot.add_keyed`: sorted into key groups by their
key) and turns everything into the frames of :mod:`kernel.runtime.checkpointing.format`, to which
:func:`add_channel_state` appends the in-flight data of an unaligned checkpoint (it is complete
only once every input delivered the barrier); then the task releases the views
(:meth:`OperatorSnapshot.release`). Restore: :class:`RestoredOperatorState` reads the frames of the key groups a
subtask owns from the handles it was assigned, its share of the operator list states, and
its own in-flight data.
"""

from __future__ import annotations

import contextlib
import gc
import io
import pickle
import threading
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from kernel.runtime.checkpointing.format import (
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
    moved_module,
)
from kernel.runtime.checkpointing.pointers import read_state_file

Entry = tuple[Any, Any, Any]  # (key, namespace, value)


class EncodedState(NamedTuple):
    """An operator subtask's frames: (key group, offset, length) per key group, (offset,
    length) of the operator state and channel state frames."""

    data: bytes
    key_groups: list[tuple[int, int, int]]
    operator_state: tuple[int, int] | None
    channel_state: tuple[int, int] | None = None


_pauses = 0
_pauses_lock = threading.Lock()
_collector_was_enabled = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while state is snapshotted or restored: that
    allocates an object or more per entry (none in cycles, reference counting frees them) and
    would otherwise set off collections that scan the whole heap of state. Pauses nest and
    overlap across threads; the last one to end resumes the collector if it was running."""
    global _pauses, _collector_was_enabled
    with _pauses_lock:
        if _pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pauses_lock:
            _pauses -= 1
            if _pauses == 0 and _collector_was_enabled:
                gc.enable()


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(moved_module(module), name)


def loads(data: bytes) -> Any:
    """A pickled value of a snapshot, rill's classes found where they are now."""
    return _Unpickler(io.BytesIO(data)).load()


class OperatorSnapshot:
    """What one operator of one subtask puts into a checkpoint; ``key_group_of(key)`` is the
    key group of a key of its keyed state (None for a non-keyed operator)."""

    def __init__(self, key_group_of: Callable[[Any], int] | None) -> None:
        self._key_group_of = key_group_of
        #: key group -> (name, kind, ttl) -> entries
        self.keyed: dict[int, dict[tuple[str, str, bool], list[Entry]]] = {}
        self.lists: list[tuple[str, str, list]] = []
        self._deferred: list[Callable[[OperatorSnapshot], None]] = []
        self._releases: list[Callable[[], None]] = []
        self._frozen_lists: list[OperatorListState] | None = None

    def defer(self, add: Callable[[OperatorSnapshot], None]) -> None:
        """``add(snapshot)`` adds keyed entries in the asynchronous part (:meth:`encode`), in
        another thread: it reads only views the synchronous part took (and nothing the task
        changes meanwhile)."""
        self._deferred.append(add)

    def on_release(self, release: Callable[[], None]) -> None:
        """``release()`` runs in the task's thread once the snapshot is encoded or dropped."""
        self._releases.append(release)

    def release(self) -> None:
        """The asynchronous part is done (or will never run): the views may go."""
        releases, self._releases = self._releases, []
        for release in releases:
            release()

    def add_keyed(self, name: str, kind: str, entries: Iterable[Entry], ttl: bool = False) -> None:
        """Keyed state entries (key, namespace, value) of one state."""
        by_group: dict[int, list[Entry]] = {}
        key_group_of = self._key_group_of
        for entry in entries:
            group = key_group_of(entry[0])
            found = by_group.get(group)
            if found is None:
                by_group[group] = [entry]
            else:
                found.append(entry)
        self.add_keyed_groups(name, kind, by_group, ttl)

    def add_keyed_groups(self, name: str, kind: str, by_group: dict[int, list[Entry]], ttl: bool = False) -> None:
        """Keyed state entries of one state already sorted into key groups (by
        ``key_group_of``, e.g. by an operator building several states' entries in one pass)."""
        table = (name, kind, ttl)
        keyed = self.keyed
        for group, grouped in by_group.items():
            tables = keyed.get(group)
            if tables is None:
                keyed[group] = {table: grouped}
            else:
                tables.setdefault(table, []).extend(grouped)

    @property
    def key_group_of(self) -> Callable[[Any], int] | None:
        return self._key_group_of

    def add_list(self, name: str, elements: list, mode: str = "split") -> None:
        """An operator list state: ``split`` or ``union`` (Flink's list states), or ``broadcast``
        (every subtask's full copy; a restored subtask takes one)."""
        self.lists.append((name, mode, list(elements)))

    @property
    def empty(self) -> bool:
        return not self.keyed and not self.lists and not self._deferred

    def freeze(self) -> None:
        """The synchronous part's end: encode the operator list states (their elements may be
        objects the operator goes on changing); raises what pickling them raises."""
        self._frozen_lists = [OperatorListState(name=name, mode=mode, elements=_dumps(elements))
                              for name, mode, elements in self.lists]

    def encode(self) -> EncodedState:
        """The frames of this snapshot (the asynchronous part; after :meth:`freeze`)."""
        deferred, self._deferred = self._deferred, []
        for add in deferred:
            add(self)
        if self._frozen_lists is None:
            self.freeze()
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
        if self._frozen_lists:
            frame = encode(OperatorStateFrame(states=self._frozen_lists))
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
    """The bytes of a state handle (inline, or its file in ``directory``, read as
    :func:`kernel.runtime.checkpointing.pointers.read_state_file` reads it)."""
    if handle.data is not None:
        return handle.data
    if directory is None or handle.file is None:
        raise ValueError("a state handle without data or file")
    return read_state_file(directory, handle)


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
        ``key_groups`` (inclusive range), the operator list states as Flink's
        ``RoundRobinOperatorStateRepartitioner`` divides them (:func:`repartition_lists`; every
        list state the old subtasks had is in ``lists``, empty when this subtask's share is
        nothing), and — same index only — the in-flight data of an unaligned checkpoint."""
        restored = cls()
        first, last = key_groups
        frames: list[tuple[int, bytes]] = []
        lists: dict[tuple[str, str], dict[int, list]] = {}
        for old_subtask, handle in sorted(handles, key=lambda h: h[0]):
            data = read_handle(handle, directory)
            for group, offset, length in handle.key_groups:
                if first <= group <= last:
                    frames.append((group, data[offset:offset + length]))
            if handle.operator_state is not None:
                offset, length = handle.operator_state
                for state in decode_operator_state(data[offset:offset + length]).states:
                    lists.setdefault((state.name, state.mode), {})[old_subtask] = loads(state.elements)
            if handle.channel_state is not None and old_subtask == subtask:
                offset, length = handle.channel_state
                restored.channels.extend(decode_channel_state(data[offset:offset + length]).channels)
        restored.lists = repartition_lists(lists, subtask, parallelism, old_parallelism)
        for _, frame in sorted(frames, key=lambda f: f[0]):
            for table in decode_key_group(frame).tables:
                restored.tables.setdefault((table.name, table.kind, table.ttl), []).extend(loads(table.entries))
        return restored

    def pop_keyed(self, name: str) -> list[Entry]:
        """Take the entries of the keyed state ``name`` (an operator restores what is its own,
        its keyed state backend the rest)."""
        taken = [table for table in self.tables if table[0] == name]
        return [entry for table in taken for entry in self.tables.pop(table)]


def repartition_lists(lists: dict[tuple[str, str], dict[int, list]], subtask: int, parallelism: int,
                      old_parallelism: int) -> dict[str, list]:
    """Subtask ``subtask``'s share of operator list states (name, mode) -> old subtask ->
    elements, as Flink's ``RoundRobinOperatorStateRepartitioner``: ``union`` states go whole to
    every subtask; ``broadcast`` ones (every old subtask holds a full copy) as the copy of old
    subtask ``subtask % old_parallelism``; ``split`` ones, at an unchanged parallelism, each to
    its own subtask, else all old subtasks' elements in order, cut into ``parallelism``
    contiguous shares whose sizes differ by one at most — the larger shares first, and for each
    further state (by name) starting where the previous one's larger shares ended."""
    shares: dict[str, list] = {}
    start = 0
    for (name, mode), by_subtask in sorted(lists.items()):
        share = shares.setdefault(name, [])
        if mode == "union":
            for old in sorted(by_subtask):
                share.extend(by_subtask[old])
        elif mode == "broadcast":
            share.extend(by_subtask.get(subtask % old_parallelism, ()))
        elif parallelism == old_parallelism:
            share.extend(by_subtask.get(subtask, ()))
        else:
            elements = [element for old in sorted(by_subtask) for element in by_subtask[old]]
            cut, start = _split_shares(len(elements), parallelism, start)
            begin, end = cut[subtask]
            share.extend(elements[begin:end])
    return shares


def _split_shares(total: int, parallelism: int, start: int) -> tuple[list[tuple[int, int]], int]:
    """Flink's ``repartitionSplitState`` for one state: (begin, end) of each new subtask's share
    of ``total`` elements, and where the next state's distribution starts."""
    base, remainder = divmod(total, parallelism)
    cut: list[tuple[int, int]] = [(0, 0)] * parallelism
    position, next_start = 0, start
    for i in range(parallelism):
        index = (i + start) % parallelism
        count = base
        if remainder > 0:
            count += 1
            remainder -= 1
        elif remainder == 0:
            next_start = index
            remainder -= 1
        cut[index] = (position, position + count)
        position += count
    return cut, next_start
