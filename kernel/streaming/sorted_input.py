"""The sorted input of a keyed operator in BATCH execution (Flink's ``SortingDataInput``).

A one-input keyed operator in BATCH reads its input sorted: the records are held until the
input's data ended, then handed over key by key — keys in the order of their serialized bytes
(``kernel.common.keybytes``), each key's records in timestamp order (no timestamp counts as the
smallest; ties keep their arrival order) — and after each key the operator's ``end_key`` fires
what that key has pending (Flink's batch timer service fires a key's timers when the next key
comes). Watermarks are held too: the largest goes in after the last key. So the results of a
BATCH job come key after key, in the order Flink gives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

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
        try:
            self._sort_bytes = key_sort_bytes(key.key_type)
        except TypeError:
            self._sort_bytes = None  # keys rill cannot serialize stay in the order they came
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
        keys = self.head.keys_of(values)
        if self._sort_bytes is not None:
            groups = list(map(self._sort_bytes, keys))
        else:
            first: dict = {}
            groups = [first.setdefault(pickled_bytes(key), len(first)) for key in keys]
        times = [MIN_LONG if ts is None else ts for ts in timestamps]
        order = sorted(range(len(values)), key=lambda i: (groups[i], times[i]))
        with_timestamps = any(ts is not None for ts in timestamps)
        start = 0
        while start < len(order):
            group = groups[order[start]]
            end = start + 1
            while end < len(order) and groups[order[end]] == group:
                end += 1
            run = order[start:end]
            yield [values[i] for i in run], [timestamps[i] for i in run] if with_timestamps else None
            start = end
