"""Windows: the time, count and global windows assigners put elements into."""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from io import BytesIO
from typing import Any, Iterable

from kernel.clock import MAX_LONG
from kernel.jvm.javavalues import int32
from kernel.common.serializer import TypeSerializer


def _mod_inverse(x: int) -> int:
    """PyFlink's ``mod_inverse`` (Java's ``MathUtils``, on unbounded ints) for TimeWindow's hash."""
    inverse = x * x * x
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    return inverse


def _java_mod_inverse(x: int) -> int:
    """``TimeWindow.modInverse`` of Flink's table runtime, in Java ints."""
    inverse = int32(x * x * x)
    inverse = int32(inverse * (2 - x * inverse))
    inverse = int32(inverse * (2 - x * inverse))
    inverse = int32(inverse * (2 - x * inverse))
    return inverse


class Window(ABC):
    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window):
    """The interval ``[start, end)`` of event or processing time. Its hash is PyFlink's (so a
    set of windows iterates in PyFlink's order: which merged session keeps the state depends
    on it), computed once."""

    __slots__ = ("start", "end", "_hash")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end
        self._hash: int | None = None

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the window of ``timestamp`` (non-negative remainder: negative times work)."""
        return timestamp - (timestamp - offset + window_size) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow], callback: Any) -> None:
        """Merge overlapping (or touching) windows; ``callback.merge(to_merge, result)`` per
        merge, ``to_merge`` a set built as PyFlink builds it (its order is PyFlink's)."""
        merged: list[tuple[TimeWindow, set[TimeWindow]]] = []
        current: TimeWindow | None = None
        current_set: set[TimeWindow] = set()
        for window in sorted(windows):
            if current is None:
                current = window
                current_set.add(window)
            elif current.intersects(window):
                current = current.cover(window)
                current_set.add(window)
            else:
                merged.append((current, current_set))
                current = window
                current_set = set()
                current_set.add(window)
        if current is not None:
            merged.append((current, current_set))
        for result, sources in merged:
            if len(sources) > 1:
                callback.merge(sources, result)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeWindow) and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.start + _mod_inverse((self.end << 1) + 1))
        return self._hash

    def java_hash_code(self) -> int:
        """``hashCode()`` of the JVM's TimeWindow PyFlink's windows become in the JVM (the table
        runtime's: the same formula in Java's 32-bit ints), which orders the namespaces the JVM
        merges (:mod:`kernel.runtime.streaming.state`)."""
        return int32(self.start + _java_mod_inverse(int32((self.end << 1) + 1)))

    def __getstate__(self) -> tuple[None, dict[str, int]]:
        """Pickled as its start and end (the hash is computed again where it is read)."""
        return None, {"start": self.start, "end": self.end}

    def __setstate__(self, state: tuple[None, dict[str, int]]) -> None:
        fields = state[1]
        self.start, self.end, self._hash = fields["start"], fields["end"], None

    def __lt__(self, other: TimeWindow) -> bool:
        return (self.start, self.end) < (other.start, other.end)

    def __repr__(self) -> str:
        return f"TimeWindow(start={self.start}, end={self.end})"


class CountWindow(Window):
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def max_timestamp(self) -> int:
        return MAX_LONG

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountWindow) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("count", self.id))

    def __lt__(self, other: CountWindow) -> bool:
        return self.id < other.id

    def __repr__(self) -> str:
        return f"CountWindow(id={self.id})"


class GlobalWindow(Window):
    _instance: GlobalWindow | None = None

    @staticmethod
    def get() -> GlobalWindow:
        if GlobalWindow._instance is None:
            GlobalWindow._instance = GlobalWindow()
        return GlobalWindow._instance

    def max_timestamp(self) -> int:
        return MAX_LONG

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __lt__(self, other: GlobalWindow) -> bool:
        return False

    def __repr__(self) -> str:
        return "GlobalWindow"


class TimeWindowSerializer(TypeSerializer[TimeWindow]):
    """A TimeWindow as two big-endian longs, start and end (PyFlink's TimeWindowCoder)."""

    def serialize(self, element: TimeWindow, stream: BytesIO) -> None:
        stream.write(struct.pack(">qq", element.start, element.end))

    def deserialize(self, stream: BytesIO) -> TimeWindow:
        start, end = struct.unpack(">qq", stream.read(16))
        return TimeWindow(start, end)


class CountWindowSerializer(TypeSerializer[CountWindow]):
    """A CountWindow as its id, a big-endian long (PyFlink's CountWindowCoder)."""

    def serialize(self, element: CountWindow, stream: BytesIO) -> None:
        stream.write(struct.pack(">q", element.id))

    def deserialize(self, stream: BytesIO) -> CountWindow:
        return CountWindow(struct.unpack(">q", stream.read(8))[0])


class GlobalWindowSerializer(TypeSerializer[GlobalWindow]):
    """The GlobalWindow as one zero byte (PyFlink's GlobalWindowCoder)."""

    def serialize(self, element: GlobalWindow, stream: BytesIO) -> None:
        stream.write(b"\x00")

    def deserialize(self, stream: BytesIO) -> GlobalWindow:
        stream.read(1)
        return GlobalWindow.get()
