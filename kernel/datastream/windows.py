"""Windows: the time, count and global windows assigners put elements into."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Iterable

from kernel.clock import MAX_LONG


class Window(ABC):
    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window):
    """The interval ``[start, end)`` of event or processing time."""

    __slots__ = ("start", "end")

    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = end

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
        """Merge overlapping (or touching) windows; ``callback.merge(to_merge, result)`` per merge."""
        ordered = sorted(windows)
        merged: list[tuple[TimeWindow, set[TimeWindow]]] = []
        current: tuple[TimeWindow, set[TimeWindow]] | None = None
        for window in ordered:
            if current is None:
                current = (window, {window})
            elif current[0].intersects(window):
                current = (current[0].cover(window), current[1] | {window})
            else:
                merged.append(current)
                current = (window, {window})
        if current is not None:
            merged.append(current)
        for result, sources in merged:
            if len(sources) > 1:
                callback.merge(sources, result)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeWindow) and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return hash((self.start, self.end))

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
