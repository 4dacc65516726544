"""The sorted input of a keyed operator in BATCH execution (Flink's ``SortingDataInput``).

A one-input keyed operator in BATCH reads its input sorted: the records are held until the
input's data ended, then handed over key by key — keys in the order of their serialized bytes
(``kernel.common.keybytes``), each key's records in timestamp order (no timestamp counts as the
smallest; ties keep their arrival order) — and after each key the operator's ``end_key`` fires
what that key has pending (Flink's batch timer service fires a key's timers when the next key
comes). Watermarks are held too: the largest goes in after the last key. So the results of a
BATCH job come key after key, in the order Flink gives them. Keys of a type whose serialized
form rill does not know (``keybytes`` refuses it) come in the order they first arrived.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from kernel.clock import MIN_LONG
from kernel.common.javavalues import pickled_bytes
from kernel.common.keybytes import key_sort_bytes

if TYPE_CHECKING:
    from kernel.streaming.operators.base import StreamOperator


class SortingDataInput:
    """Holds a keyed head's records and watermarks until its input's data ended."""

    def __init__(self, head: StreamOperator) -> None:
        self.head = head
        key = next(k for k in head.spec.keys if k is not None)
        self._sort_bytes: Callable[[Any], Any]
        try:
            self._sort_bytes = key_sort_bytes(key.key_type)
        except TypeError:
            self._sort_bytes = _arrival_order()
        self._values: list = []
        self._timestamps: list = []
        self._watermark: int | None = None

    def add(self, values: list, timestamps: list | None) -> None:
        self._values.extend(values)
        self._timestamps.extend(timestamps if timestamps is not None else [None] * len(values))

    def hold_watermark(self, timestamp: int) -> None:
        if self._watermark is None or timestamp > self._watermark:
            self._watermark = timestamp

    def end_of_data(self) -> None:
        """Hand the records to the head, key by key, then the largest watermark seen."""
        head = self.head
        for values, timestamps in self.key_runs():
            head.process_batch(values, timestamps)
            head.end_key()
        if self._watermark is not None:
            watermark, self._watermark = self._watermark, None
            head.process_watermark(watermark)

    def key_runs(self) -> Iterator[tuple[list, list | None]]:
        """The records held, as one ``(values, timestamps)`` per key, in sorted order."""
        values, timestamps = self._values, self._timestamps
        self._values, self._timestamps = [], []
        if not values:
            return
        groups: dict[Any, list[int]] = {}
        sort_bytes = self._sort_bytes
        known: dict[Any, Any] = {}  # str and int keys: their sort bytes, computed once
        for index, key in enumerate(self.head.keys_of(values)):
            kind = type(key)
            if kind is str or kind is int:
                group = known.get(key)
                if group is None:
                    group = known[key] = sort_bytes(key)
            else:
                group = sort_bytes(key)
            members = groups.get(group)
            if members is None:
                groups[group] = [index]
            else:
                members.append(index)
        timed = any(ts is not None for ts in timestamps)
        for group in sorted(groups):
            run = groups[group]
            if timed:
                run.sort(key=lambda i: MIN_LONG if timestamps[i] is None else timestamps[i])  # stable
                yield [values[i] for i in run], [timestamps[i] for i in run]
            else:
                yield [values[i] for i in run], None


def _arrival_order() -> Callable[[Any], int]:
    """For keys rill cannot serialize as Flink does: each key sorts where it first came."""
    first: dict[bytes, int] = {}

    def order(key: Any) -> int:
        return first.setdefault(pickled_bytes(key), len(first))

    return order
